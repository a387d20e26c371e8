// The call supervisor against the real engine, one tool container at a time (class 7 of the
// security round, AH-LIFE-3): a call cannot kill its supervisor nor leave its session, and
// its stop kills all of it, a daemon included; stopping one call leaves another call's
// processes, what an earlier call left running, and the container's init alone; a
// supervisor killed from outside its call has its container killed (fail closed). runc and,
// where the engine has it, runsc.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readEnvironment } from '../../src/config/env.js';
import { planSandboxRun } from '../../src/engine/run/run-plan.js';
import { HOSTS_FILE, LOOPBACK_HOSTS } from '../../src/sandbox/derive-spec.js';
import { currentOwner } from '../../src/sandbox/owner.js';
import { currentHostIdentity } from '../../src/sandbox/sandbox-user.js';
import { DockerRuntime } from '../../src/substrate/docker/adapter.js';
import type { CallStop } from '../../src/tools/call-supervisor.js';
import { ToolContainer, type ToolCallOptions } from '../../src/tools/tool-container.js';
import { containersOfRun, copySampleRepo, docker, removeDir, tempDir } from './helpers.js';
import {
  landedAfterDelay,
  lateWrites,
  markerProcesses,
  processesIn,
  waitForMarker,
} from './call-stop-support.js';

let scratch: string;
let repo: string;
const started: { container: ToolContainer; runId: string }[] = [];

beforeAll(async () => {
  scratch = await tempDir('call-supervisor');
  repo = await copySampleRepo(path.join(scratch, 'repo'));
  await mkdir(path.join(scratch, 'art'));
});

afterAll(async () => {
  for (const { container, runId } of started) {
    await container.remove();
    expect(await containersOfRun(runId)).toEqual([]);
  }
  await removeDir(scratch);
});

/** A workload tool container of an `untrusted-repo` run under `runtime`. */
async function workload(runtime: 'runc' | 'runsc'): Promise<ToolContainer> {
  const plan = planSandboxRun(
    { profile: 'untrusted-repo', workspace: repo, command: ['true'], runtime },
    { ...readEnvironment(), artifactRoot: path.join(scratch, 'art') },
    currentHostIdentity(),
    currentOwner(),
  );
  await mkdir(path.join(scratch, 'art', plan.runId));
  await writeFile(path.join(scratch, 'art', plan.runId, HOSTS_FILE), LOOPBACK_HOSTS);
  const container = await ToolContainer.start(new DockerRuntime(), plan.spec, 'workload');
  started.push({ container, runId: plan.runId });
  return container;
}

/** A call's options, its stops collected in `stops`. */
function options(stops: CallStop[], extra: Partial<ToolCallOptions> = {}): ToolCallOptions {
  return {
    timeoutMs: 60_000,
    maxOutputBytes: 64 * 1024,
    onStop: (stop) => {
      stops.push(stop);
      return Promise.resolve();
    },
    ...extra,
  };
}

async function runscRegistered(): Promise<boolean> {
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  return Object.keys(info.Runtimes ?? {}).includes('runsc');
}

describe.each(['runc', 'runsc'] as const)('the call supervisor under %s', (runtime) => {
  it('a call can neither kill its supervisor nor leave its session; its timeout kills all of it', async (ctx) => {
    if (runtime === 'runsc' && !(await runscRegistered())) ctx.skip();
    const container = await workload(runtime);
    const late = lateWrites();
    const attempts = [
      'kill -9 $PPID; echo "kill supervisor: $?"',
      'kill -9 -1; echo "kill all: $?"',
      `W=$PPID python3 -c 'import os; os.kill(int(os.environ["W"]), 9)' 2>&1 | tail -1`,
      // setsid says it worked; the process is still in the call's session (its supervisor's).
      `W=$PPID python3 -c 'import os; os.setsid(); print("session kept:", os.getsid(0) == int(os.environ["W"]))'`,
      late.argv[2] ?? '',
    ].join('; ');
    const stops: CallStop[] = [];
    const at = Date.now();
    const ran = await container.run(['sh', '-c', attempts], options(stops, { timeoutMs: 2500 }));
    expect(ran.timedOut).toBe(true);
    const out = ran.stdout.toString('utf8');
    expect(out).toContain('kill supervisor: 1');
    expect(out).toContain('kill all: 1');
    expect(out).toContain('PermissionError');
    expect(out).toContain('session kept: True');
    expect(stops).toEqual([ran.stop]);
    expect(ran.stop).toMatchObject({
      containerId: container.id,
      reason: 'timeout',
      method: 'session',
      gone: true,
    });
    expect(ran.stop?.processes).toBeGreaterThanOrEqual(3);
    expect(await markerProcesses(container.name, late.marker)).toEqual([]);
    expect(await landedAfterDelay(repo, late, at)).toEqual([]);
  });
});

describe('the call supervisor, commands it cannot start', () => {
  it('answers a missing program 127 and a NUL byte in argv 126, and the container serves on', async () => {
    const container = await workload('runc');
    const missing = await container.run(['no-such-program'], options([]));
    expect(missing).toMatchObject({ exitCode: 127, timedOut: false, stop: undefined });
    expect(missing.stderr.toString()).toContain("cfh: cannot run 'no-such-program'");
    const nul = await container.run(['echo', 'a\0b'], options([]));
    expect(nul).toMatchObject({ exitCode: 126, timedOut: false });
    expect((await container.run(['echo', 'on'], options([]))).stdout.toString()).toBe('on\n');
  });
});

describe('the call supervisor, calls side by side', () => {
  it("stopping one call leaves another call's processes, an earlier call's and the init running", async () => {
    const container = await workload('runc');
    const tag = `${process.pid % 1000}${Date.now() % 1000}`;
    // An earlier call that ended on its own, leaving a process behind (per-run containers
    // keep those: the next call may use them).
    const left = await container.run(
      ['sh', '-c', `(setsid sleep 300.${tag}1 </dev/null >/dev/null 2>&1 &)`],
      options([]),
    );
    expect(left).toMatchObject({ exitCode: 0, timedOut: false, stop: undefined });
    const stops: CallStop[] = [];
    const a = new AbortController();
    const b = new AbortController();
    const callA = container.run(['sleep', `30.${tag}2`], options(stops, { signal: a.signal }));
    const callB = container.run(['sleep', `30.${tag}3`], options(stops, { signal: b.signal }));
    await waitForMarker(container.name, `30.${tag}2`, 1);
    await waitForMarker(container.name, `30.${tag}3`, 1);
    b.abort(new Error('cancel B'));
    await expect(callB).rejects.toThrow('cancel B');
    expect(stops).toMatchObject([{ reason: 'cancelled', method: 'session', gone: true }]);
    const after = await processesIn(container.name);
    expect(after.some((l) => l.includes(`sleep 30.${tag}3`))).toBe(false);
    expect(after.some((l) => l.includes(`sleep 30.${tag}2`))).toBe(true);
    expect(after.some((l) => l.includes(`sleep 300.${tag}1`))).toBe(true);
    expect(after[0] ?? '').toMatch(/docker-init/);
    a.abort(new Error('cancel A'));
    await expect(callA).rejects.toThrow('cancel A');
    expect(await container.running()).toBe(true);
    expect((await processesIn(container.name)).some((l) => l.includes(`300.${tag}1`))).toBe(true);
  });

  it('a supervisor killed from outside its call: its container is killed and the call fails closed', async () => {
    const container = await workload('runc');
    const marker = `40.${process.pid % 1000}${Date.now() % 1000}`;
    const stops: CallStop[] = [];
    const victim = container.run(['sleep', marker], options(stops));
    await waitForMarker(container.name, marker, 1);
    // Another call kills every supervisor it may: its own refuses (EPERM), the victim's dies.
    // (The pattern is spelled so that this command line does not hold it.)
    const killer = container.run(
      [
        'sh',
        '-c',
        'for p in /proc/[0-9]*; do grep -qs "filter_$(echo program)" $p/cmdline && kill -9 ${p#/proc/}; done; sleep 30',
      ],
      options([]),
    );
    const [v, k] = await Promise.allSettled([victim, killer]);
    expect(v).toMatchObject({ status: 'rejected', reason: { code: 'call_supervisor_failed' } });
    expect(stops).toMatchObject([{ reason: 'supervisor_lost', method: 'container', gone: true }]);
    // The killer was in the same container: it went with it.
    expect(k).toMatchObject({ status: 'rejected', reason: { code: 'tool_container_lost' } });
    expect(await container.running()).toBe(false);
    // No call runs in it again.
    await expect(container.run(['true'], options([]))).rejects.toMatchObject({
      code: 'tool_container_lost',
    });
  });
});
