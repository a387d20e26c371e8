// Agent runs against an OpenAI-compatible endpoint (a stand-in on 127.0.0.1 speaking Chat
// Completions and Responses as the `openai` package defines them), chosen by a profile's
// `model` section or by flags: parallel tool calls, an invalid-arguments call returned to the
// model as a typed failure (AH-TOOL-5), a 429 retried after its retry-after and recorded
// (AH-LIFE-5), a stream cut mid-tool-call, usage absent when the endpoint sends none
// (AH-USAGE-1), the route recorded by reference on the snapshot and every attempt and never
// changed by a failure (AH-INV-2, AH-INV-5), a 401 and a context-length error typed at the
// model-gateway boundary. `cfh audit` passes for every run (openai-routes.test.ts: children,
// compaction, CFC, sessions, capabilities and doctor).
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import {
  contextLengthError,
  failWith,
  okCalls,
  okText,
  startOpenAiApiServer,
} from '../fixtures/openai-api-server.js';
import { readJson, useScratch } from './helpers.js';
import { copyRun, forge } from './audit-forge.js';
import { auditRunDirectory } from '../../src/evidence/audit/audit.js';
import { KEY, MODEL, openAiRuns, pathOf, resultFor, section } from './openai-support.js';

const scratch = useScratch('openai-gateway');
const { profileFile, run, auditedAndClean } = openAiRuns(scratch);

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
});
