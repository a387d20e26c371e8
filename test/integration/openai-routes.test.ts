// Routes beyond one run's (openai-compatible stand-ins on 127.0.0.1): a child on another
// route than its parent's (AH-DEL-1), compaction through the route, CFC holding a labelled
// value back from a route not cleared for it, a serve session from flags, capabilities and
// doctor on a profile's route. `cfh audit` passes for every run.
import { describe, expect, it } from 'vitest';
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { failWith, okCalls, okText, startOpenAiApiServer } from '../fixtures/openai-api-server.js';
import { cfh, readJson, useScratch } from './helpers.js';
import { ServeClient } from './serve-support.js';
import { KEY, MODEL, openAiRuns, resultFor, section } from './openai-support.js';

const scratch = useScratch('openai-routes');
const { profileFile, run, auditedAndClean } = openAiRuns(scratch);

describe('openai-compatible routes: children, compaction, CFC, sessions, operators', () => {
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

  it('a resumed run continues on the same route, its old conversation sent on the same wire', async () => {
    const server = await startOpenAiApiServer();
    try {
      server.enqueue(
        okCalls([{ id: 'call_ls', name: 'list_dir', input: { path: '.' } }]),
        okText('first answer'),
        okText('resumed answer'),
      );
      const profile = await profileFile('resumed', {
        tools: ['list_dir'],
        model: section(server, 'chat'),
      });
      const first = await run('resume-1', profile);
      expect(first.r.exitCode, first.r.stderr).toBe(0);
      const r = await cfh(
        [
          'sandbox',
          'resume',
          path.basename(first.dir),
          '--artifact-root',
          first.root,
          '--prompt',
          'go on',
          '--json',
        ],
        { env: { OPENAI_API_KEY: KEY } },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const resumed = path.join(first.root, (JSON.parse(r.stdout) as { runId: string }).runId);
      const last = server.requests.at(-1);
      expect(last?.url).toBe('/v1/chat/completions');
      // The old turn's call and its result are in what the route is sent, then the new prompt.
      expect(resultFor(last, 'call_ls')).toBeDefined();
      expect(JSON.stringify(last?.body['messages'])).toContain('go on');
      const snap = await readJson<Record<string, any>>(path.join(resumed, 'snapshot.json'));
      expect(snap.model.route.baseURL).toBe(server.baseURL);
      await auditedAndClean(first.root, resumed);
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
        // Anthropic's deprecation table says nothing of another provider's model.
        expect(checks.map((k) => k.name)).not.toContain('model');
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
