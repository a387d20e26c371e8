// Limits against the real engine: memory (OOM → 137), pids (fork bomb contained), wall
// time (→ 124). Each run must end cleanly and leave no container behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  cfh,
  containersOfRun,
  onlyRunDir,
  readEvents,
  readJson,
  removeDir,
  runIdOf,
  tempDir,
} from './helpers.js';

let scratch: string;
let workspace: string;
let n = 0;

beforeAll(async () => {
  scratch = await tempDir('limits');
  workspace = path.join(scratch, 'ws');
  await mkdir(workspace);
});
afterAll(async () => {
  await removeDir(scratch);
});

async function run(args: string[]) {
  n += 1;
  const artifactRoot = path.join(scratch, `art-${n}`);
  const r = await cfh([
    'sandbox',
    'run',
    '--workspace',
    workspace,
    '--artifact-root',
    artifactRoot,
    ...args,
  ]);
  const dir = await onlyRunDir(artifactRoot);
  return { ...r, dir, runId: runIdOf(dir) };
}

describe('limits', () => {
  it('the memory limit OOM-kills the command: exit 137, OOMKilled in the evidence', async () => {
    const r = await run([
      '--memory',
      '48m',
      '--',
      'python3',
      '-c',
      'b = bytearray(512 * 1024 * 1024); print(len(b))',
    ]);
    expect(r.exitCode).toBe(137);
    const exited = (await readEvents(r.dir)).find((e) => e.type === 'container_exited');
    expect(exited?.data).toMatchObject({ oomKilled: true, exitCode: 137 });
    const report = await readJson(path.join(r.dir, 'report.json'));
    expect(report).toMatchObject({
      status: 'failed',
      terminalReason: 'limit_reached:memory',
      oomKilled: true,
      exitCode: 137,
    });
    expect(
      (await readEvents(r.dir)).some(
        (e) => e.type === 'limit_reached' && e.data.limit === 'memory',
      ),
    ).toBe(true);
    expect(await containersOfRun(r.runId)).toEqual([]);
  });

  it('the pids limit stops a fork loop with EAGAIN, and the run ends normally', async () => {
    const script = [
      'import os, sys, time',
      'kids = 0',
      'while True:',
      '    try:',
      '        pid = os.fork()',
      '    except OSError as e:',
      '        print("fork refused after", kids, e.strerror); sys.stdout.flush(); break',
      '    if pid == 0:',
      '        time.sleep(30); os._exit(0)',
      '    kids += 1',
    ].join('\n');
    const r = await run(['--pids', '40', '--timeout', '60', '--', 'python3', '-c', script]);
    expect(r.stdout).toMatch(/fork refused after (\d+) Resource temporarily unavailable/);
    const kids = Number(/after (\d+)/.exec(r.stdout)?.[1]);
    expect(kids).toBeLessThan(40);
    expect(kids).toBeGreaterThan(20);
    // The command returned while its children still slept: the init process and the
    // container teardown take them down, and cfh still removes everything.
    expect(r.exitCode).toBe(0);
    expect(await containersOfRun(r.runId)).toEqual([]);
  });

  it('a shell fork bomb is contained by the pids limit and stopped by the wall-time limit', async () => {
    const r = await run([
      '--pids',
      '64',
      '--timeout',
      '4',
      '--',
      'bash',
      '-c',
      ':(){ :|:& };:; sleep 100',
    ]);
    expect(r.exitCode).toBe(124);
    const report = await readJson(path.join(r.dir, 'report.json'));
    expect(report).toMatchObject({ status: 'failed', terminalReason: 'limit_reached:wall_time' });
    expect(await containersOfRun(r.runId)).toEqual([]);
  });

  it('the wall-time limit kills the container: exit 124, the limit named, nothing left', async () => {
    const started = Date.now();
    const r = await run(['--timeout', '2', '--', 'sleep', '120']);
    expect(r.exitCode).toBe(124);
    expect(Date.now() - started).toBeLessThan(60_000);
    const events = await readEvents(r.dir);
    expect(events.find((e) => e.type === 'limit_reached')?.data).toMatchObject({
      limit: 'wall_time',
      limitMs: 2000,
    });
    const state = await readJson(path.join(r.dir, 'state.json'));
    expect(state).toMatchObject({
      state: 'failed',
      terminalReason: 'limit_reached:wall_time',
      exitCode: 124,
    });
    expect(r.stderr).toContain('limit_reached:wall_time');
    expect(await containersOfRun(r.runId)).toEqual([]);
  });
});
