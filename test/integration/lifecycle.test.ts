// Cancellation and crash recovery (AH-LIFE-1..3): SIGINT/SIGTERM cancel and clean up;
// after SIGKILL of cfh, `cfh reap` or the next cfh start removes the orphan.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  cfh,
  containersOfRun,
  readEvents,
  readJson,
  removeDir,
  runIdOf,
  startCfh,
  tempDir,
  waitForEvent,
} from './helpers.js';

let scratch: string;
let workspace: string;
let n = 0;

beforeAll(async () => {
  scratch = await tempDir('life');
  workspace = path.join(scratch, 'ws');
  await mkdir(workspace);
});
afterAll(async () => {
  await removeDir(scratch);
});

function artifactRoot(): string {
  n += 1;
  return path.join(scratch, `art-${n}`);
}

function startSleeping(root: string) {
  return startCfh([
    'sandbox',
    'run',
    '--workspace',
    workspace,
    '--artifact-root',
    root,
    '--',
    'sleep',
    '300',
  ]);
}

describe.each([
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const)('%s', (signal, code) => {
  it(`cancels the run: exit ${code}, state cancelled, no container left`, async () => {
    const root = artifactRoot();
    const child = startSleeping(root);
    const dir = await waitForEvent(root, 'container_started');
    child.kill(signal);
    const result = await child;
    expect(result.exitCode).toBe(code);
    const state = await readJson(path.join(dir, 'state.json'));
    expect(state).toMatchObject({
      state: 'cancelled',
      terminalReason: `cancelled:${signal}`,
      exitCode: code,
    });
    const types = (await readEvents(dir)).map((e) => e.type);
    expect(types).toContain('cancelled');
    expect(types.indexOf('container_removed')).toBeLessThan(types.indexOf('run_finished'));
    expect(types.at(-1)).toBe('run_finished');
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });
});

describe('SIGKILL of cfh', () => {
  it('leaves an orphan that `cfh reap` finds and removes', async () => {
    const root = artifactRoot();
    const child = startSleeping(root);
    const dir = await waitForEvent(root, 'container_started');
    child.kill('SIGKILL');
    await child;
    const runId = runIdOf(dir);
    expect(await containersOfRun(runId)).toHaveLength(1);
    // Its record stops at `running`; `runs list` sees the writer is gone.
    const listed = await cfh(['runs', 'list', '--json', '--artifact-root', root]);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ runId, state: 'running', writer: 'gone' }),
    ]);
    const text = await cfh(['runs', 'list', '--artifact-root', root]);
    expect(text.stdout).toMatch(new RegExp(`^${runId}  abandoned `, 'm'));

    const dry = await cfh(['reap', '--dry-run', '--json', '--run', runId]);
    expect(dry.exitCode).toBe(0);
    expect(JSON.parse(dry.stdout)).toContainEqual(
      expect.objectContaining({ runId, kind: 'container', owner: 'gone', action: 'would-remove' }),
    );
    expect(await containersOfRun(runId)).toHaveLength(1);

    // Scoped to this test's run: a global reap could take another test's objects.
    const reap = await cfh(['reap', '--json', '--run', runId]);
    expect(reap.exitCode).toBe(0);
    expect(JSON.parse(reap.stdout)).toContainEqual(
      expect.objectContaining({ runId, action: 'removed' }),
    );
    expect(await containersOfRun(runId)).toEqual([]);
  });

  it('the next cfh start removes the orphan by itself', async () => {
    const root = artifactRoot();
    const child = startSleeping(root);
    const dir = await waitForEvent(root, 'container_started');
    child.kill('SIGKILL');
    await child;
    const runId = runIdOf(dir);
    expect(await containersOfRun(runId)).toHaveLength(1);
    const next = await cfh([
      'sandbox',
      'run',
      '--workspace',
      workspace,
      '--artifact-root',
      artifactRoot(),
      '--',
      'true',
    ]);
    expect(next.exitCode).toBe(0);
    expect(await containersOfRun(runId)).toEqual([]);
  });

  it('reap leaves the containers of a live cfh alone', async () => {
    const root = artifactRoot();
    const child = startSleeping(root);
    const dir = await waitForEvent(root, 'container_started');
    const runId = runIdOf(dir);
    const reap = await cfh(['reap', '--json', '--run', runId]);
    expect(JSON.parse(reap.stdout)).toContainEqual(
      expect.objectContaining({ runId, owner: 'alive', action: 'kept' }),
    );
    expect(await containersOfRun(runId)).toHaveLength(1);
    child.kill('SIGINT');
    expect((await child).exitCode).toBe(130);
    expect(await containersOfRun(runId)).toEqual([]);
  });
});
