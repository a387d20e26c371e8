// Adversarial round 3, class 10 (`cfh policy explain` disagreeing with what a run decides):
// explain is how an operator vets a profile ("which rule decides, runs nothing"); a call it
// says is denied must not run in a real run of the same profile. The comparison: explain's
// decision and rule for a call, against the permission_decision a real run records for the
// same call (same profile, same arguments, no approvals given).
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CFH_MAIN, baseEnv, readEvents, useScratch } from './helpers.js';
import { profile, script, scriptedRun } from './adv-round3-support.js';

const scratch = useScratch('adv3-explain');

async function explain(
  p: string,
  tool: string,
  args: unknown,
): Promise<{ decision: string; rule: string }> {
  const r = await execa(
    process.execPath,
    [CFH_MAIN, 'policy', 'explain', '--profile', p, '--json', tool, JSON.stringify(args)],
    { reject: false, env: baseEnv(), extendEnv: false },
  );
  const out = JSON.parse(r.stdout) as { verdict: { decision: string; rule: string } };
  return { decision: out.verdict.decision, rule: out.verdict.rule };
}

describe('class 10: explain and a run decide the same', () => {
  it('delegate, on a profile with a child profile', async () => {
    const p = await profile(scratch, {
      tools: ['read_file', 'list_dir'],
      children: { helper: { tools: ['read_file'] } },
    });
    const call = { profile: 'helper', task: 'list the files' };
    const said = await explain(p, 'delegate', call);
    const s = await script(scratch, [[{ name: 'delegate', input: call }]]);
    const { dir } = await scriptedRun(scratch, { profile: p, script: s });
    const decided = (await readEvents(dir)).find(
      (e) => e.type === 'permission_decision' && e.data.tool_name === 'delegate',
    );
    expect(decided?.data.decision, 'the run decided no delegate call').toBeDefined();
    expect(said).toEqual({ decision: decided?.data.decision, rule: decided?.data.policy_rule });
  });
});
