// Adversarial round 3, second pass, class 7 against the call supervisor
// (src/tools/call-supervisor.ts) and the turn's cancellation in `cfh serve --stdio`: two
// routes the fix's tests do not take. (1) The work is a child run's: the turn's call is
// `delegate`, and the child's own exec is the one that writes later; `turn/cancel` must stop
// the child's calls too. (2) The call waits for the caller's approval when the turn is
// cancelled; an answer that arrives after the cancellation must not start it.
import { execa } from 'execa';
import { access, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startCfh, useScratch } from './helpers.js';
import { ServeClient } from './serve-support.js';
import { profile } from './adv-round3-support.js';

const scratch = useScratch('adv3-cancel');

const exists = (file: string): Promise<boolean> =>
  access(file).then(
    () => true,
    () => false,
  );

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const LATE = 'sleep 3; echo late > /workspace/after-cancel';

describe('class 7: a cancelled turn stops work it started elsewhere', () => {
  it("turn/cancel while a child run's exec sleeps: the child's command does not write afterwards", async () => {
    const repo = await scratch.sampleRepo();
    const p = await profile(scratch, {
      tools: ['exec', 'read_file'],
      workspace: { mode: 'rw' },
      children: { worker: { tools: ['exec'], workspace: { mode: 'rw' } } },
    });
    const script = await scratch.file(
      'deleg.yaml',
      [
        'turns:',
        '  - tool_calls:',
        '      - { name: delegate, input: { profile: worker, task: write it } }',
        '  - text: done',
        '  - text: again',
        'children:',
        '  worker:',
        '    turns:',
        '      - tool_calls:',
        `          - { name: exec, input: { command: [sh, -c, '${LATE}'] } }`,
        '      - text: child done',
        '',
      ].join('\n'),
    );
    const client = new ServeClient([
      '--profile',
      p,
      '--workspace',
      repo,
      '--artifact-root',
      scratch.path('art-deleg'),
      '--script',
      script,
    ]);
    const { sessionId } = await client.call('session/open', {});
    const { turnId } = await client.call('turn/start', { sessionId, prompt: 'go' });
    await client.note('event', (p) => (p.record as { type: string }).type === 'child_started');
    await sleep(1500);
    await client.call('turn/cancel', { sessionId, turnId });
    const done = await client.note('turn/completed', (p) => p.turnId === turnId);
    await sleep(5000);
    const planted = await exists(path.join(repo, 'after-cancel'));
    await client.call('session/close', { sessionId }).catch(() => undefined);
    await client.end();
    expect(done).toMatchObject({ status: 'cancelled' });
    expect(planted).toBe(false);
  });

  it('an approval answered after its turn was cancelled does not start the call', async () => {
    const repo = await scratch.sampleRepo();
    const p = await profile(scratch, {
      tools: ['exec'],
      workspace: { mode: 'rw' },
      policy: [{ id: 'ask-exec', match: { tool: 'exec' }, decision: 'ask_user', reason: 'asks' }],
    });
    const script = await scratch.file(
      'ask.yaml',
      [
        'turns:',
        '  - tool_calls:',
        "      - { name: exec, input: { command: [sh, -c, 'echo ran > /workspace/after-cancel'] } }",
        '  - text: done',
        '  - text: again',
        '',
      ].join('\n'),
    );
    const client = new ServeClient([
      '--profile',
      p,
      '--workspace',
      repo,
      '--artifact-root',
      scratch.path('art-ask'),
      '--script',
      script,
    ]);
    const { sessionId } = await client.call('session/open', {});
    const { turnId } = await client.call('turn/start', { sessionId, prompt: 'go' });
    // Hold the answer: the request is kept, answered only after the cancellation.
    await client.note('approval/request', () => true, 30_000);
    const request = client.notes.find((n) => n.method === 'approval/request');
    const asked = {
      id: request?.id,
      digest: (request?.params as { argsDigest: string } | undefined)?.argsDigest,
    };
    await client.call('turn/cancel', { sessionId, turnId });
    const done = await client.note('turn/completed', (q) => q.turnId === turnId);
    client.write({
      jsonrpc: '2.0',
      id: asked.id,
      result: { argsDigest: asked.digest, answer: 'once' },
    });
    await sleep(3000);
    const ran = await exists(path.join(repo, 'after-cancel'));
    await client.call('session/close', { sessionId }).catch(() => undefined);
    await client.end();
    expect(done).toMatchObject({ status: 'cancelled' });
    expect(ran).toBe(false);
  });
});

/** Removes the containers of the runs under `art` (cfh was killed: nothing removed them). */
async function removeRunContainers(art: string): Promise<void> {
  const runs = await readdir(art).catch(() => [] as string[]);
  for (const run of runs) {
    const ps = await execa('docker', ['ps', '-aq', '--filter', `label=cfh.run-id=${run}`], {
      reject: false,
    });
    const ids = ps.stdout.split('\n').filter((x) => x !== '');
    if (ids.length > 0) await execa('docker', ['rm', '-f', ...ids], { reject: false });
  }
}

/** Waits until the run under `art` has started a tool container (at most 20 s). */
async function untilStarted(art: string): Promise<boolean> {
  for (let i = 0; i < 200; i += 1) {
    const runs = await readdir(art).catch(() => [] as string[]);
    const events =
      runs[0] === undefined
        ? ''
        : await readFile(path.join(art, runs[0], 'events.jsonl'), 'utf8').catch(() => '');
    if (events.includes('container_started"')) return true;
    await sleep(100);
  }
  return false;
}

describe('class 7: cfh gone, not told to stop', () => {
  it.each([
    ['SIGHUP', 'direct'],
    ['SIGKILL', 'direct'],
    ['SIGHUP', 'agent'],
    ['SIGKILL', 'agent'],
  ] as const)(
    'cfh sandbox run (%s, %s command) ended mid-exec: the command does not write the workspace afterwards',
    async (sig, route) => {
      const repo = await scratch.sampleRepo();
      const art = scratch.path(`art-${sig}-${route}`);
      const command =
        route === 'direct'
          ? ['--', 'sh', '-c', LATE]
          : [
              '--prompt',
              'go',
              '--non-interactive',
              '--script',
              await scratch.file(
                `agent-${sig}.yaml`,
                [
                  'turns:',
                  '  - tool_calls:',
                  `      - { name: exec, input: { command: [sh, -c, '${LATE}'] } }`,
                  '  - text: done',
                  '',
                ].join('\n'),
              ),
            ];
      const child = startCfh([
        'sandbox',
        'run',
        '--profile',
        'untrusted-repo',
        '--workspace',
        repo,
        '--artifact-root',
        art,
        ...command,
      ]);
      child.catch(() => undefined);
      try {
        // The command is running once its container started (then half a second more).
        expect(await untilStarted(art), 'the command started').toBe(true);
        await sleep(500);
        child.kill(sig);
        await child.catch(() => undefined);
        await sleep(5000);
        expect(await exists(path.join(repo, 'after-cancel'))).toBe(false);
      } finally {
        await removeRunContainers(art);
      }
    },
  );

  it('cfh mcp whose client closes its input mid-call: the command does not write the workspace afterwards', async () => {
    const repo = await scratch.sampleRepo();
    const art = scratch.path('art-mcp-eof');
    const child = startCfh([
      'mcp',
      '--profile',
      'untrusted-repo',
      '--workspace',
      repo,
      '--artifact-root',
      art,
    ]);
    child.catch(() => undefined);
    const send = (m: unknown): void => {
      child.stdin.write(`${JSON.stringify(m)}\n`);
    };
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    try {
      send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'adv3', version: '0' },
        },
      });
      for (let i = 0; i < 100 && !out.includes('"id":1'); i += 1) await sleep(100);
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      send({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'sandbox_exec', arguments: { argv: ['sh', '-c', LATE] } },
      });
      // The exec is running (its container started, the command sleeping) before the end.
      for (let i = 0; i < 100; i += 1) {
        const runs = await readdir(art).catch(() => [] as string[]);
        const events =
          runs[0] === undefined
            ? ''
            : await readFile(path.join(art, runs[0], 'events.jsonl'), 'utf8').catch(() => '');
        if (events.includes('"tool_container_started"')) break;
        await sleep(100);
      }
      await sleep(1000);
      const endedAt = Date.now();
      child.stdin.end();
      await child.catch(() => undefined);
      const exitedAfter = Date.now() - endedAt;
      await sleep(5000);
      const runs = await readdir(art);
      const types = (await readFile(path.join(art, runs[0] ?? '', 'events.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { type: string }).type);
      expect(
        await exists(path.join(repo, 'after-cancel')),
        `cfh mcp exited ${exitedAfter} ms after its input ended; events: ${types.join(' ')}`,
      ).toBe(false);
    } finally {
      child.kill('SIGKILL');
      await removeRunContainers(art);
    }
  });
});

describe('class 7: a host tool call in a cancelled turn', () => {
  it('turn/cancel while a host exec tool runs: the host program does not finish its work afterwards', async () => {
    const repo = await scratch.sampleRepo();
    const marker = scratch.path('host-marker');
    const prog = await scratch.file(
      'slow-host.mjs',
      `import { writeFileSync } from 'node:fs';\nsetTimeout(() => writeFileSync(${JSON.stringify(marker)}, 'late'), 3000);\n`,
    );
    const p = await profile(scratch, {
      tools: ['read_file'],
      hostTools: [
        {
          name: 'deploy',
          kind: 'exec',
          argv: [process.execPath, prog],
          input: {},
          riskClass: 'read_only',
          sideEffectClass: 'none',
          resourceScope: 'project',
        },
      ],
    });
    const script = await scratch.file(
      'host.yaml',
      [
        'turns:',
        '  - tool_calls:',
        '      - { name: host__deploy, input: {} }',
        '  - text: done',
        '  - text: again',
        '',
      ].join('\n'),
    );
    const client = new ServeClient([
      '--profile',
      p,
      '--workspace',
      repo,
      '--artifact-root',
      scratch.path('art-host'),
      '--script',
      script,
    ]);
    const { sessionId } = await client.call('session/open', {});
    const { turnId } = await client.call('turn/start', { sessionId, prompt: 'go' });
    await client.note(
      'event',
      (q) => (q.record as { type: string }).type === 'permission_decision',
    );
    await sleep(1000);
    await client.call('turn/cancel', { sessionId, turnId });
    const done = await client.note('turn/completed', (q) => q.turnId === turnId);
    await sleep(4500);
    const wrote = await exists(marker);
    await client.call('session/close', { sessionId }).catch(() => undefined);
    await client.end();
    expect(done).toMatchObject({ status: 'cancelled' });
    expect(wrote).toBe(false);
  });
});
