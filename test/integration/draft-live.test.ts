// Draft mode's bound while the run goes on (governance extension, "Draft vs commit policy";
// AH-LIFE-4 names the limit): the copy is bounded at copy time and, by the draft watch,
// during the run. Real engine, real CLI: a sandbox that keeps writing into its copy is
// stopped as a limit within a few seconds, its copy removed, nothing left on the engine.
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  SANDBOX_UID,
  cfh,
  containersOfRun,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  useScratch,
} from './helpers.js';

const scratch = useScratch('draft-live');
const isRoot = process.getuid?.() === 0;

let n = 0;
async function workspace(): Promise<string> {
  n += 1;
  const ws = scratch.path(`ws-${n}`);
  await chmod(path.dirname(ws), 0o755);
  await mkdir(ws, { recursive: true });
  await writeFile(path.join(ws, 'notes.txt'), 'first line\n');
  if (isRoot) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
  return ws;
}

/** A draft run of `script` with the copy bounded at 20 MiB, drafts under a private root. */
async function boundedRun(script: string) {
  const ws = await workspace();
  n += 1;
  const root = scratch.path(`art-${n}`);
  const drafts = scratch.path(`drafts-${n}`);
  // The copy is made as the sandbox user, who must pass through the draft root.
  await mkdir(drafts);
  await chmod(drafts, 0o711);
  const t0 = performance.now();
  const r = await cfh(
    [
      'sandbox',
      'run',
      '--workspace',
      ws,
      '--workspace-mode',
      'draft',
      '--artifact-root',
      root,
    ].concat(['--timeout', '120', '--', 'sh', '-c', script]),
    { env: { CFH_DRAFT_ROOT: drafts, CFH_DRAFT_MAX_BYTES: '20m' } },
  );
  const seconds = (performance.now() - t0) / 1000;
  return { ...r, seconds, dir: await onlyRunDir(root), drafts };
}

async function expectStoppedAtLimit(run: Awaited<ReturnType<typeof boundedRun>>) {
  expect(run.exitCode, run.stderr).toBe(1);
  const report = await readJson<{ terminal?: unknown }>(path.join(run.dir, 'report.json'));
  expect(JSON.stringify(report)).toContain('limit_reached:draft_bytes');
  const events = await readEvents(run.dir);
  const limit = events.find((e) => e.type === 'limit_reached');
  expect(limit?.data).toMatchObject({ limit: 'draft_bytes', maxBytes: 20 * 1024 ** 2 });
  expect(events.find((e) => e.type === 'draft_prepared')?.data.bounds).toMatchObject({
    live: { maxBytes: 20 * 1024 ** 2, minIntervalMs: 250 },
  });
  expect(events.map((e) => e.type)).toContain('draft_discarded');
  expect(await readdir(run.drafts)).toEqual([]);
  expect(await containersOfRun(runIdOf(run.dir))).toEqual([]);
  const audit = await cfh(['audit', run.dir]);
  expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
}

describe('draft bound during the run (class: the sandbox grows its copy past the bound)', () => {
  it('a command writing 200 MB in chunks is stopped as limit draft_bytes, exit 1, copy removed', async () => {
    const run = await boundedRun(
      'i=0; while [ $i -lt 100 ]; do dd if=/dev/zero of=big.$i bs=1M count=2 2>/dev/null; i=$((i+1)); sleep 0.2; done',
    );
    await expectStoppedAtLimit(run);
    // 100 chunks at 0.2 s would take 20 s; the bound is passed after ~10 chunks.
    expect(run.seconds).toBeLessThan(15);
  });

  it('variant: many small files (blocks, not sizes, are counted) are stopped the same way', async () => {
    const run = await boundedRun(
      'mkdir m; i=0; while [ $i -lt 20000 ]; do echo x > m/f$i; i=$((i+1)); done',
    );
    await expectStoppedAtLimit(run);
    expect(run.seconds).toBeLessThan(60);
  }, 90_000);

  it('variant: a sparse file costs its blocks, not its size: a 1 TiB sparse file does not stop the run', async () => {
    const run = await boundedRun('truncate -s 1T sparse.img && sleep 2 && echo done');
    const events = await readEvents(run.dir);
    expect(events.filter((e) => e.type === 'limit_reached')).toEqual([]);
    expect(run.stdout).toContain('done');
    expect(await readdir(run.drafts)).toEqual([]);
  });
});
