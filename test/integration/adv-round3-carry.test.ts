// Adversarial round 3, class 1 (a model context's label lost across a boundary): an approved
// plan carries its planning run's context label into the run that executes it
// (operators.md, "A context carried over a boundary keeps its label": "A run that recorded
// no label (CFC disabled) may have shown its model anything it could read. Every source of
// its recorded plan then counts"). cfc/carried.ts's everySource counts the mounts, the
// destinations and the unlabelled sources of the planning run's plan, but not its host
// tools' result labels: a planning run under `--cfc disabled` whose model read a host tool
// labelled `secret` and wrote it into plan.md hands the executing run (enforce-explicit) a
// context with the secret in it and a label without it. The oracle: the executing run does
// not write the secret into its workspace, which is not cleared for it.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cfh, onlyRunDir, ownBySandbox, useScratch } from './helpers.js';
import {
  NODE,
  apiCfh,
  printer,
  profile,
  script,
  scriptedRun,
  secretDir,
} from './adv-round3-support.js';

const scratch = useScratch('adv3-carry');
const SECRET = 'PLAN-VAULT-4b7Kq9Zt';
const INTERNAL = 'INTERNAL-Rq83vLm2';

describe('--from-plan after a planning run without CFC', () => {
  it.each(['enforce-explicit', 'enforce-strict'])(
    '%s: a secret a host tool gave the planning model is not written by the run that executes the plan',
    async (mode) => {
      const p = await profile(scratch, {
        tools: ['read_file', 'list_dir', 'write_file'],
        workspace: { mode: 'rw', label: { integrity: ['repo'] } },
        cfc: { mode, modelClearance: [] },
        hostTools: [
          {
            name: 'vault',
            kind: 'exec',
            argv: [NODE, await printer(scratch, SECRET)],
            input: {},
            riskClass: 'read_only',
            sideEffectClass: 'none',
            resourceScope: 'project',
            resultLabel: { confidentiality: ['secret'] },
          },
        ],
      });
      const repo = await scratch.sampleRepo();
      const art = scratch.path(`art-${mode}`);
      const found = (req: string): string => /PLAN-VAULT-[A-Za-z0-9]+/.exec(req)?.[0] ?? 'none';
      // The planning run: CFC off for it (the operator's --cfc disabled); its model reads
      // the vault and writes what it got into its plan.
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
          { calls: [{ name: 'host__vault', input: {} }] },
          { text: (req) => `Plan: configure the deploy with ${found(req)}` },
        ],
      );
      expect(plan.r.exitCode, plan.r.stderr).toBe(0);
      const planId = path.basename(await onlyRunDir(art));
      // The executing run (the profile's enforcing mode): its model copies the plan's value
      // into a workspace file; from_plan is approved, as docs/operators.md shows.
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

describe("delegation: the child labels the parent's workspace its own way", () => {
  it.each([
    ['enforce-explicit', 'child'],
    ['enforce-strict', 'child'],
    ['enforce-explicit', 'parent'],
  ])(
    "%s: what the %s reads of the parent's labelled workspace keeps the parent's label (the parent: the control)",
    async (mode, via) => {
      // The parent labels its workspace `internal` (its model may read it, a public /out may
      // not receive it). A child profile that does not repeat the label reads the same host
      // tree as its own default (`repo:untrusted`, no confidentiality), so its answer, and
      // the parent's context after it, carry nothing of `internal`.
      const repo = await scratch.sampleRepo();
      await writeFile(path.join(repo, 'internal.txt'), `${INTERNAL}\n`);
      await ownBySandbox(path.join(repo, 'internal.txt'));
      const out = scratch.path(`out-${mode}-${via}`);
      await mkdir(out);
      await ownBySandbox(out);
      const p = await profile(scratch, {
        tools: ['read_file', 'list_dir', 'write_file'],
        workspace: { mode: 'ro', label: { confidentiality: ['internal'], integrity: ['repo'] } },
        mounts: [{ source: out, target: '/out', mode: 'rw', label: { integrity: ['out'] } }],
        cfc: { mode, modelClearance: ['internal'] },
        children: { reader: { tools: ['read_file', 'list_dir'], cfc: { mode } } },
      });
      const art = scratch.path(`art-deleg-${mode}-${via}`);
      const found = (req: string): string => /INTERNAL-[A-Za-z0-9]+/.exec(req)?.[0] ?? 'none';
      const run = await apiCfh(
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
          'Summarise the internal notes into /out',
          '--non-interactive',
        ],
        [
          ...(via === 'child'
            ? [
                {
                  calls: [
                    { name: 'delegate', input: { profile: 'reader', task: 'read internal.txt' } },
                  ],
                },
                { calls: [{ name: 'read_file', input: { path: 'internal.txt' } }] },
                { text: (req: string) => `it says ${found(req)}` },
              ]
            : [{ calls: [{ name: 'read_file', input: { path: 'internal.txt' } }] }]),
          {
            calls: (req) => [
              { name: 'write_file', input: { path: '/out/notes.txt', content: found(req) } },
            ],
          },
          { text: 'done' },
        ],
      );
      expect(run.r.exitCode, run.r.stderr).toBe(0);
      const written = await readFile(path.join(out, 'notes.txt'), 'utf8').catch(() => '');
      expect(written).not.toContain(INTERNAL);
    },
  );
});

describe('resume from a diagnostic run into an enforcing one', () => {
  it('a secret the observe run showed its model keeps its label in the resumed enforce-explicit run', async () => {
    const secrets = await secretDir(scratch, { token: 'resume-secret-8Kp' });
    const repo = await scratch.sampleRepo();
    const p = await profile(scratch, {
      tools: ['read_file', 'list_dir', 'write_file'],
      workspace: { mode: 'rw', label: { integrity: ['repo'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
    });
    const art = scratch.path('art-resume');
    const first = await scriptedRun(scratch, {
      profile: p,
      workspace: repo,
      artifactRoot: art,
      script: await script(scratch, [[{ name: 'read_file', input: { path: '/secrets/token' } }]]),
      extra: ['--cfc', 'observe'],
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
          [{ name: 'write_file', input: { path: 'out.txt', content: 'resume-secret-8Kp' } }],
        ]),
      ],
      { env: { CFH_KEY_DIR: scratch.path('keys') } },
    );
    // The observe run showed its model the secret: resumed into enforce-explicit with a model
    // cleared for nothing, the conversation is refused before anything exists.
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toMatch(/holds \[secret\], which this run's model is not cleared for/);
    expect(await readFile(path.join(repo, 'out.txt'), 'utf8').catch(() => '')).toBe('');
  });
});
