// Agent runs against an OpenAI-compatible endpoint (a stand-in on 127.0.0.1 speaking Chat
// Completions and Responses as the `openai` package defines them), chosen by a profile's
// `model` section or by flags: parallel tool calls, an invalid-arguments call returned to the
// model as a typed failure (AH-TOOL-5), a 429 retried after its retry-after and recorded
// (AH-LIFE-5), a stream cut mid-tool-call, usage absent when the endpoint sends none
// (AH-USAGE-1), the route recorded by reference on the snapshot and every attempt and never
// changed by a failure (AH-INV-2, AH-INV-5), a 401 and a context-length error typed at the
// model-gateway boundary, a child on another route (AH-DEL-1), compaction, and CFC holding a
// labelled value back from a route not cleared for it. `cfh audit` passes for every run.
import { describe, expect, it } from 'vitest';
import { chmod, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  contextLengthError,
  failWith,
  okCalls,
  okText,
  startOpenAiApiServer,
  type OpenAiApiServer,
  type WireRequest,
} from '../fixtures/openai-api-server.js';
import {
  agentRunArgs,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  useScratch,
} from './helpers.js';
import { ServeClient } from './serve-support.js';
import { copyRun, forge } from './audit-forge.js';
import { auditRunDirectory } from '../../src/evidence/audit/audit.js';

const scratch = useScratch('openai-gateway');
const KEY = 'sk-openai-route-key-never-recorded-51c2';
const MODEL = 'qwen3-coder';

type Wire = 'chat' | 'responses';
const pathOf = (wire: Wire) => (wire === 'chat' ? '/v1/chat/completions' : '/v1/responses');

function section(server: OpenAiApiServer, wire: Wire, extra: Record<string, unknown> = {}) {
  return {
    provider: 'openai-compatible',
    baseUrl: server.baseURL,
    model: MODEL,
    wire,
    credential: { fromEnv: 'OPENAI_API_KEY' },
    contextWindow: 32768,
    ...extra,
  };
}

async function profileFile(name: string, body: Record<string, unknown>): Promise<string> {
  return scratch.file(`${name}.json`, JSON.stringify({ extends: 'default', name, ...body }));
}

async function run(name: string, profile: string | undefined, extra: string[] = [], env = {}) {
  const root = scratch.path(`art-${name}`);
  const r = await cfh(
    agentRunArgs(
      {
        workspace: await scratch.sampleRepo(),
        artifactRoot: root,
        prompt: 'look around',
        ...(profile === undefined ? {} : { profile }),
      },
      extra,
    ),
    { env: { OPENAI_API_KEY: KEY, ...env } },
  );
  const dir = await onlyRunDir(root);
  return { r, dir, root, events: await readEvents(dir) };
}

/**
 * `cfh audit --json` of the run passes: no check fails or is inconclusive, and the only warn
 * is the signature's (the suite signs nothing). No file of the run holds the key.
 */
async function auditedAndClean(root: string, dir: string): Promise<Map<string, string>> {
  const audit = await cfh(['audit', '--json', '--artifact-root', root, runIdOf(dir)]);
  expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
  const { checks } = JSON.parse(audit.stdout) as { checks: { id: string; verdict: string }[] };
  const off = checks.filter(
    (c) => !['pass', 'not-applicable'].includes(c.verdict) && c.id !== 'integrity.signature',
  );
  expect(off, audit.stdout).toEqual([]);
  const files = await readdir(dir, { recursive: true });
  for (const f of files) {
    const text = await readFile(path.join(dir, f), 'utf8').catch(() => '');
    expect(text, f).not.toContain(KEY);
  }
  return new Map(checks.map((c) => [c.id, c.verdict]));
}

/** The text the model was sent for one call's result, whichever the wire. */
function resultFor(q: WireRequest | undefined, id: string): string | undefined {
  const body = q?.body ?? {};
  const chat = (
    body['messages'] as { role: string; tool_call_id?: string; content?: string }[] | undefined
  )?.find((m) => m.role === 'tool' && m.tool_call_id === id);
  if (chat !== undefined) return chat.content;
  const items =
    (body['input'] as { type?: string; call_id?: string; output?: string }[] | undefined) ?? [];
  return items.find((i) => i.type === 'function_call_output' && i.call_id === id)?.output;
}

describe.each(['chat', 'responses'] as const)(
  'agent run on an openai-compatible route, wire %s',
  (wire) => {
    it('parallel calls, an invalid call, a 429 and a cut stream retried on the one route, usage as reported', async () => {
      const server = await startOpenAiApiServer();
      try {
        server.enqueue(
          failWith(429, { headers: { 'retry-after': '0.02' } }),
          okCalls(
            [
              { id: 'call_ls', name: 'list_dir', input: { path: '.' } },
              { id: 'call_rd', name: 'read_file', input: { path: 'calc.py' } },
            ],
            { chunk: 4, usage: { input: 300, output: 20 } },
          ),
          okCalls([{ id: 'call_bad', name: 'read_file', input: {} }], {
            rawArguments: '{"path": "calc',
          }),
          okCalls([{ id: 'call_cut', name: 'list_dir', input: { path: '.' } }], {
            cutAfterArgumentDeltas: 1,
          }),
          okText('all read', { usage: null }),
        );
        const profile = await profileFile(`route-${wire}`, {
          model: section(server, wire, { pricing: { inputPerMTok: 1, outputPerMTok: 2 } }),
        });
        const { r, dir, root, events } = await run(`multi-${wire}`, profile);
        expect(r.exitCode, r.stderr).toBe(0);
        expect(r.stdout.trim()).toBe('all read');
        // Every request on the one route: its path, model and key.
        // 429, calls, the invalid call, the cut stream, its retry: the answer.
        expect(server.requests).toHaveLength(5);
        for (const q of server.requests) {
          expect([q.method, q.url, q.body['model']]).toEqual(['POST', pathOf(wire), MODEL]);
          expect(q.headers['authorization']).toBe(`Bearer ${KEY}`);
          expect(q.body['stream']).toBe(true);
        }
        // Both parallel results went back, paired by id; the invalid call came back typed.
        const third = server.requests[3];
        expect(resultFor(server.requests[2], 'call_ls')).toContain('calc.py');
        expect(resultFor(server.requests[2], 'call_rd')).toContain('def ');
        expect(resultFor(third, 'call_bad')).toMatch(
          /^\[tool call failed\] [\s\S]*invalid arguments/,
        );
        const route = {
          provider: 'openai-compatible',
          baseURL: server.baseURL,
          model: MODEL,
          wire,
          credential: 'env:OPENAI_API_KEY',
        };
        const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
        expect(snapshot.model).toStrictEqual({
          adapter: 'openai-compatible',
          route,
          languageModel: true,
        });
        const started = events.filter((e) => e.type === 'model_call_started');
        expect(started).toHaveLength(3);
        for (const e of started) expect(e.data['route']).toStrictEqual(route);
        expect(
          events.filter((e) => e.type === 'model_retry').map((e) => e.data['attempt']),
        ).toEqual([1, 1]);
        // The invalid call is refused as a typed observation, and the run goes on.
        expect(
          events.filter((e) => e.type === 'tool_rejected').map((e) => e.data['reason']),
        ).toEqual(['invalid_arguments']);
        const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
        expect(report.usage[0].usage).toStrictEqual({ input_tokens: 300, output_tokens: 20 });
        // Priced with the route's own prices; the attempt without counters is not.
        expect(report.costEstimate.rateCard.file).toBe('profile model.pricing');
        expect(report.costEstimate.perAttempt[0]).toMatchObject({ estimated: 0.00034 });
        expect(report.costEstimate.totalOmitted).toBe('incomplete_coverage');
        // The endpoint sent no usage for the last turn: absent, never zero.
        expect(report.usage[report.usage.length - 1].usage).toStrictEqual({});
        expect(snapshot.context).toMatchObject({ windowTokens: 32768, windowSource: 'model' });
        const verdicts = await auditedAndClean(root, dir);
        // The audit priced every attempt again from the route's card, rebuilt from the snapshot.
        expect(verdicts.get('usage.cost')).toBe('pass');
        expect(verdicts.get('usage.as-reported')).toBe('pass');
        expect(verdicts.get('model.one-route')).toBe('pass');
        // Mutation: one attempt re-pointed at another endpoint, the log re-sealed: the audit
        // names exactly that (AH-INV-5).
        const copy = await copyRun(dir, scratch.path(`forged-${wire}`));
        await forge(copy, (f) => {
          const e = f.events.filter((x) => x['type'] === 'model_call_started')[1];
          if (e !== undefined) e['data'].route = { ...route, baseURL: 'http://127.0.0.1:9/v1' };
        });
        const after = await auditRunDirectory(copy, {});
        expect(after.checks.filter((c) => c.verdict === 'fail').map((c) => c.id)).toEqual([
          'model.one-route',
        ]);
      } finally {
        await server.close();
      }
    });
  },
);

describe('openai-compatible route failures and flags', () => {
  it('flags alone choose the route; a 401 fails the run typed, with one request', async () => {
    const server = await startOpenAiApiServer();
    try {
      server.enqueue(failWith(401), okText('must not be reached'));
      const { r, dir, root } = await run('unauthorized', undefined, [
        '--provider',
        'openai-compatible',
        '--base-url',
        server.baseURL,
        '--model',
        'llama3',
      ]);
      expect(r.exitCode, r.stderr).toBe(1);
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]?.body['model']).toBe('llama3');
      const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
      expect(report.error).toMatchObject({
        code: 'model_request_rejected',
        boundary: 'model-gateway',
      });
      expect(report.model.route).toMatchObject({
        wire: 'chat',
        credential: 'env:OPENAI_API_KEY',
        model: 'llama3',
      });
      await auditedAndClean(root, dir);
    } finally {
      await server.close();
    }
  });

  it('a context-length error fails the run as rejected; a local route sends no key', async () => {
    const server = await startOpenAiApiServer();
    try {
      server.enqueue(contextLengthError(), okText('must not be reached'));
      const profile = await profileFile('local', {
        model: section(server, 'responses', { credential: 'none' }),
      });
      const { r, dir, root } = await run('context-length', profile);
      expect(r.exitCode, r.stderr).toBe(1);
      expect(r.stderr).toContain('context length');
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]?.headers['authorization']).toBeUndefined();
      const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
      expect(report.error).toMatchObject({
        code: 'model_request_rejected',
        boundary: 'model-gateway',
      });
      expect(report.model.route.credential).toBe('none');
      await auditedAndClean(root, dir);
    } finally {
      await server.close();
    }
  });

  it('a child on another route talks to its own endpoint, recorded in its own snapshot', async () => {
    const parent = await startOpenAiApiServer();
    const child = await startOpenAiApiServer();
    try {
      parent.enqueue(
        okCalls([
          { id: 'call_dg', name: 'delegate', input: { profile: 'scout', task: 'list the files' } },
        ]),
        okText('the scout reported'),
      );
      child.enqueue(okText('two python files'));
      const profile = await profileFile('two-routes', {
        tools: ['list_dir'],
        model: section(parent, 'chat'),
        children: {
          scout: {
            description: 'lists files',
            tools: ['list_dir'],
            model: section(child, 'responses', {
              model: 'child-model',
              credential: { fromEnv: 'CHILD_KEY' },
            }),
          },
        },
      });
      const { r, dir, root } = await run('child-route', profile, [], {
        CHILD_KEY: 'sk-child-key-5555',
      });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe('the scout reported');
      expect(parent.requests.map((q) => q.url)).toEqual([
        '/v1/chat/completions',
        '/v1/chat/completions',
      ]);
      expect(
        child.requests.map((q) => [q.url, q.body['model'], q.headers['authorization']]),
      ).toEqual([['/v1/responses', 'child-model', 'Bearer sk-child-key-5555']]);
      expect(resultFor(parent.requests[1], 'call_dg')).toContain('two python files');
      const [childId] = await readdir(path.join(dir, 'children'));
      const childSnap = await readJson<Record<string, any>>(
        path.join(dir, 'children', childId ?? '', 'snapshot.json'),
      );
      expect(childSnap.model.route).toStrictEqual({
        provider: 'openai-compatible',
        baseURL: child.baseURL,
        model: 'child-model',
        wire: 'responses',
        credential: 'env:CHILD_KEY',
      });
      const snap = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
      expect(snap.model.route.baseURL).toBe(parent.baseURL);
      await auditedAndClean(root, dir);
    } finally {
      await parent.close();
      await child.close();
    }
  });

  it('compaction summarises through the route, recorded as on any gateway', async () => {
    const server = await startOpenAiApiServer();
    try {
      const list = (id: string, input: number) =>
        okCalls([{ id, name: 'list_dir', input: { path: '.' } }], { usage: { input, output: 10 } });
      server.enqueue(
        list('c1', 2000),
        list('c2', 4000),
        list('c3', 6000),
        (q) => {
          const text = JSON.stringify(q.body);
          return text.includes('conversation-to-summarise')
            ? okText('Listed the workspace three times.')
            : failWith(400, { error: { message: 'expected the summarising request' } });
        },
        okText('done', { usage: { input: 1200, output: 5 } }),
      );
      const profile = await profileFile('compacting', {
        model: section(server, 'chat'),
        context: { compactAt: 5000 },
      });
      const { r, dir, root, events } = await run('compaction', profile);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(events.filter((e) => e.type.startsWith('compaction_')).map((e) => e.type)).toEqual([
        'compaction_started',
        'compaction_completed',
      ]);
      // The summarising request had no tools and the turn after it carried the summary.
      expect(server.requests[3]?.body['tools']).toBeUndefined();
      expect(JSON.stringify(server.requests[4]?.body)).toContain(
        'Listed the workspace three times.',
      );
      const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
      expect(snapshot.context).toMatchObject({
        state: 'armed',
        provider: { adapter: 'openai-compatible' },
      });
      await auditedAndClean(root, dir);
    } finally {
      await server.close();
    }
  });

  it('CFC holds a labelled value back from a route not cleared for it: never on the wire', async () => {
    const secret = 'ZK-route-not-cleared-7781';
    const secrets = scratch.path('secrets');
    await mkdir(secrets);
    await writeFile(path.join(secrets, 'token'), `${secret}\n`);
    await chmod(secrets, 0o755);
    const server = await startOpenAiApiServer();
    try {
      server.enqueue(
        okCalls([{ id: 'call_secret', name: 'read_file', input: { path: '/secrets/token' } }]),
        okText('could not see it'),
      );
      const profile = await profileFile('uncleared', {
        model: section(server, 'chat'),
        cfc: { mode: 'enforce-explicit', modelClearance: [] },
        mounts: [{ source: secrets, target: '/secrets', label: { confidentiality: ['secret'] } }],
      });
      const { r, dir, root } = await run('cfc-route', profile);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(server.requests).toHaveLength(2);
      for (const q of server.requests) expect(JSON.stringify(q.body)).not.toContain(secret);
      expect(resultFor(server.requests[1], 'call_secret')).toBeDefined();
      await auditedAndClean(root, dir);
    } finally {
      await server.close();
    }
  });

  it('a serve session on flags alone answers two turns through the route', async () => {
    const server = await startOpenAiApiServer();
    try {
      server.enqueue(okText('one'), okText('two'));
      const root = scratch.path('art-serve');
      const client = new ServeClient(
        [
          '--workspace',
          await scratch.sampleRepo(),
          '--artifact-root',
          root,
          '--provider',
          'openai-compatible',
          '--base-url',
          server.baseURL,
          '--model',
          MODEL,
        ],
        { OPENAI_API_KEY: KEY },
      );
      const opened = await client.call('session/open', {});
      const sessionId = String(opened.sessionId);
      expect(await client.turn(sessionId, 'say one')).toMatchObject({ finalAnswer: 'one' });
      expect(await client.turn(sessionId, 'say two')).toMatchObject({ finalAnswer: 'two' });
      expect(await client.end()).toBe(0);
      expect(server.requests.map((q) => [q.url, q.body['model']])).toEqual([
        ['/v1/chat/completions', MODEL],
        ['/v1/chat/completions', MODEL],
      ]);
      // The second turn carries the first: the session's context went to the same route.
      expect(JSON.stringify(server.requests[1]?.body)).toContain('say one');
      const dir = path.join(root, String(opened.runId));
      const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
      expect(snapshot.model.route).toMatchObject({ provider: 'openai-compatible', wire: 'chat' });
      await auditedAndClean(root, dir);
    } finally {
      await server.close();
    }
  });

  it('capabilities advertise the gateway and the route; doctor probes the route', async () => {
    const server = await startOpenAiApiServer();
    try {
      server.models = [MODEL, 'other'];
      const profile = await profileFile('probed', { model: section(server, 'responses') });
      const caps = await cfh(['capabilities', '--json', '--profile', profile]);
      expect(caps.exitCode, caps.stderr).toBe(0);
      const c = JSON.parse(caps.stdout) as Record<string, any>;
      expect(c.modelGateways).toEqual(['scripted', 'anthropic', 'openai-compatible']);
      expect(c.modelRoutes.profileRoute).toStrictEqual({
        provider: 'openai-compatible',
        baseUrl: server.baseURL,
        model: MODEL,
        wire: 'responses',
        credential: 'env:OPENAI_API_KEY',
        contextWindow: 32768,
        pricing: 'rate card',
      });
      const doctor = async (env: Record<string, string>) => {
        const r = await cfh(['doctor', '--json', '--profile', profile], { env });
        const checks = (
          JSON.parse(r.stdout) as { checks: { name: string; ok: boolean; detail: string }[] }
        ).checks;
        return checks.filter((k) => k.name.startsWith('model-'));
      };
      expect(await doctor({ OPENAI_API_KEY: KEY })).toMatchObject([
        { name: 'model-credential', ok: true },
        {
          name: 'model-endpoint',
          ok: true,
          detail: expect.stringContaining('the model is listed'),
        },
      ]);
      expect(server.requests.at(-1)).toMatchObject({
        method: 'GET',
        url: '/v1/models',
        headers: { authorization: `Bearer ${KEY}` },
      });
      server.models = ['other'];
      const missing = await doctor({});
      expect(missing.map((k) => k.ok)).toEqual([false]);
      expect(missing[0]?.detail).toContain('OPENAI_API_KEY');
      const unlisted = await doctor({ OPENAI_API_KEY: KEY });
      expect(unlisted[1]).toMatchObject({
        ok: false,
        detail: expect.stringContaining('not among'),
      });
    } finally {
      await server.close();
    }
  });
});
