// Adversarial: a model's tool calls are as contained as any sandbox. Whatever the
// lifetime, the calls run as a non-root user with no capabilities, no-new-privileges, the
// run's seccomp filter and no network; an escape attempted through `exec` fails, and the
// evidence records the attempt and its output.
import { describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { dockerBridgeAddress } from './local-servers.js';
import {
  agentRunArgs,
  cfh,
  docker,
  startCfh,
  waitForEvent,
  containersOfRun,
  copySampleRepo,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  useScratch,
} from './helpers.js';

const scratch = useScratch('agent-containment');

const exec = (...command: string[]) => ({ name: 'exec', input: { command } });

// Each probe prints one line; the test reads them back from outputs/.
const PROBES = [
  exec('grep', '-E', '^(CapEff|CapPrm|NoNewPrivs|Seccomp):', '/proc/self/status'),
  exec('id', '-u'),
  exec(
    'python3',
    '-c',
    `import socket\ns=socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ntry:\n  s.connect(("${dockerBridgeAddress()}", 9))\n  print("inet connected")\nexcept OSError as e:\n  print("inet", e.errno)\ntry:\n  socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n  print("packet allowed")\nexcept OSError as e:\n  print("packet", e.errno)`,
  ),
  exec(
    'python3',
    '-c',
    'import ctypes,os\nlibc=ctypes.CDLL(None,use_errno=True)\nr=libc.unshare(0x10000000)\nprint("unshare", r, ctypes.get_errno())',
  ),
  exec(
    'sh',
    '-c',
    'echo x > /etc/cfh-escape 2>/dev/null && echo rootfs writable || echo rootfs read-only',
  ),
  exec('cat', '/var/run/docker.sock'),
];

describe.each(['per-run', 'per-call'])('tool calls in %s containers', (lifetime) => {
  it('run unprivileged, filtered and offline; escapes fail and are recorded', async () => {
    const repo = await copySampleRepo(scratch.path(`repo-${lifetime}`));
    const script = scratch.path(`probes-${lifetime}.yaml`);
    // One call a turn, so per-call containers and outputs line up with the probes.
    const turns = [...PROBES.map((p) => ({ tool_calls: [p] })), { text: 'done' }];
    await writeFile(script, JSON.stringify({ turns }));
    const root = scratch.path(`art-${lifetime}`);
    const run = { workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script };
    const r = await cfh(agentRunArgs(run, ['--tool-lifetime', lifetime]));
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const out = async (n: number, stream = 'stdout'): Promise<string> =>
      readFile(path.join(dir, 'outputs', `call-000${n}.${stream}`), 'utf8').catch(() => '');

    const status = await out(1);
    expect(status).toMatch(/^CapPrm:\s+0000000000000000$/m);
    expect(status).toMatch(/^CapEff:\s+0000000000000000$/m);
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(status).toMatch(/^Seccomp:\s+2$/m);
    expect(Number((await out(2)).trim())).toBeGreaterThan(0);
    // Network disabled: a loopback-only namespace; the host's bridge address has no route
    // (ENETUNREACH = 101), and the filter refuses AF_PACKET sockets (EPERM = 1).
    expect((await out(3)).trim()).toBe('inet 101\npacket 1');
    // A new mount namespace is refused (EPERM).
    expect((await out(4)).trim()).toBe('unshare -1 1');
    expect((await out(5)).trim()).toBe('rootfs read-only');
    expect(await out(6, 'stderr')).toMatch(/No such file or directory/);

    const events = await readEvents(dir);
    const executed = events.filter((e) => e.type === 'tool_executed').map((e) => e.data);
    expect(executed).toHaveLength(PROBES.length);
    expect(executed.map((e) => e.status)).toEqual([
      'success',
      'success',
      'success',
      'success',
      'success',
      'error',
    ]);
    // Every call ran in a container the evidence names, with the run's recorded filter.
    const started = events.filter((e) => e.type === 'tool_container_started');
    const used = new Set(executed.map((e) => e.containerId));
    // Per-call: a container of its own for each call (from the warm pool, which also made
    // the ones left warm at the end); per-run: one for all.
    expect(used.size).toBe(lifetime === 'per-call' ? PROBES.length : 1);
    for (const id of used) expect(started.map((e) => e.data.containerId)).toContain(id);
    if (lifetime === 'per-run') expect(started).toHaveLength(1);
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.containerSpec.seccomp.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });
});

describe('a tool container lost mid-call', () => {
  it('is a containment failure: the run fails, the model is not told it was a timeout', async () => {
    const repo = await copySampleRepo(scratch.path('repo-lost'));
    const script = scratch.path('lost.yaml');
    const turns = [{ tool_calls: [exec('sleep', '30')] }, { text: 'never' }];
    await writeFile(script, JSON.stringify({ turns }));
    const root = scratch.path('art-lost');
    const run = { workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script };
    const child = startCfh(agentRunArgs(run));
    const dir = await waitForEvent(root, 'tool_container_started');
    const [container] = await containersOfRun(runIdOf(dir));
    if (container === undefined) throw new Error('no tool container');
    await new Promise((r) => setTimeout(r, 500));
    // Someone with engine access removes the container under the running call.
    await docker.getContainer(container.Id).remove({ force: true });
    const result = await child;
    expect(result.exitCode, result.stderr).toBe(1);
    expect(await readJson(path.join(dir, 'state.json'))).toMatchObject({
      state: 'failed',
      terminalReason: 'error:tool_container_lost',
    });
    const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
    expect(report.error).toMatchObject({ code: 'tool_container_lost', boundary: 'engine' });
    const events = await readEvents(dir);
    expect(events.map((e) => e.type)).not.toContain('tool_executed');
    expect(events.find((e) => e.type === 'tool_call_aborted')?.data).toMatchObject({
      reason: 'run_failed',
    });
    // The model's channel holds an aborted answer, not a "timeout" and not the engine detail.
    const transcript = await readFile(path.join(dir, 'transcript.jsonl'), 'utf8');
    expect(transcript).toContain('\\"status\\":\\"aborted\\"');
    expect(transcript).not.toContain('timeout');
    expect(transcript).not.toContain('stopped during a call');
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });
});
