// session/restore (AH-INT-4) through the real CLI and engine: after the serving cfh was
// SIGKILLed, a new process continues the session in a new run linked to the old chain's last
// hash, and what the killed one left on the engine is reaped; a restore with another profile
// or another directory at the workspace path is refused naming the field; a session whose
// chain was edited is refused as broken. Nothing is attached to another authority context.
import { describe, expect, it } from 'vitest';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cfh, containersOfRun, copySampleRepo, readEvents, useScratch } from './helpers.js';
import { ServeClient } from './serve-support.js';

const scratch = useScratch('serve-restore');
const TALK =
  'turns:\n  - text: one\n    tool_calls:\n      - { name: list_dir, input: { path: . } }\n  - text: two\n  - text: three\n';

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

/** A session with one answered turn; the client is left open. */
async function oneTurn(
  repo: string,
  root: string,
): Promise<{ client: ServeClient; sessionId: string; runId: string; script: string }> {
  const script = await scratch.file(`talk-${path.basename(root)}.yaml`, TALK);
  const client = new ServeClient(serveArgs(repo, root, script));
  const opened = await client.call('session/open', {});
  const sessionId = String(opened.sessionId);
  expect(await client.turn(sessionId, 'first')).toMatchObject({ status: 'answered' });
  return { client, sessionId, runId: String(opened.runId), script };
}

async function refusal(client: ServeClient, params: Record<string, unknown>): Promise<unknown> {
  const r = await client.request('session/restore', params);
  return r.error?.data;
}

describe('session/restore', () => {
  it('continues a session after its cfh was SIGKILLed, and reaps what it left', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-kill');
    const { client, sessionId, runId, script } = await oneTurn(repo, root);
    // The killed process's tool container is still there: its warm file-tool container.
    expect((await containersOfRun(runId)).length).toBeGreaterThan(0);
    client.child.kill('SIGKILL');
    await client.child.catch(() => undefined);
    const old = await readEvents(path.join(root, runId));
    expect(old.some((e) => e.type === 'run_finished')).toBe(false);

    // The scripted model replays its file from the start in a new process: what it says
    // next is written there (the route names the file, so the model is the same).
    await writeFile(script, 'turns:\n  - text: two\n');
    const next = new ServeClient(serveArgs(repo, root, script));
    const restored = await next.call('session/restore', { sessionId });
    expect(restored).toMatchObject({ sessionId, restoredFrom: runId, turns: 1 });
    expect(await next.turn(sessionId, 'second')).toMatchObject({
      turnId: 'turn-0002',
      status: 'answered',
    });
    await next.call('session/close', { sessionId });
    expect(await next.end()).toBe(0);
    // The new run's sweep removed the killed run's containers; its own are gone at close.
    expect(await containersOfRun(runId)).toEqual([]);
    expect(await containersOfRun(String(restored.runId))).toEqual([]);
    const events = await readEvents(String(restored.runDir));
    expect(events.find((e) => e.type === 'session_restored')?.data).toMatchObject({
      fromRunId: runId,
      fromLastSeq: old.at(-1)?.seq,
      fromLastHash: (old.at(-1) as { hash?: string } | undefined)?.hash,
    });
    const audit = await cfh(['audit', String(restored.runDir)]);
    expect(audit.stdout).toMatch(/ok: \d+ pass, 0 fail/);
  });

  it('refuses another profile, another workspace directory, and an edited chain', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-refuse');
    const { client, sessionId, runId, script } = await oneTurn(repo, root);
    expect(await client.end()).toBe(0);

    const other = await scratch.file(
      'other.yaml',
      'extends: untrusted-repo\nname: other\nbudgets:\n  maxModelTurns: 5\n',
    );
    const next = new ServeClient(serveArgs(repo, root, script));
    // Another profile: refused, naming the field; nothing is opened.
    expect(await refusal(next, { sessionId, profile: other })).toMatchObject({
      code: 'session_restore_mismatch',
      details: { fields: expect.arrayContaining(['profile']) },
    });
    // Another directory at the same path: the workspace's identity differs, and so does the
    // object its mount binds.
    await rename(repo, `${repo}-moved`);
    await copySampleRepo(repo);
    expect(await refusal(next, { sessionId })).toMatchObject({
      code: 'session_restore_mismatch',
      details: { fields: ['workspace', 'mounts'] },
    });
    await rename(repo, `${repo}-copy`);
    await rename(`${repo}-moved`, repo);
    // An edited line of the old chain: broken, fails closed.
    const file = path.join(root, runId, 'events.jsonl');
    const body = await readFile(file, 'utf8');
    await writeFile(file, body.replace('"turn-0001"', '"turn-0009"'));
    expect(await refusal(next, { sessionId })).toMatchObject({ code: 'session_restore_broken' });
    await writeFile(file, body);
    // Restored as it was: accepted.
    expect(await next.call('session/restore', { sessionId })).toMatchObject({
      restoredFrom: runId,
    });
    expect(await next.end()).toBe(0);
    expect(await containersOfRun(runId)).toEqual([]);
  });
});
