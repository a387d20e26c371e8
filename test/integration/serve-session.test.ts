// `cfh serve --stdio` through the real CLI and engine, with the scripted model: a session
// of three turns across a reconnect (EOF closes it; session/restore continues it in a new
// process) with replay from a cursor read back from events.jsonl (AH-INT-1/3/4); a second
// turn while one runs refused (AH-INT-2); a turn cancelled mid-call answered `aborted` with
// the session still usable, and nothing of the run left on the engine at close (AH-INT-5,
// AH-LIFE-3); the protocol's error codes; the example client; `cfh audit` on every run.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import path from 'node:path';
import { readFile, writeFile } from 'node:fs/promises';
import {
  CFH_MAIN,
  baseEnv,
  cfh,
  containersOfRun,
  readEvents,
  REPO_ROOT,
  toolResults,
  useScratch,
} from './helpers.js';
import { ServeClient } from './serve-support.js';

const scratch = useScratch('serve-session');

const TALK = 'turns:\n  - text: one\n  - text: two\n  - text: three\n';

async function audited(runDir: string): Promise<void> {
  const r = await cfh(['audit', runDir]);
  if (r.exitCode !== 0)
    console.error(
      r.stdout
        .split('\n')
        .filter((l) => /^(FAIL|fail)|^ +at /.test(l))
        .join('\n'),
    );
  expect(r.stdout + r.stderr).toMatch(/ok: \d+ pass, 0 fail/);
  expect(r.exitCode).toBe(0);
}

function serveArgs(repo: string, root: string, script: string): string[] {
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

describe('cfh serve --stdio: a session', () => {
  it('keeps three turns across a reconnect, replaying from a cursor', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-three');
    const script = await scratch.file('talk.yaml', TALK);
    const first = new ServeClient(serveArgs(repo, root, script));
    const opened = await first.call('session/open', {});
    const sessionId = String(opened.sessionId);
    const firstRun = String(opened.runId);
    expect(opened).toMatchObject({ protocol: 'cfh.session/1', sessionId: firstRun, turns: 0 });
    expect(await first.turn(sessionId, 'say one')).toMatchObject({
      turnId: 'turn-0001',
      status: 'answered',
      finalAnswer: 'one',
    });
    // The cursor: the last event this client saw after the first turn.
    const cursor = Math.max(...first.events().map((e) => e.seq));
    expect(await first.turn(sessionId, 'say two')).toMatchObject({ turnId: 'turn-0002' });
    // Every event was notified once, in seq order, and each is in the file (durable first).
    const seen = first.events().map((e) => e.seq);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(new Set(seen).size).toBe(seen.length);
    // EOF closes the session: the run ends completed.
    expect(await first.end()).toBe(0);
    const firstDir = path.join(root, firstRun);
    const firstEvents = await readEvents(firstDir);
    expect(firstEvents.map((e) => e.type)).toEqual(
      expect.arrayContaining(['turn_started', 'turn_completed', 'session_closed', 'run_finished']),
    );
    const started = firstEvents.filter((e) => e.type === 'turn_started');
    expect(started.map((e) => (e.data as { requestId: unknown }).requestId)).toEqual([2, 3]);
    expect(started[0]?.data).toMatchObject({
      capture: { surface: 'stdio', subject: { vouched: false, uid: process.getuid?.() } },
    });

    // A new process: the session is restored and replays the old run from the cursor.
    const second = new ServeClient(serveArgs(repo, root, script));
    const restored = await second.call('session/restore', { sessionId });
    expect(restored).toMatchObject({ sessionId, restoredFrom: firstRun, turns: 2 });
    const replay = await second.call('events/replay', {
      sessionId,
      runId: firstRun,
      fromSeq: cursor + 1,
    });
    const replayed = replay.events as { seq: number; type: string }[];
    expect(replayed.map((e) => e.seq)).toEqual(
      firstEvents.filter((e) => e.seq > cursor).map((e) => e.seq),
    );
    expect(replayed.at(-1)?.type).toBe('run_finished');
    expect(await second.turn(sessionId, 'say three')).toMatchObject({
      turnId: 'turn-0003',
      status: 'answered',
    });
    const closed = await second.call('session/close', { sessionId });
    expect(closed).toMatchObject({ sessionId, status: 'completed', exitCode: 0 });
    expect(await second.end()).toBe(0);

    const secondDir = String(restored.runDir);
    const events = await readEvents(secondDir);
    const link = events.find((e) => e.type === 'session_restored');
    expect(link?.data).toMatchObject({
      sessionId,
      fromRunId: firstRun,
      fromLastSeq: firstEvents.at(-1)?.seq,
      fromLastHash: (firstEvents.at(-1) as { hash?: string } | undefined)?.hash,
      turns: 2,
    });
    // The model context of turn 3 is turns 1 and 2, rebuilt from the old transcript.
    const transcript = (await readFile(path.join(secondDir, 'transcript.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.stringify(JSON.parse(l)));
    const old = (await readFile(path.join(firstDir, 'transcript.jsonl'), 'utf8'))
      .trim()
      .split('\n');
    expect(transcript.slice(0, old.length)).toEqual(old);
    expect(transcript.slice(old.length).join('\n')).toContain('say three');
    await audited(firstDir);
    await audited(secondDir);
    // A direct command other than the one its turn digests: session.turns fails on it.
    const file = path.join(firstDir, 'transcript.jsonl');
    await writeFile(file, (await readFile(file, 'utf8')).replace('say two', 'say 2!!'));
    const after = await cfh(['audit', firstDir, '--json']);
    const checks = (JSON.parse(after.stdout) as { checks: { id: string; verdict: string }[] })
      .checks;
    expect(checks.find((c) => c.id === 'session.turns')?.verdict).toBe('fail');
  });

  it('refuses a second turn while one runs, cancels it, and stays usable', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-cancel');
    const script = await scratch.file(
      'slow.yaml',
      'turns:\n  - tool_calls:\n      - { name: exec, input: { command: [sleep, "120"] } }\n  - text: after cancel\n',
    );
    const client = new ServeClient(serveArgs(repo, root, script));
    const opened = await client.call('session/open', {});
    const sessionId = String(opened.sessionId);
    const runId = String(opened.runId);
    const { turnId } = await client.call('turn/start', { sessionId, prompt: 'sleep' });
    // The call is decided and running (its container started) before the overlap and cancel.
    await client.note(
      'event',
      (p) => (p.record as { type: string }).type === 'permission_decision',
    );
    await new Promise((r) => setTimeout(r, 1000));
    const overlap = await client.request('turn/start', { sessionId, prompt: 'again' });
    expect(overlap.error).toMatchObject({
      code: -32000,
      data: { code: 'turn_in_progress', details: { running: turnId } },
    });
    expect(await client.call('turn/cancel', { sessionId })).toMatchObject({ turnId });
    expect(await client.note('turn/completed', (p) => p.turnId === turnId)).toMatchObject({
      status: 'cancelled',
    });
    // The in-flight call was answered `aborted`; the transcript keeps it paired.
    const results = await toolResults(String(opened.runDir));
    expect(results.map((r) => r.observation.status)).toEqual(['aborted']);
    // The session goes on: the next turn runs in the same run.
    expect(await client.turn(sessionId, 'go on')).toMatchObject({
      turnId: 'turn-0002',
      status: 'answered',
      finalAnswer: 'after cancel',
    });
    await client.call('session/close', { sessionId });
    expect(await client.end()).toBe(0);
    expect(await containersOfRun(runId)).toEqual([]);
    const turns = (await readEvents(String(opened.runDir))).filter(
      (e) => e.type === 'turn_completed',
    );
    expect(turns.map((e) => (e.data as { status: string }).status)).toEqual([
      'cancelled',
      'answered',
    ]);
    await audited(String(opened.runDir));
  });

  it('numbers tool calls across turns: each turn output is kept under its own id', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-ids');
    // Each turn's exec prints: a numbering that restarts per turn would collide on
    // outputs/call-0001.stdout and fail the second turn.
    const echo = (word: string): string =>
      `  - tool_calls:\n      - { name: exec, input: { command: [echo, ${word}] } }\n  - text: said ${word}\n`;
    const script = await scratch.file('ids.yaml', `turns:\n${echo('first')}${echo('second')}`);
    const client = new ServeClient(serveArgs(repo, root, script));
    const opened = await client.call('session/open', {});
    const sessionId = String(opened.sessionId);
    const runDir = String(opened.runDir);
    expect(await client.turn(sessionId, 'one')).toMatchObject({ status: 'answered' });
    expect(await client.turn(sessionId, 'two')).toMatchObject({
      status: 'answered',
      finalAnswer: 'said second',
    });
    await client.call('session/close', { sessionId });
    expect(await client.end()).toBe(0);
    const decided = (await readEvents(runDir))
      .filter((e) => e.type === 'permission_decision')
      .map((e) => (e.data as { call_id: string }).call_id);
    expect(decided).toEqual(['call-0001', 'call-0002']);
    expect(await readFile(path.join(runDir, 'outputs', 'call-0001.stdout'), 'utf8')).toBe(
      'first\n',
    );
    expect(await readFile(path.join(runDir, 'outputs', 'call-0002.stdout'), 'utf8')).toBe(
      'second\n',
    );
    await audited(runDir);
  });

  it('answers what is not a valid call with the JSON-RPC codes', async () => {
    const repo = await scratch.sampleRepo();
    const client = new ServeClient(
      serveArgs(repo, scratch.path('art-codes'), await scratch.file('c.yaml', TALK)),
    );
    client.raw('{not json');
    client.raw('{"jsonrpc":"1.0","id":7,"method":"session/open"}');
    // Answered in order: by the time an unknown method is answered, both lines were.
    expect((await client.request('no/such')).error?.code).toBe(-32601);
    expect(client.orphans.map((m) => [m.id, m.error?.code])).toEqual([
      [null, -32700],
      [7, -32600],
    ]);
    const bad = await client.request('turn/start', { sessionId: 'x' });
    expect(bad.error?.code).toBe(-32602);
    const closed = await client.request('session/close', {
      sessionId: '20260101T000000Z-00000000',
    });
    expect(closed.error).toMatchObject({ code: -32000, data: { code: 'session_not_open' } });
    // Nothing was opened: EOF ends the server cleanly.
    expect(await client.end()).toBe(0);
  });

  it('runs the example client: two turns in one session', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-example');
    const r = await execa(
      process.execPath,
      [
        path.join(REPO_ROOT, 'examples/session/client.mjs'),
        '--profile',
        'untrusted-repo',
        '--workspace',
        repo,
        '--artifact-root',
        root,
      ],
      { reject: false, env: baseEnv({ CFH_MAIN }), extendEnv: false },
    );
    expect(r.exitCode).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.slice(0, 2).map((l) => l.turnId)).toEqual(['turn-0001', 'turn-0002']);
    expect(lines[2]).toMatchObject({ status: 'completed', exitCode: 0 });
    await audited(String(lines[2]?.runDir));
  });
});
