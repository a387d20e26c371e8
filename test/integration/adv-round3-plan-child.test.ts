// Adversarial round 3, second pass, class 1 against the carried label (src/cfc/carried.ts,
// everySource): a planning run without CFC "may have shown its model anything it could
// read. Every source of its recorded plan then counts". Its children's sources are not in
// the parent's recorded CFC plan: a planning run (`--cfc disabled`) that delegates to a
// child profile with a `secret` mount of its own hands the executing run (enforcing) a plan
// with the secret in it and a label without it. The oracle: the executing run does not
// write the secret into its workspace, which is not cleared for it.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cfh, onlyRunDir, useScratch } from './helpers.js';
import {
  NODE,
  apiCfh,
  printer,
  profile,
  script,
  scriptedRun,
  secretDir,
} from './adv-round3-support.js';

const scratch = useScratch('adv3-plan-child');
const SECRET = 'CHILD-VAULT-8Hs2Lq4N';

describe('--from-plan after a planning run without CFC that delegated', () => {
  it.each(['enforce-explicit', 'enforce-strict'])(
    "%s: a secret the planning run's child read is not written by the run that executes the plan",
    async (mode) => {
      const secrets = await secretDir(scratch, { key: SECRET });
      const p = await profile(scratch, {
        tools: ['read_file', 'list_dir', 'write_file'],
        workspace: { mode: 'rw', label: { integrity: ['repo'] } },
        cfc: { mode, modelClearance: [] },
        children: {
          keeper: {
            tools: ['read_file'],
            mounts: [
              {
                source: secrets,
                target: '/secrets',
                mode: 'ro',
                label: { confidentiality: ['secret'] },
              },
            ],
            cfc: { mode, modelClearance: ['secret'] },
            ceiling: { confidentiality: ['secret'] },
          },
        },
      });
      const repo = await scratch.sampleRepo();
      const art = scratch.path(`art-${mode}`);
      const found = (req: string): string => /CHILD-VAULT-[A-Za-z0-9]+/.exec(req)?.[0] ?? 'none';
      const plan = await apiCfh(
        scratch,
        [
          'sandbox',
          'run',
          '--profile',
          p,
          '--workspace',
          repo,
          '--artifact-root',
          art,
          '--prompt',
          'Plan the deploy',
          '--plan',
          '--cfc',
          'disabled',
          '--non-interactive',
        ],
        [
          { calls: [{ name: 'delegate', input: { profile: 'keeper', task: 'read the key' } }] },
          { calls: [{ name: 'read_file', input: { path: '/secrets/key' } }] },
          { text: (req) => `the key is ${found(req)}` },
          { text: (req) => `Plan: configure the deploy with ${found(req)}` },
        ],
      );
      expect(plan.r.exitCode, plan.r.stderr).toBe(0);
      expect(plan.bodies.join('\n'), 'the planning model saw the key').toContain(SECRET);
      const planId = path.basename(await onlyRunDir(art));
      const exec = await apiCfh(
        scratch,
        [
          'sandbox',
          'run',
          '--profile',
          p,
          '--workspace',
          repo,
          '--artifact-root',
          art,
          '--prompt',
          'Do it',
          '--from-plan',
          planId,
          '--approve',
          'from_plan',
          '--non-interactive',
        ],
        [
          {
            calls: (req) => [
              { name: 'write_file', input: { path: 'deploy.env', content: found(req) } },
            ],
          },
          { text: 'done' },
        ],
      );
      // Refused before anything exists: the plan's context holds what the executing model is
      // not cleared for (context_uncleared); nothing runs, so nothing is written.
      expect(exec.r.exitCode, exec.r.stderr).toBe(125);
      expect(exec.r.stderr).toMatch(/holds \[secret\], which this run's model is not cleared for/);
      const written = await readFile(path.join(repo, 'deploy.env'), 'utf8').catch(() => '');
      expect(written).not.toContain(SECRET);
    },
  );
});

describe('resume after a run without CFC into an enforcing one', () => {
  it("a secret a host tool showed the disabled run's model keeps its label in the resumed enforce-explicit run", async () => {
    const repo = await scratch.sampleRepo();
    const p = await profile(scratch, {
      tools: ['read_file', 'list_dir', 'write_file'],
      workspace: { mode: 'rw', label: { integrity: ['repo'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
      hostTools: [
        {
          name: 'vault',
          kind: 'exec',
          argv: [NODE, await printer(scratch, 'HOST-VAULT-2mZ8')],
          input: {},
          riskClass: 'read_only',
          sideEffectClass: 'none',
          resourceScope: 'project',
          resultLabel: { confidentiality: ['secret'] },
        },
      ],
    });
    const art = scratch.path('art-resume');
    const first = await scriptedRun(scratch, {
      profile: p,
      workspace: repo,
      artifactRoot: art,
      script: await script(scratch, [[{ name: 'host__vault', input: {} }]]),
      extra: ['--cfc', 'disabled'],
    });
    expect(first.r.exitCode, first.r.stderr).toBe(0);
    const r = await cfh(
      [
        'sandbox',
        'resume',
        path.basename(first.dir),
        '--artifact-root',
        art,
        '--cfc',
        'enforce-explicit',
        '--non-interactive',
        '--prompt',
        'write it down',
        '--script',
        await script(scratch, [
          [{ name: 'write_file', input: { path: 'out.txt', content: 'HOST-VAULT-2mZ8' } }],
        ]),
      ],
      { env: { CFH_KEY_DIR: scratch.path('keys') } },
    );
    // Refused (a resume that may not change its CFC mode) or run: never the value written.
    expect([0, 1, 2, 125], r.stderr).toContain(r.exitCode);
    expect(await readFile(path.join(repo, 'out.txt'), 'utf8').catch(() => '')).toBe('');
  });
});
