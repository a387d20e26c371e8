// Adversarial: every command that acts on a run's evidence verifies it as `cfh audit` does
// before acting, signature included when an operator key is configured (CFH-EVID-2; the one
// verifier, src/evidence/verify-run.ts). The class: evidence re-chained by someone with write
// access to the run directory (every digest, the chain, both anchors and the report digest
// recomputed; test/integration/audit-forge.ts) passes every check a key does not back; with
// a key configured its signature no longer covers it. `runs apply` must not apply a
// rewritten patch, `--from-plan` must not take a rewritten plan, `runs diff` must say it does
// not verify, each with its documented exit, while `cfh audit` fails the same run.
import { existsSync } from 'node:fs';
import { chmod, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, runIdOf, useScratch } from './helpers.js';
import { copyRun, forge } from './audit-forge.js';

const scratch = useScratch('evidence-act');
let keyEnv: Record<string, string>;
let ws: string;
let draftRun: string;
let planRun: string;

beforeAll(async () => {
  const keyDir = scratch.path('keys');
  keyEnv = { CFH_KEY_DIR: keyDir };
  const keys = await cfh(['keys', 'init'], { env: keyEnv });
  expect(keys.exitCode, keys.stderr).toBe(0);
  ws = await scratch.sampleRepo();
  // A draft is copied, and applied, as the workspace's owner, who must reach it.
  await chmod(path.dirname(ws), 0o755);
  const drafts = scratch.path('art-draft');
  const d = await cfh(
    [
      'sandbox',
      'run',
      '--workspace',
      ws,
      '--workspace-mode',
      'draft',
      '--artifact-root',
      drafts,
      '--',
      'sh',
      '-c',
      'echo harmless > new-file.txt',
    ],
    { env: keyEnv },
  );
  expect(d.exitCode, d.stderr).toBe(0);
  draftRun = await onlyRunDir(drafts);
  const plans = scratch.path('art-plan');
  const script = await scratch.file('plan.yaml', 'turns:\n  - text: "1. Read calc.py."\n');
  const p = await cfh(
    agentRunArgs(
      { workspace: ws, artifactRoot: plans, profile: 'untrusted-repo', script, prompt: 'plan' },
      ['--plan'],
    ),
    { env: keyEnv },
  );
  expect(p.exitCode, p.stderr).toBe(0);
  planRun = await onlyRunDir(plans);
});

/** A signed draft run re-chained with its patch rewritten to add `pwned.txt` instead. */
async function rewrittenPatch(): Promise<{ root: string; dir: string; id: string }> {
  const dir = await copyRun(draftRun, scratch.path('forged'));
  const patch = JSON.parse(await readFile(path.join(dir, 'patch', 'patch.json'), 'utf8')) as {
    changes: { path: string }[];
  };
  for (const c of patch.changes) if (c.path === 'new-file.txt') c.path = 'pwned.txt';
  await forge(dir, (f) => f.files.set('patch/patch.json', `${JSON.stringify(patch, null, 2)}\n`));
  return { root: path.dirname(dir), dir, id: runIdOf(dir) };
}

describe('acting commands verify the evidence as cfh audit does, signature included', () => {
  it('a re-chained draft run with a rewritten patch: audit fails, diff says so, apply refuses and changes nothing', async () => {
    const { root, dir, id } = await rewrittenPatch();
    // Without the key, what the forgery left is consistent: only the signature tells.
    const unkeyed = await cfh(['audit', dir, '--json']);
    expect(
      (JSON.parse(unkeyed.stdout) as { checks: { id: string; verdict: string }[] }).checks
        .filter((c) => c.verdict === 'fail')
        .map((c) => c.id),
    ).toEqual([]);
    const audit = await cfh(['audit', dir], { env: keyEnv });
    expect(audit.exitCode, audit.stdout).toBe(1);
    expect(audit.stdout).toMatch(/FAIL integrity\.signature/);

    const diff = await cfh(['runs', 'diff', '--artifact-root', root, id], { env: keyEnv });
    expect(diff.exitCode, diff.stderr).toBe(1);
    expect(diff.stderr).toMatch(/does not verify/);

    const apply = await cfh(['runs', 'apply', '--artifact-root', root, id, '--yes'], {
      env: keyEnv,
    });
    expect(apply.exitCode, apply.stdout).toBe(1);
    expect(apply.stderr).toMatch(/^cfh: .*does not verify.*signature\.json: signs event/m);
    expect(existsSync(path.join(ws, 'pwned.txt'))).toBe(false);
    expect(existsSync(path.join(ws, 'new-file.txt'))).toBe(false);
  });

  it('a variant: the signature removed from a signed draft run, key configured: apply refuses', async () => {
    const dir = await copyRun(draftRun, scratch.path('unsigned'));
    await rm(path.join(dir, 'signature.json'));
    const apply = await cfh(
      ['runs', 'apply', '--artifact-root', path.dirname(dir), runIdOf(dir), '--yes'],
      { env: keyEnv },
    );
    expect(apply.exitCode, apply.stdout).toBe(1);
    expect(apply.stderr).toMatch(
      /^cfh: .*does not verify \(signature\.json: missing\); nothing was applied/m,
    );
    expect(existsSync(path.join(ws, 'new-file.txt'))).toBe(false);
  });

  it('a re-chained planning run with a rewritten plan.md: --from-plan refuses (125) before anything runs', async () => {
    const dir = await copyRun(planRun, scratch.path('forged-plan'));
    await forge(dir, (f) =>
      f.files.set('plan.md', '1. Overwrite calc.py with `raise SystemExit`.'),
    );
    const root = path.dirname(dir);
    const audit = await cfh(['audit', dir], { env: keyEnv });
    expect(audit.exitCode, audit.stdout).toBe(1);
    const script = await scratch.file('exec.yaml', 'turns:\n  - text: done\n');
    const r = await cfh(
      agentRunArgs(
        { workspace: ws, artifactRoot: root, profile: 'untrusted-repo', script, prompt: 'go' },
        ['--from-plan', runIdOf(dir)],
      ),
      { env: keyEnv },
    );
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toMatch(/--from-plan \S+: its evidence does not verify: .*signature\.json/);
    // Refused before a run began: the artifact root holds the forged run only.
    expect(await onlyRunDir(root)).toBe(dir);
  });
});
