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

/** The decision a run makes of one scripted call, and what explain says of it. */
async function bothWays(
  fields: Record<string, unknown>,
  tool: string,
  call: unknown,
  extra: readonly string[] = [],
): Promise<{
  said: { decision: string; rule: string };
  decided: { decision: string; rule: string } | undefined;
}> {
  const p = await profile(scratch, fields);
  const said = await explain(p, tool, call);
  const s = await script(scratch, [[{ name: tool, input: call }]]);
  // A run that refuses its profile (exit 125, no run) decides every call: none runs.
  const run = await scriptedRun(scratch, { profile: p, script: s, extra }).catch(() => undefined);
  // scriptedRun answers a run refused at planning (exit 125) with no directory.
  if (run === undefined || run.dir === '')
    return { said, decided: { decision: 'deny', rule: 'run refused' } };
  const { dir } = run;
  const e = (await readEvents(dir)).find(
    (x) => x.type === 'permission_decision' && x.data.tool_name === tool,
  );
  const rejected = (await readEvents(dir)).find((x) => x.type === 'tool_rejected');
  return {
    said,
    decided:
      e === undefined
        ? rejected === undefined
          ? undefined
          : { decision: 'deny', rule: String(rejected.data.reason) }
        : { decision: String(e.data.decision), rule: String(e.data.policy_rule) },
  };
}

describe('class 10, second pass: the one surface builder against explain', () => {
  it.each([
    [
      'delegate with no depth left (maxDelegationDepth 0)',
      {
        tools: ['read_file', 'list_dir'],
        budgets: { maxDelegationDepth: 0 },
        children: { helper: { tools: ['read_file'] } },
      },
      'delegate',
      { profile: 'helper', task: 'list the files' },
    ],
    [
      'delegate naming a child the profile does not list',
      { tools: ['read_file'], children: { helper: { tools: ['read_file'] } } },
      'delegate',
      { profile: 'nobody', task: 'x' },
    ],
    [
      'a built-in the profile does not allow',
      { tools: ['read_file'] },
      'write_file',
      { path: 'x.txt', content: 'x' },
    ],
  ])('%s', async (_what, fields, tool, call) => {
    const { said, decided } = await bothWays(fields, tool, call);
    expect(decided, 'the run decided nothing of the call').toBeDefined();
    expect(said.decision).toBe(decided?.decision);
  });
});
