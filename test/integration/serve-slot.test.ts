// `cfh serve --stdio` holds one session slot, claimed before anything is awaited: requests
// written together cannot open two runs, and a call naming a session that is still opening
// is refused typed. End of input and SIGTERM close whatever was opened, or is opening: the
// run ends with its evidence (`cfh audit` passes) and nothing of it is left: no container,
// network or volume of the process, no draft copy, no egress configuration (AH-INT-5,
// AH-LIFE-3). Real CLI and engine, scripted model.
import { afterEach, describe, expect, it } from 'vitest';
import { chmod, mkdir, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  cfh,
  docker,
  objectsOwnedBy,
  onlyRunDir,
  readEvents,
  readJson,
  useScratch,
} from './helpers.js';
import { ServeClient, type RpcMessage } from './serve-support.js';

const scratch = useScratch('serve-slot');
const TALK = 'turns:\n  - text: one\n  - text: two\n';

/** The cfh processes a test started: what a failing test left is removed by their pid. */
const started: number[] = [];
afterEach(async () => {
  for (const pid of started.splice(0)) {
    const filters = { label: [`cfh.owner-pid=${pid}`, `cfh.owner-host=${os.hostname()}`] };
    for (const c of await docker.listContainers({ all: true, filters }))
      await docker.getContainer(c.Id).remove({ force: true });
    for (const n of await docker.listNetworks({ filters })) await docker.getNetwork(n.Id).remove();
  }
});

async function audited(runDir: string): Promise<void> {
  const r = await cfh(['audit', runDir]);
  expect(r.stdout + r.stderr).toMatch(/ok: \d+ pass, 0 fail/);
  expect(r.exitCode).toBe(0);
}

let n = 0;
/**
 * A draft session with an allowlist network: a draft copy, a guard container, a network and
 * an egress configuration while it is open. Drafts and temporary files go to private
 * directories, so what is left there is this process's.
 */
async function heavyServe(talk = TALK): Promise<{
  client: ServeClient;
  pid: number;
  root: string;
  drafts: string;
  tmp: string;
}> {
  n += 1;
  const repo = await scratch.sampleRepo();
  // The copy is made as the workspace's owner, who must pass through to the draft root.
  await chmod(path.dirname(repo), 0o755);
  const drafts = scratch.path(`drafts-${n}`);
  const tmp = scratch.path(`tmp-${n}`);
  await mkdir(drafts);
  await chmod(drafts, 0o711);
  await mkdir(tmp);
  const root = scratch.path(`art-${n}`);
  const script = await scratch.file(`talk-${n}.yaml`, talk);
  const client = new ServeClient(
    [
      ...plainArgs(repo, root, script),
      '--workspace-mode',
      'draft',
      '--network',
      'allowlist',
      // Never connected to: the posture is what is opened.
      '--allow',
      '127.0.0.1:9',
    ],
    { CFH_DRAFT_ROOT: drafts, TMPDIR: tmp },
  );
  const pid = client.child.pid ?? -1;
  started.push(pid);
  return { client, pid, root, drafts, tmp };
}

function plainArgs(repo: string, root: string, script: string): string[] {
  return [
    '--profile',
    'untrusted-repo',
    '--workspace',
    repo,
    '--artifact-root',
    root,
    '--script',
    script,
  ];
}

/** Nothing of the process on the engine, no draft copy, no egress configuration. */
async function nothingLeft(pid: number, drafts: string, tmp: string): Promise<void> {
  expect(await objectsOwnedBy(pid)).toEqual([]);
  expect(await readdir(drafts)).toEqual([]);
  expect((await readdir(tmp)).filter((f) => f.startsWith('cfh-egress-'))).toEqual([]);
}

/** SIGTERM from outside, as an operator sends it (execa's kill would SIGKILL after 5 s). */
function terminate(pid: number): void {
  process.kill(pid, 'SIGTERM');
}

function refusedWith(m: RpcMessage | undefined): string | undefined {
  return m?.error?.data?.code;
}

describe('cfh serve --stdio: one session slot', () => {
  it('refuses a second open written with the first; end of input leaves nothing', async () => {
    const { client, pid, root, drafts, tmp } = await heavyServe();
    const answers = await Promise.all(
      client.together([
        ['session/open', {}],
        ['session/open', {}],
      ]),
    );
    const opened = answers.filter((m) => m.result !== undefined);
    const refused = answers.filter((m) => m.error !== undefined);
    expect(opened).toHaveLength(1);
    expect(refused.map(refusedWith)).toEqual(['session_open']);
    expect(refused[0]?.error?.code).toBe(-32000);
    const sessionId = String(opened[0]?.result?.sessionId);
    const runDir = String(opened[0]?.result?.runDir);
    // The one opened is unaffected: it answers, and holds what it opened.
    expect(await client.turn(sessionId, 'say one')).toMatchObject({
      status: 'answered',
      finalAnswer: 'one',
    });
    expect((await objectsOwnedBy(pid)).length).toBeGreaterThan(0);
    expect(await readdir(drafts)).toHaveLength(1);
    expect(await client.end()).toBe(0);
    // The refused open made no run; the open one ended with its evidence.
    expect(await onlyRunDir(root)).toBe(runDir);
    expect(await readJson(path.join(runDir, 'state.json'))).toMatchObject({ state: 'completed' });
    await nothingLeft(pid, drafts, tmp);
    await audited(runDir);
  });

  it('refuses calls naming a session still being restored, and a second open', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-restore');
    const script = await scratch.file('restore.yaml', TALK);
    const first = new ServeClient(plainArgs(repo, root, script));
    started.push(first.child.pid ?? -1);
    const { sessionId, runDir: firstDir } = await first.call('session/open', {});
    expect(await first.end()).toBe(0);

    const next = new ServeClient(plainArgs(repo, root, script));
    const pid = next.child.pid ?? -1;
    started.push(pid);
    const id = String(sessionId);
    const [restore, turn, cancel, replay, close, open] = await Promise.all(
      next.together([
        ['session/restore', { sessionId: id }],
        ['turn/start', { sessionId: id, prompt: 'too early' }],
        ['turn/cancel', { sessionId: id }],
        ['events/replay', { sessionId: id, fromSeq: 1 }],
        ['session/close', { sessionId: id }],
        ['session/open', {}],
      ]),
    );
    expect(restore?.result).toMatchObject({
      sessionId: id,
      restoredFrom: path.basename(String(firstDir)),
    });
    expect([turn, cancel, replay, close].map(refusedWith)).toEqual([
      'session_opening',
      'session_opening',
      'session_opening',
      'session_opening',
    ]);
    expect(refusedWith(open)).toBe('session_open');
    // The restored session is unaffected by what was refused.
    expect(await next.turn(id, 'now')).toMatchObject({ turnId: 'turn-0001', status: 'answered' });
    expect(await next.call('session/close', { sessionId: id })).toMatchObject({
      status: 'completed',
    });
    expect(await next.end()).toBe(0);
    expect(await objectsOwnedBy(pid)).toEqual([]);
    await audited(String(firstDir));
    await audited(String(restore?.result?.runDir));
  });

  it('SIGTERM while a session opens: its run ends cancelled with its evidence, nothing left', async () => {
    const { client, pid, root, drafts, tmp } = await heavyServe();
    const [open] = client.together([['session/open', {}]]);
    // The run exists (its directory, its draft copy) and its egress is being opened.
    await client.note('event', (p) => (p.record as { type: string }).type === 'run_created');
    terminate(pid);
    expect((await client.child).exitCode).toBe(143);
    // Answered before cfh exits (a cfh that exits first leaves it unanswered).
    const late = new Promise<undefined>((r) => {
      setTimeout(() => {
        r(undefined);
      }, 1000);
    });
    const answer = await Promise.race([open, late]);
    expect(refusedWith(answer)).toBe('serve_stopping');
    const runDir = await onlyRunDir(root);
    expect(await readJson(path.join(runDir, 'state.json'))).toMatchObject({ state: 'cancelled' });
    await nothingLeft(pid, drafts, tmp);
    await audited(runDir);
  });

  it('SIGTERM while a turn runs in an open session: the turn is cancelled, the run ends', async () => {
    const { client, pid, root, drafts, tmp } = await heavyServe(
      'turns:\n  - tool_calls:\n      - { name: exec, input: { command: [sleep, "120"] } }\n',
    );
    const { sessionId, runDir } = await client.call('session/open', {});
    const { turnId } = await client.call('turn/start', { sessionId, prompt: 'sleep' });
    // The call's container is running when the signal comes.
    await client.note(
      'event',
      (p) => (p.record as { type: string }).type === 'tool_container_started',
    );
    // A restore while the turn runs is refused like any second open.
    const again = await client.request('session/restore', { sessionId });
    expect(refusedWith(again)).toBe('session_open');
    terminate(pid);
    expect((await client.child).exitCode).toBe(143);
    expect(client.notes.find((m) => m.params?.turnId === turnId)?.params).toMatchObject({
      status: 'cancelled',
    });
    expect(await onlyRunDir(root)).toBe(runDir);
    const events = await readEvents(String(runDir));
    expect(events.find((e) => e.type === 'session_closed')?.data).toMatchObject({
      reason: 'signal',
    });
    await nothingLeft(pid, drafts, tmp);
    await audited(String(runDir));
  });
});
