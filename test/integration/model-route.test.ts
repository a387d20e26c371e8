// AH-INV-5: a provider failure never moves a run to another credential, route or model.
// Against a Messages API stand-in on loopback that is overloaded (529) on every request,
// the run must fail on the route it chose, naming the gateway, after a bounded number of
// attempts that all carried the same key, model and path; no other answer (another model,
// the embedded scripted replay) may complete it. A transient failure is retried on the same
// route, and the answer that ends the run is the one that route gave.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import type { MessagesApiServer, RecordedRequest } from '../fixtures/messages-api-server.js';
import {
  agentRunArgs,
  cfh,
  containersOfRun,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  useScratch,
} from './helpers.js';

const scratch = useScratch('model-route');
const KEY = 'sk-test-route-key-2b9d';
const MODEL = 'claude-route-test';

/** Every request the run sent to the provider, each checked to be on the one route. */
function expectOneRoute(server: MessagesApiServer): RecordedRequest[] {
  const sent = server.requests.filter((q) => q.url.split('?')[0] === '/v1/messages');
  for (const q of sent) {
    expect(q.method).toBe('POST');
    // SDK 1.x sends the key as `Authorization: Bearer`; older ones as `x-api-key`.
    expect(q.headers['x-api-key'] ?? q.headers['authorization']).toMatch(
      new RegExp(`^(Bearer )?${KEY}$`),
    );
    expect((q.body as { model: string }).model).toBe(MODEL);
  }
  return sent;
}

async function runAgainst(server: MessagesApiServer, name: string) {
  const root = scratch.path(name);
  const r = await cfh(
    agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, prompt: 'hi' }),
    { env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: server.baseURL, CFH_MODEL: MODEL } },
  );
  const dir = await onlyRunDir(root);
  return { r, dir, events: await readEvents(dir) };
}

describe('no silent route change on provider failure (AH-INV-5)', () => {
  it('a provider that stays overloaded fails the run on its own route, every attempt the same key and model', async () => {
    const { startMessagesApiServer, failWith, okText } =
      await import('../fixtures/messages-api-server.js');
    const server = await startMessagesApiServer();
    try {
      // More failures than the run may try: what it does not use stays queued. An answer
      // waits behind them: a run that went past its retry bound would end on it.
      server.enqueue(...Array.from({ length: 6 }, () => failWith(529)), okText('rerouted'));
      const { r, dir, events } = await runAgainst(server, 'art-overloaded');
      expect(r.exitCode, r.stderr).toBe(1);
      expect(r.stdout).not.toContain('rerouted');
      // The default budget: 2 retries, so 3 requests, every one on the chosen route.
      expect(expectOneRoute(server)).toHaveLength(3);
      const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
      expect(snapshot.model).toMatchObject({
        adapter: 'anthropic',
        route: { provider: 'anthropic', model: MODEL, credential: 'env:ANTHROPIC_API_KEY' },
      });
      const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
      expect(report.model).toStrictEqual(snapshot.model);
      expect(report.status).toBe('failed');
      expect(report.error).toMatchObject({
        code: 'model_retries_exhausted',
        boundary: 'model-gateway',
      });
      expect(events.filter((e) => e.type === 'model_retry')).toHaveLength(2);
      const started = events.filter((e) => e.type === 'model_call_started');
      expect(started.map((e) => e.data['adapter'])).toEqual(['anthropic']);
      for (const t of ['model_call_completed', 'final_answer_produced', 'tool_requested'])
        expect(
          events.filter((e) => e.type === t),
          t,
        ).toEqual([]);
      expect(await containersOfRun(runIdOf(dir))).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('a transient failure is retried on the same route, and its answer ends the run', async () => {
    const { startMessagesApiServer, failWith, okText } =
      await import('../fixtures/messages-api-server.js');
    const server = await startMessagesApiServer();
    try {
      server.enqueue(failWith(529), okText('answered on the chosen route'));
      const { r, dir, events } = await runAgainst(server, 'art-transient');
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe('answered on the chosen route');
      expect(expectOneRoute(server)).toHaveLength(2);
      const completed = events.filter((e) => e.type === 'model_call_completed');
      expect(completed.map((e) => e.data['adapter'])).toEqual(['anthropic']);
      const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
      const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
      expect(report.model).toStrictEqual(snapshot.model);
    } finally {
      await server.close();
    }
  });
});
