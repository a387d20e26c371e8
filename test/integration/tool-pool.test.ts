// The warm pool of per-call tool containers (issue 21, CFH-POOL-1) against the real engine:
// it fills ahead, each call gets a fresh never-used container (adversarially: a call that
// leaves a file in /tmp and a background process, whose next call must see neither), it is
// bounded by pool.size and refilled, a SIGINT mid-run leaves nothing, a SIGKILL leaves what
// `cfh reap` removes, a failed fill fails the run closed, and per-run makes no pool. Only
// objects labelled with the test's own run ids are counted.
import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  agentRunArgs,
  cfh,
  containersOfRun,
  docker,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  startCfh,
  useScratch,
  waitForEvent,
  type Event,
} from './helpers.js';

const scratch = useScratch('tool-pool');
let n = 0;

/** The fields of the pool's events and tool_executed these tests read. */
interface Pooled {
  readonly containerId: string;
  readonly name: string;
  readonly kind: string;
  readonly lifetime: string;
  readonly specDigest: string;
  readonly unused: boolean;
  readonly callId: string;
  readonly status: string;
}

const ofType = (events: Event[], type: string) =>
  events.filter((e) => e.type === type).map((e) => e.data as unknown as Pooled);

async function profile(name: string, body: string): Promise<string> {
  return scratch.file(`${name}.yaml`, `extends: untrusted-repo\nname: ${name}\n${body}`);
}

async function script(turns: unknown[]): Promise<string> {
  n += 1;
  return scratch.file(`script-${n}.json`, JSON.stringify({ turns }));
}

const exec = (command: string) => ({ name: 'exec', input: { command: ['sh', '-c', command] } });

async function agentRun(profileRef: string, turns: unknown[], extra: string[] = []) {
  n += 1;
  const root = scratch.path(`art-${n}`);
  const args = agentRunArgs(
    {
      workspace: await scratch.sampleRepo(),
      artifactRoot: root,
      profile: profileRef,
      script: await script(turns),
    },
    ['--tool-lifetime', 'per-call', ...extra],
  );
  return { args, root };
}

async function stdoutOf(dir: string, call: number): Promise<string> {
  return readFile(path.join(dir, 'outputs', `call-000${call}.stdout`), 'utf8');
}

describe('per-call tool containers from a warm pool', () => {
  it('each call gets a pristine container: nothing a call left in /tmp or running is seen by the next', async () => {
    // The marker and the background process of call 1; call 2 looks for both, everywhere
    // its PID namespace shows (every /proc/<pid>/cmdline).
    const { args, root } = await agentRun('untrusted-repo', [
      {
        tool_calls: [
          exec(
            'echo planted > /tmp/cfh-marker; (setsid sleep 987 </dev/null >/dev/null 2>&1 &); ' +
              'sleep 0.3; cat /tmp/cfh-marker; hostname; ' +
              'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done',
          ),
        ],
      },
      {
        tool_calls: [
          exec(
            'ls -A /tmp; hostname; for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done',
          ),
        ],
      },
      { tool_calls: [{ name: 'read_file', input: { path: 'calc.py' } }] },
      { text: 'done' },
    ]);
    const r = await cfh(args);
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const first = await stdoutOf(dir, 1);
    const second = await stdoutOf(dir, 2);
    // The attempt took hold in its own container: the marker and the process were there.
    expect(first).toContain('planted');
    expect(first).toMatch(/sleep 987/);
    // The next call saw neither, and ran in another container.
    expect(second).not.toContain('cfh-marker');
    expect(second).not.toMatch(/sleep 987/);
    const host = (out: string, line: number) => out.split('\n')[line];
    expect(host(second, 0)).not.toBe(host(first, 1));

    const events = await readEvents(dir);
    const pooled = ofType(events, 'tool_container_pooled');
    const taken = ofType(events, 'tool_container_taken');
    const executed = ofType(events, 'tool_executed');
    // Each call ran in a container taken from the pool, never one another call used.
    expect(executed.map((x) => x.containerId)).toEqual(taken.map((t) => t.containerId));
    expect(new Set(taken.map((t) => t.containerId)).size).toBe(3);
    expect(taken.every((t) => t.unused && t.lifetime === 'per-call')).toBe(true);
    // Each was made ahead, recorded ready before it was handed out.
    const seq = (type: string, id: string) =>
      events.find((e) => e.type === type && e.data.containerId === id)?.seq ?? -1;
    for (const t of taken) {
      expect(seq('tool_container_started', t.containerId)).toBeLessThan(
        seq('tool_container_pooled', t.containerId),
      );
      expect(seq('tool_container_pooled', t.containerId)).toBeLessThan(
        seq('tool_container_taken', t.containerId),
      );
      // The container of a call is gone before the next call takes its own.
      const next = taken[taken.indexOf(t) + 1];
      if (next !== undefined)
        expect(seq('tool_container_removed', t.containerId)).toBeLessThan(
          seq('tool_container_taken', next.containerId),
        );
    }
    // Made from the spec the snapshot records for its kind; both kinds pooled (exec, read_file).
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.toolContainer.pool.size).toBe(2);
    const digests = Object.fromEntries(
      (snapshot.toolContainer.pool.kinds as { kind: string; specDigest: string }[]).map((k) => [
        k.kind,
        k.specDigest,
      ]),
    );
    expect(Object.keys(digests).sort()).toEqual(['file-tool', 'workload']);
    for (const p of pooled) expect(p.specDigest).toBe(digests[p.kind]);
    // Every one made was removed; nothing of the run is left on the engine.
    const removed = new Set(ofType(events, 'tool_container_removed').map((e) => e.containerId));
    expect(pooled.every((p) => removed.has(p.containerId))).toBe(true);
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
    const audit = await cfh(['audit', '--json', dir]);
    expect(audit.exitCode, audit.stdout).toBe(0);
    const checks = JSON.parse(audit.stdout).checks as { id: string; verdict: string }[];
    expect(checks.find((c) => c.id === 'lifecycle.pool')?.verdict).toBe('pass');
  });

  it('bounded by pool.size and refilled: a call in hand and one warm, never more', async () => {
    const small = await profile('pool-one', 'tools: [exec]\npool:\n  size: 1\n');
    const { args, root } = await agentRun(small, [
      { tool_calls: [exec('sleep 3')] },
      { tool_calls: [exec('sleep 3')] },
      { tool_calls: [exec('true')] },
      { text: 'done' },
    ]);
    const child = startCfh(args);
    // While the first call sleeps the pool refills, to one.
    const dir = await waitForEvent(root, 'tool_container_taken');
    const runId = runIdOf(dir);
    for (let i = 0; i < 100; i++) {
      if (ofType(await readEvents(dir), 'tool_container_pooled').length >= 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await containersOfRun(runId)).length).toBe(2);
    const r = await child;
    expect(r.exitCode, r.stderr).toBe(0);
    const events = await readEvents(dir);
    // Only the workload kind (the tools are exec alone); one made per call, plus the one warm.
    const pooled = ofType(events, 'tool_container_pooled');
    expect(new Set(pooled.map((p) => p.kind))).toEqual(new Set(['workload']));
    expect(pooled).toHaveLength(3 + 1);
    // Replayed in order, never more alive than pool.size and the one call in hand (a call
    // that waits for a container still being made has its refill started already).
    let alive = 0;
    for (const e of events) {
      if (e.type === 'tool_container_started') alive += 1;
      if (e.type === 'tool_container_removed') alive -= 1;
      expect(alive).toBeLessThanOrEqual(1 + 1);
    }
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.toolContainer.pool).toMatchObject({ size: 1, kinds: [{ kind: 'workload' }] });
    expect(await containersOfRun(runId)).toEqual([]);
  });

  it('pool.size 0 and per-run: no pool is created', async () => {
    const off = await profile('pool-off', 'pool:\n  size: 0\n');
    const turns = [{ tool_calls: [exec('true')] }, { text: 'done' }];
    const unpooled = await agentRun(off, turns);
    expect((await cfh(unpooled.args)).exitCode).toBe(0);
    const perRun = await agentRun('untrusted-repo', turns);
    const r = await cfh([...perRun.args, '--tool-lifetime', 'per-run']);
    expect(r.exitCode, r.stderr).toBe(0);
    for (const root of [unpooled.root, perRun.root]) {
      const dir = await onlyRunDir(root);
      const events = await readEvents(dir);
      expect(ofType(events, 'tool_container_pooled')).toEqual([]);
      expect(ofType(events, 'tool_container_taken')).toEqual([]);
      expect(ofType(events, 'tool_container_started')).toHaveLength(1);
      const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
      expect(snapshot.toolContainer.pool).toBeNull();
    }
  });

  it('SIGINT mid-run: exit 130, every pooled container removed, nothing of the run left', async () => {
    const { args, root } = await agentRun('untrusted-repo', [
      { tool_calls: [exec('sleep 60')] },
      { text: 'never reached' },
    ]);
    const child = startCfh(args);
    const dir = await waitForEvent(root, 'tool_container_taken');
    const runId = runIdOf(dir);
    // Both kinds' pools are up, and one call is in hand.
    expect((await containersOfRun(runId)).length).toBeGreaterThan(1);
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    expect(await containersOfRun(runId)).toEqual([]);
    const events = await readEvents(dir);
    const started = ofType(events, 'tool_container_started').map((e) => e.containerId);
    const removed = ofType(events, 'tool_container_removed').map((e) => e.containerId);
    expect(new Set(removed)).toEqual(new Set(started));
  });

  it('SIGKILL mid-run: `cfh reap --run` removes the pooled containers left behind', async () => {
    const { args, root } = await agentRun('untrusted-repo', [
      { tool_calls: [exec('sleep 60')] },
      { text: 'never reached' },
    ]);
    const child = startCfh(args);
    const dir = await waitForEvent(root, 'tool_container_taken');
    const runId = runIdOf(dir);
    child.kill('SIGKILL');
    await child.catch(() => undefined);
    expect((await containersOfRun(runId)).length).toBeGreaterThan(1);
    // Scoped to this test's run: a global reap could take another test's objects.
    const reap = await cfh(['reap', '--json', '--run', runId]);
    expect(reap.exitCode, reap.stderr).toBe(0);
    expect(await containersOfRun(runId)).toEqual([]);
  });

  it('a fill that fails fails the run closed: no later call runs, nothing is left', async () => {
    // A container the test makes squats the name of the pool's next refill (`-c3`): the
    // engine refuses that create, so the fill fails while call 1 runs. Call 2 takes the
    // container made before it; call 3 must not run at all.
    const small = await profile('pool-squat', 'tools: [exec]\npool:\n  size: 1\n');
    const { args, root } = await agentRun(small, [
      { tool_calls: [exec('sleep 2')] },
      { tool_calls: [exec('echo second')] },
      { tool_calls: [exec('echo third')] },
      { text: 'never reached' },
    ]);
    const child = startCfh(args);
    const dir = await waitForEvent(root, 'tool_container_taken');
    const runId = runIdOf(dir);
    const [first] = ofType(await readEvents(dir), 'tool_container_taken');
    const image = (await docker.getContainer(String(first?.containerId)).inspect()).Config.Image;
    const squatter = await docker.createContainer({
      name: `cfh-tools-${runId}-c3`,
      Image: image,
      Cmd: ['true'],
      Labels: { 'cfh-test.tool-pool': runId },
      HostConfig: { NetworkMode: 'none' },
    });
    try {
      const r = await child;
      expect(r.exitCode, r.stderr).toBe(1);
      const events = await readEvents(dir);
      const executed = ofType(events, 'tool_executed');
      expect(executed.map((x) => x.callId)).toEqual(['call-0001', 'call-0002']);
      expect(await stdoutOf(dir, 2)).toBe('second\n');
      expect(ofType(events, 'tool_container_taken')).toHaveLength(2);
      const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
      expect(report.status).toBe('failed');
      expect(report.error.boundary).toBe('engine');
      expect(await containersOfRun(runId)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      await squatter.remove({ force: true });
    }
  });
});
