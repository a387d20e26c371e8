// Adversarial round 3 on `cfh serve --stdio` sessions: class 7 (a cancellation that stops
// the stream but not the work: `turn/cancel` answers an in-flight exec `aborted`, and the
// session's warm tool container stays; the command must not go on writing the workspace
// after the turn was cancelled), class 8 (two processes restoring one session at once: "a
// session whose writer is alive is refused (session_live_elsewhere)", so only one of them
// may continue it), and class 1 (a session keeps one context label across its turns: a
// secret handle minted in one turn is still judged in the next).
import { access, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEvents, useScratch } from './helpers.js';
import { ServeClient } from './serve-support.js';
import { profile, secretDir } from './adv-round3-support.js';

const scratch = useScratch('adv3-serve');

const exists = (file: string): Promise<boolean> =>
  access(file).then(
    () => true,
    () => false,
  );

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves once the process says it is serving (its first line on stderr). */
function ready(c: ServeClient): Promise<void> {
  return new Promise((resolve) => {
    let seen = '';
    c.child.stderr.on('data', (d: Buffer) => {
      seen += d.toString('utf8');
      if (seen.includes('serving sessions')) resolve();
    });
  });
}

describe('class 7: turn/cancel stops the work, not only the stream', () => {
  it('an exec cancelled with its turn does not write the workspace afterwards', async () => {
    const repo = await scratch.sampleRepo();
    const script = await scratch.file(
      'slow.yaml',
      [
        'turns:',
        '  - tool_calls:',
        "      - { name: exec, input: { command: [sh, -c, 'sleep 4; echo late > /workspace/after-cancel'] } }",
        '  - text: done',
        '  - text: again',
        '',
      ].join('\n'),
    );
    const client = new ServeClient([
      '--profile',
      'untrusted-repo',
      '--workspace',
      repo,
      '--artifact-root',
      scratch.path('art-cancel'),
      '--script',
      script,
    ]);
    const { sessionId } = await client.call('session/open', {});
    const { turnId } = await client.call('turn/start', { sessionId, prompt: 'go' });
    await client.note(
      'event',
      (p) => (p.record as { type: string }).type === 'permission_decision',
    );
    await sleep(1000);
    await client.call('turn/cancel', { sessionId, turnId });
    expect(await client.note('turn/completed', (p) => p.turnId === turnId)).toMatchObject({
      status: 'cancelled',
    });
    // The session stays open (its containers warm); the cancelled command would have
    // written 3 s from now.
    await sleep(6000);
    const planted = await exists(path.join(repo, 'after-cancel'));
    await client.call('session/close', { sessionId });
    await client.end();
    expect(planted).toBe(false);
  });
});

describe('class 8: one session continued by two processes at once', () => {
  it('two restores of the same session, sent together from two processes, continue it once', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-race');
    const script = await scratch.file('talk.yaml', 'turns:\n  - text: one\n  - text: two\n');
    const args = [
      '--profile',
      'untrusted-repo',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--script',
      script,
    ];
    const first = new ServeClient(args);
    const { sessionId } = await first.call('session/open', {});
    expect(await first.turn(String(sessionId), 'first')).toMatchObject({ status: 'answered' });
    await first.call('session/close', { sessionId });
    await first.end();
    // Both processes up and serving before either is asked, then asked at once, three
    // times over (each round on a session closed again): the check of a live writer and the
    // new run that makes one are not one step.
    let opened: unknown[] = [];
    for (let round = 0; round < 3 && opened.length < 2; round += 1) {
      const a = new ServeClient(args);
      const b = new ServeClient(args);
      await Promise.all([ready(a), ready(b)]);
      const [ra, rb] = await Promise.all([
        a.request('session/restore', { sessionId }),
        b.request('session/restore', { sessionId }),
      ]);
      opened = [ra, rb].filter((r) => r.error === undefined);
      for (const [c, r] of [
        [a, ra],
        [b, rb],
      ] as const)
        if (r.error === undefined) await c.call('session/close', { sessionId });
      await a.end();
      await b.end();
    }
    expect(opened.length, JSON.stringify(opened)).toBe(1);
  });
});

describe('class 1: a session keeps its context label across turns', () => {
  it.each(['enforce-explicit', 'enforce-strict'])(
    '%s: a handle minted in turn 1 is refused a workspace write in turn 2',
    async (mode) => {
      const repo = await scratch.sampleRepo();
      const secrets = await secretDir(scratch, { token: 'serve-secret-3Hq' });
      const p = await profile(scratch, {
        tools: ['read_file', 'list_dir', 'write_file'],
        workspace: { mode: 'rw', label: { integrity: ['repo'] } },
        cfc: { mode, modelClearance: [] },
        mounts: [
          {
            source: secrets,
            target: '/secrets',
            mode: 'ro',
            label: { confidentiality: ['secret'], integrity: ['vault'] },
          },
        ],
      });
      const script = await scratch.file(
        `turns-${mode}.yaml`,
        [
          'turns:',
          '  - tool_calls: [{ name: read_file, input: { path: /secrets/token } }]',
          '  - text: read',
          "  - tool_calls: [{ name: write_file, input: { path: out.txt, content: '{{handle:1}}' } }]",
          '  - text: wrote',
          '',
        ].join('\n'),
      );
      const root = scratch.path(`art-label-${mode}`);
      const client = new ServeClient([
        '--profile',
        p,
        '--workspace',
        repo,
        '--artifact-root',
        root,
        '--script',
        script,
      ]);
      // The caller (trusted) is asked when a flow is refused: it says no.
      client.onApproval = (m) => ({ argsDigest: m.params?.argsDigest, answer: 'deny', why: 'no' });
      const opened = await client.call('session/open', {});
      const sessionId = String(opened.sessionId);
      await client.turn(sessionId, 'read the token');
      await client.turn(sessionId, 'write it down');
      await client.call('session/close', { sessionId });
      await client.end();
      expect(await exists(path.join(repo, 'out.txt'))).toBe(false);
      const events = await readEvents(String(opened.runDir));
      const flow = events.find((e) => e.type === 'cfc_flow' && e.data.tool === 'write_file');
      expect(flow?.data.verdict).toBe('deny');
    },
  );
});

describe('class 8: messages that arrive together', () => {
  it('two session/open lines in one write leave no run behind unfinished', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-two-opens');
    const script = await scratch.file('two-opens.yaml', 'turns:\n  - text: one\n');
    const client = new ServeClient([
      '--profile',
      'untrusted-repo',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--script',
      script,
    ]);
    client.raw(
      [
        JSON.stringify({ jsonrpc: '2.0', id: 'a', method: 'session/open', params: {} }),
        JSON.stringify({ jsonrpc: '2.0', id: 'b', method: 'session/open', params: {} }),
      ].join('\n'),
    );
    await sleep(5000);
    await client.end();
    const states: string[] = [];
    for (const run of await readdir(root)) {
      const state = await readFile(path.join(root, run, 'state.json'), 'utf8').catch(() => '{}');
      states.push(String((JSON.parse(state) as { state?: string }).state));
    }
    expect(states.length).toBeGreaterThan(0);
    for (const s of states) expect(['completed', 'cancelled', 'failed']).toContain(s);
  });
});
