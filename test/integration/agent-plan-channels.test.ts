// The class: a channel out of a read-only planning container that can make a host process
// act (governance extension, "Planning mode"; AH-CONT-1). `--plan` lets exec run when every
// mount is ro and the network is disabled; a ro mount still carries connect(2) to a unix
// socket and write(2) to a FIFO. Against host-side listeners this file starts in the
// workspace: a unix socket server (and an abstract-namespace one, and the engine socket's
// path) gets no connection, because planning's seccomp filter makes no AF_UNIX socket
// (EPERM, in the evidence's exec result); a FIFO in a mount makes exec a mutation that
// planning denies (planning_mode, naming the FIFO), and its host reader receives nothing.
import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, ownBySandbox, readEvents, useScratch } from './helpers.js';
import { eventsOf, execScript } from './approval-support.js';
import { engineRuntimes } from './network-harness.js';

const scratch = useScratch('plan-chan');
const ABSTRACT = `cfh-plan-${randomBytes(4).toString('hex')}`;

const PROBE = String.raw`
import os, socket
def t(label, f):
    try:
        f(); print('@@ %s ok' % label, flush=True)
    except OSError as e:
        print('@@ %s err%d' % (label, e.errno), flush=True)
def unix(addr):
    def go():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3); s.connect(addr); s.sendall(b'MUTATE\n')
    return go
def pair():
    a, b = socket.socketpair(); a.sendall(b'x'); assert b.recv(1) == b'x'
def fifo():
    fd = os.open('/workspace/cmd.fifo', os.O_WRONLY | os.O_NONBLOCK); os.write(fd, b'MUTATE\n')
t('create', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
t('path', unix('/workspace/svc.sock'))
t('abstract', unix('\0${ABSTRACT}'))
t('engine', unix('/var/run/docker.sock'))
t('pair', pair)
if os.path.exists('/workspace/cmd.fifo'):
    t('fifo', fifo)
`;

interface Listener {
  readonly server: Server;
  readonly received: string[];
}

const servers: Server[] = [];
/** The FIFO readers this file started (`cat`), killed by their own handle at the end. */
const readers: { kill(signal: 'SIGKILL'): void; catch(f: () => undefined): Promise<unknown> }[] =
  [];

async function listen(where: string): Promise<Listener> {
  const received: string[] = [];
  const server = createServer((s) => {
    received.push('connection');
    s.on('data', (d) => received.push(d.toString('latin1')));
    s.on('error', () => undefined);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(where, resolve));
  return { server, received };
}

afterAll(async () => {
  for (const r of readers) r.kill('SIGKILL');
  await Promise.all(readers.map((r) => r.catch(() => undefined)));
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

async function repoWithSocket(): Promise<{ repo: string; sock: Listener }> {
  const repo = await scratch.sampleRepo();
  await writeFile(path.join(repo, 'probe.py'), PROBE);
  await ownBySandbox(path.join(repo, 'probe.py'));
  const sock = await listen(path.join(repo, 'svc.sock'));
  // Anyone may connect: only the filter stands between the sandbox and the service.
  await chmod(path.join(repo, 'svc.sock'), 0o777);
  return { repo, sock };
}

async function planRun(repo: string, name: string, runtime: string) {
  const script = await scratch.file(
    `${name}.yaml`,
    execScript([['python3', '/workspace/probe.py']]),
  );
  const root = scratch.path(`art-${name}`);
  const r = await cfh(
    agentRunArgs(
      { workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script, prompt: 'plan' },
      ['--plan', '--workspace-mode', 'ro', '--runtime', runtime],
    ),
  );
  const dir = await onlyRunDir(root);
  return { r, dir, events: await readEvents(dir) };
}

// runc only: under runsc (2022-12 build) a cold plan run here took past the test's timeout
// twice in three tries, and the sentry answers socket(AF_UNIX) itself (docs/conformance.md,
// deviations); its host-socket refusal is gVisor's --host-uds default, not cfh's filter.
describe.each(['runc'])('planning mode under %s: no channel out of the ro container', (runtime) => {
  it('a unix socket on the ro workspace, abstract or the engine path: no AF_UNIX socket is made', async (ctx) => {
    if (!(await engineRuntimes()).includes(runtime))
      ctx.skip(`the engine has no ${runtime} runtime`);
    const { repo, sock } = await repoWithSocket();
    const abstract = await listen(`\0${ABSTRACT}`);
    const { r, dir, events } = await planRun(repo, `sock-${runtime}`, runtime);
    expect(r.exitCode, r.stderr).toBe(0);
    // exec ran (nothing in the mounts makes it a mutation) ...
    expect(eventsOf(events, 'call-0001', 'tool_executed')[0]?.data.status).toBe('success');
    const transcript = await readFile(path.join(dir, 'transcript.jsonl'), 'utf8');
    // ... and the filter refused socket(2) for AF_UNIX: EPERM at creation, so every
    // connect fails the same way; a socketpair is still the caller's own.
    for (const label of ['create', 'path', 'abstract', 'engine'])
      expect(transcript, label).toContain(`@@ ${label} err1`);
    expect(transcript).toContain('@@ pair ok');
    expect(sock.received).toEqual([]);
    expect(abstract.received).toEqual([]);
  });

  it('a FIFO on the ro workspace makes exec a mutation: denied, and the host reader gets nothing', async (ctx) => {
    if (!(await engineRuntimes()).includes(runtime))
      ctx.skip(`the engine has no ${runtime} runtime`);
    const { repo, sock } = await repoWithSocket();
    const fifo = path.join(repo, 'cmd.fifo');
    await execa('mkfifo', ['-m', '0666', fifo]);
    let got = '';
    const cat = execa('cat', [fifo], { reject: false, buffer: false });
    readers.push(cat);
    cat.stdout.on('data', (d: Buffer) => (got += d.toString('latin1')));
    const { r, events } = await planRun(repo, `fifo-${runtime}`, runtime);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(eventsOf(events, 'call-0001', 'tool_denied')[0]?.data).toMatchObject({
      rule: 'planning_mode',
      status: 'denied',
    });
    const ofCall = events.filter((e) => JSON.stringify(e.data).includes('call-0001'));
    expect(JSON.stringify(ofCall)).toContain('the FIFO /workspace/cmd.fifo');
    expect(eventsOf(events, 'call-0001', 'tool_executed')).toEqual([]);
    expect(got).toBe('');
    expect(sock.received).toEqual([]);
  });
});
