// Compaction in the loop with the scripted model (AH-LIFE-6/7): a long episode compacts, the
// next request is valid (pairs whole, first message verbatim), a failure is retried before
// the next request and a second one fails the run, and `disabled` never compacts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  firstUserMessage,
  newConversation,
  runAgentLoop,
  type AgentLoopDeps,
} from '../../src/engine/agent/agent-loop.js';
import { BudgetTracker } from '../../src/engine/agent/budgets.js';
import { compactionConfigOf, compactionSetup } from '../../src/engine/agent/compaction.js';
import { contextProblems } from '../../src/engine/agent/compaction-context.js';
import { AgentBudgets } from '../../src/config/profile-schema.js';
import { ContextSection } from '../../src/config/context-schema.js';
import { Script, ScriptedGateway } from '../../src/model/scripted-gateway.js';
import type { ModelGateway, ModelRequest } from '../../src/model/gateway.js';
import { BUILTIN_TOOLS } from '../../src/tools/builtins.js';
import { ToolRegistry } from '../../src/tools/contract.js';
import { CfhError } from '../../src/errors.js';
import { execution, runnerFrom, testMediator } from './helpers.js';
import { AnthropicGateway } from '../../src/model/anthropic-gateway.js';
import {
  okText,
  okToolUse,
  startMessagesApiServer,
  type MessagesApiServer,
} from '../fixtures/messages-api-server.js';

const read = { name: 'read_file', input: { path: 'a' } };
/** Turns that each read a file and bill the input given (a provider's count); then an answer. */
function longEpisode(inputs: readonly number[], extra: Partial<z.input<typeof Script>> = {}) {
  return {
    model: 'm',
    contextWindow: 10_000,
    turns: [
      ...inputs.map((input_tokens) => ({
        tool_calls: [read],
        usage: { input_tokens, output_tokens: 10 },
      })),
      { text: 'done', usage: { input_tokens: 100, output_tokens: 5 } },
    ],
    ...extra,
  };
}

/** The gateway, recording every request the loop sends (the summarising one included). */
function recording(inner: ModelGateway, requests: ModelRequest[]): ModelGateway {
  return {
    adapter: inner.adapter,
    route: inner.route,
    model: inner.model,
    counting: inner.counting,
    contextWindowTokens: inner.contextWindowTokens,
    countInputTokens: (r, s) => inner.countInputTokens(r, s),
    complete: (r, s) => {
      requests.push(structuredClone(r));
      return inner.complete(r, s);
    },
  };
}

function harness(source: z.input<typeof Script> | ModelGateway, compactAt: number | 'disabled') {
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const requests: ModelRequest[] = [];
  const inner = 'complete' in source ? source : new ScriptedGateway(Script.parse(source), 'test');
  const gateway = recording(inner, requests);
  const record = (type: string, data: Record<string, unknown>): Promise<void> => {
    events.push({ type, data });
    return Promise.resolve();
  };
  const setup = compactionSetup(ContextSection.parse({ compactAt }), gateway);
  const deps: AgentLoopDeps = {
    gateway,
    registry: new ToolRegistry(BUILTIN_TOOLS, ['read_file']),
    mediator: testMediator(record),
    mode: 'run',
    budgets: new BudgetTracker({ ...AgentBudgets.parse({}), maxTotalCost: undefined }),
    runners: {
      sandbox: runnerFrom(() =>
        Promise.resolve(
          execution({
            stdout: Buffer.from(JSON.stringify({ content: 'x'.repeat(400), truncated: false })),
          }),
        ),
      ),
    },
    recorder: {
      event: record,
      transcript: () => Promise.resolve(),
      output: (name) => Promise.resolve(`outputs/${name}`),
      governance: () => Promise.resolve(),
    },
    maxOutputTokens: 1000,
    compaction: compactionConfigOf(setup),
  };
  const kinds = () => events.map((e) => e.type).filter((t) => t.startsWith('compaction_'));
  return { deps, events, requests, setup, kinds };
}

const signal = new AbortController().signal;
const slots = { prompt: 'read everything', context: ['ctx'] };

describe('compaction in the loop', () => {
  it('compacts a long episode; the next request keeps the slots verbatim and every pair', async () => {
    const h = harness(
      longEpisode([2000, 4000, 6000, 1500, 2000, 2500], {
        compactions: [{ summary: 'read a three times' }],
      }),
      0.5,
    );
    expect(h.setup).toMatchObject({ state: 'armed', thresholdTokens: 5000, windowSource: 'model' });
    const conversation = newConversation();
    const r = await runAgentLoop(slots, h.deps, signal, conversation);
    expect(r.status, r.terminalReason).toBe('completed');
    expect(h.kinds()).toEqual(['compaction_started', 'compaction_completed']);
    const i = h.requests.findIndex((q) => q.purpose === 'compaction');
    expect(i).toBeGreaterThan(0);
    const next = h.requests[i + 1];
    expect(next?.purpose).toBeUndefined();
    expect(next?.messages[0]).toEqual(firstUserMessage(slots));
    expect(contextProblems(next?.messages ?? [])).toEqual([]);
    expect(JSON.stringify(next?.messages[1])).toContain('<compacted-summary n=\\"1\\">');
    expect((next?.messages.length ?? 0) < (h.requests[i - 1]?.messages.length ?? 0) + 2).toBe(true);
    // The summarising request is an attempt like any: started, completed, in the usage.
    expect(r.usage.map((u) => u.attemptId)).toContain('compact-1');
    const done = h.events.find((e) => e.type === 'compaction_completed')?.data;
    expect(done).toMatchObject({ n: 1, mechanism: 'summary-request', attemptId: 'compact-1' });
    expect(conversation.context?.completed).toBe(1);
  });

  it('a failed compaction is retried before the next request, and a second failure fails the run', async () => {
    const h = harness(
      longEpisode([2000, 4000, 6000, 7000, 8000], {
        compactions: [{ fail: 'overloaded' }, { fail: 'still overloaded' }],
      }),
      0.5,
    );
    const run = runAgentLoop(slots, h.deps, signal);
    await expect(run).rejects.toSatisfy(
      (e: unknown) => e instanceof CfhError && e.code === 'compaction_failed' && e.exitCode === 1,
    );
    expect(h.kinds()).toEqual([
      'compaction_started',
      'compaction_failed',
      'compaction_started',
      'compaction_failed',
    ]);
    const failed = h.events.filter((e) => e.type === 'compaction_failed').map((e) => e.data);
    expect(failed.map((d) => d.retry)).toEqual(['next_request', 'none']);
    // Between the two, the run went on with its context as it was: one model turn.
    const between = h.events.slice(
      h.events.findIndex((e) => e.type === 'compaction_failed'),
      h.events.findLastIndex((e) => e.type === 'compaction_started'),
    );
    expect(
      between.some((e) => e.type === 'model_call_started' && e.data.attemptId !== 'compact-1'),
    ).toBe(true);
  });

  it('a failure followed by a success resets the count', async () => {
    const h = harness(
      longEpisode([2000, 4000, 6000, 6500, 1500, 2000], {
        compactions: [{ fail: 'once' }, { summary: 'fine' }],
      }),
      0.5,
    );
    const r = await runAgentLoop(slots, h.deps, signal);
    expect(r.status, r.terminalReason).toBe('completed');
    expect(h.kinds()).toEqual([
      'compaction_started',
      'compaction_failed',
      'compaction_started',
      'compaction_completed',
    ]);
  });

  it('disabled never compacts, however long the context', async () => {
    const h = harness(longEpisode([2000, 4000, 6000, 8000, 9000, 9900]), 'disabled');
    expect(h.setup).toMatchObject({ state: 'disabled', thresholdTokens: null, mechanism: null });
    expect(h.deps.compaction).toBeUndefined();
    const r = await runAgentLoop(slots, h.deps, signal);
    expect(r.status).toBe('completed');
    expect(h.kinds()).toEqual([]);
    expect(h.requests.some((q) => q.purpose === 'compaction')).toBe(false);
  });

  it('a fraction of an unknown window is unavailable, said, never armed', () => {
    const gateway = { adapter: 'scripted', contextWindowTokens: undefined };
    const setup = compactionSetup(ContextSection.parse({}), gateway);
    expect(setup).toMatchObject({ state: 'unavailable', compactAt: 0.8, windowSource: 'unknown' });
    expect(compactionConfigOf(setup)).toBeUndefined();
    expect(compactionSetup({ compactAt: 0.8, windowTokens: 1000 }, gateway)).toMatchObject({
      state: 'armed',
      thresholdTokens: 800,
      windowSource: 'profile',
    });
  });

  it('compactAt is validated with a clear error', () => {
    for (const bad of [0, 1, 1.5, 100, -0.2, 'later'])
      expect(ContextSection.safeParse({ compactAt: bad }).error?.message ?? '').toMatch(
        /token count .* fraction .* 'disabled'/,
      );
    expect(ContextSection.parse({ compactAt: 50_000 }).compactAt).toBe(50_000);
    expect(ContextSection.parse({}).compactAt).toBe(0.8);
  });
});

interface WireMessage {
  readonly role: string;
  readonly content: readonly { type: string; text?: string; id?: string }[];
}

describe('the anthropic adapter’s compaction requests, against the stand-in Messages API', () => {
  let server: MessagesApiServer;
  beforeEach(async () => {
    server = await startMessagesApiServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('the summarising request offers no tools; the next one alternates roles and keeps the slots and pairs', async () => {
    const gateway = new AnthropicGateway({
      apiKey: 'sk-ant-fixture-0123456789',
      baseURL: server.baseURL,
      model: 'claude-test-model',
      maxRetries: 0,
      timeoutMs: 5_000,
      keySource: 'env:ANTHROPIC_API_KEY',
      backoffMs: 1,
    });
    // Streamed: message_start carries the input, message_delta the output.
    const usage = (input_tokens: number) => ({
      startUsage: { input_tokens, output_tokens: 1 },
      deltaUsage: { output_tokens: 10 },
    });
    const call = (id: string) => [{ id, name: 'read_file', input: { path: 'a' } }];
    server.enqueue(
      okToolUse(call('toolu_1'), usage(2000)),
      okToolUse(call('toolu_2'), usage(4000)),
      okToolUse(call('toolu_3'), usage(6000)),
      okText('Read a three times; it holds x.', usage(3000)),
      okText('done', usage(1500)),
    );
    const h = harness(gateway, 5000);
    const r = await runAgentLoop(slots, h.deps, signal);
    expect(r.status, r.terminalReason).toBe('completed');
    expect(h.kinds()).toEqual(['compaction_started', 'compaction_completed']);
    const bodies = server.requests
      .filter((q) => q.url.split('?')[0] === '/v1/messages')
      .map((q) => q.body as { system: unknown; tools?: unknown[]; messages: WireMessage[] });
    expect(bodies).toHaveLength(5);
    const [summarising, next] = [bodies[3], bodies[4]];
    expect(summarising?.tools).toBeUndefined();
    expect(JSON.stringify(summarising?.system)).toContain('summarise');
    expect(summarising?.messages).toHaveLength(1);
    // The next request: user (slots, then the summary) / assistant tool_use / user tool_result.
    const messages = next?.messages ?? [];
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    const first = firstUserMessage(slots).content.map((b) => (b as { text: string }).text);
    const sent = (messages[0]?.content ?? []).map((b) => b.text);
    expect(sent.slice(0, first.length)).toEqual(first);
    expect(sent[first.length]).toMatch(/^<compacted-summary n="1">\nRead a three times/);
    expect(messages[1]?.content.find((b) => b.type === 'tool_use')?.id).toBe('toolu_3');
    expect(messages[2]?.content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_3' });
    expect(next?.tools?.length).toBe(1);
  });
});
