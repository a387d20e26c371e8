// Issue 5 foundations, pure logic: the tool registry (the parent surface is the
// allowlist, AH-TOOL-1/2), bounded observations, budgets naming the limit reached
// (AH-LIFE-4), and the scripted gateway (AH-USAGE-1).
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { ToolRegistry, type ToolDefinition } from '../../src/tools/contract.js';
import { ObservationSchema } from '../../src/tools/observation.js';
import { boundObservation, errorObservation } from '../../src/tools/observation.js';
import { BudgetTracker, type Budgets } from '../../src/engine/agent/budgets.js';
import {
  ScriptedGateway,
  ScriptExhaustedError,
  loadScript,
} from '../../src/model/scripted-gateway.js';
import { ConfigError } from '../../src/errors.js';

function tool(name: string, overrides: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name,
    purpose: `the ${name} tool`,
    input: z.strictObject({ path: z.string() }),
    output: ObservationSchema,
    riskClass: 'read_only',
    sideEffectClass: 'none',
    resourceScope: 'project',
    permissionPolicy: 'allow',
    timeoutMs: 1000,
    resultSizeLimitChars: 1000,
    retryPolicy: 'safe_retry',
    maxRetries: 1,
    auditPolicy: 'full_structured_event',
    executor: 'sandbox',
    ...overrides,
  };
}

describe('ToolRegistry', () => {
  const known = [
    tool('read_file'),
    tool('list_dir'),
    tool('exec', { sideEffectClass: 'process_or_network_execution' }),
  ];

  it('is exactly the allowlist, in a deterministic order with JSON schemas', () => {
    const registry = new ToolRegistry(known, ['read_file', 'exec']);
    expect(registry.names()).toEqual(['exec', 'read_file']);
    expect(registry.get('list_dir')).toBeUndefined();
    const defs = registry.modelDefinitions();
    expect(defs.map((d) => d.name)).toEqual(['exec', 'read_file']);
    expect(defs[1]?.input_schema).toMatchObject({
      type: 'object',
      properties: { path: { type: 'string' } },
      required: ['path'],
    });
    expect(JSON.stringify(new ToolRegistry(known, ['exec', 'read_file']).modelDefinitions())).toBe(
      JSON.stringify(defs),
    );
  });

  it('refuses an unknown tool in the allowlist, and duplicate or malformed names', () => {
    expect(() => new ToolRegistry(known, ['rm_rf'])).toThrow(/'rm_rf' is not a known tool/);
    expect(() => new ToolRegistry([tool('a'), tool('a')], [])).toThrow(/defined twice/);
    expect(() => new ToolRegistry([tool('Bad-Name')], [])).toThrow(/is not/);
  });
});

describe('observations', () => {
  it('pass through when within the limit', () => {
    const o = {
      status: 'success' as const,
      summary: 'ok',
      items: ['abc'],
      evidence_refs: [],
      next_valid_actions: [],
    };
    expect(boundObservation(o, 10)).toBe(o);
  });

  it('are cut to the limit with the truncation recorded', () => {
    const o = {
      status: 'success' as const,
      summary: 'sum',
      items: ['0123456789', 'abcdef'],
      evidence_refs: ['outputs/t1'],
      next_valid_actions: [],
    };
    const b = boundObservation(o, 8);
    expect(b.summary).toBe('sum');
    expect(b.items).toEqual(['01234']);
    expect(b.truncated).toEqual({ originalChars: 19, keptChars: 8 });
    expect(b.evidence_refs).toEqual(['outputs/t1']);
  });

  it('errors carry a status and no items', () => {
    expect(errorObservation('denied', 'not allowed', ['list_dir'])).toEqual({
      status: 'denied',
      summary: 'not allowed',
      items: [],
      evidence_refs: [],
      next_valid_actions: ['list_dir'],
    });
  });
});

const budgets: Budgets = {
  maxModelTurns: 2,
  maxToolCalls: 3,
  maxParallelToolCalls: 2,
  maxWallTimeSeconds: 60,
  maxInputTokens: 1000,
  maxOutputTokens: 500,
  maxTotalCost: 1,
  maxToolResultChars: 1000,
  maxRetriesPerModelCall: 1,
  maxRetriesPerToolCall: 1,
};

describe('BudgetTracker', () => {
  const billed = (over: Partial<{ inputTokens: number; outputTokens: number; cost: number }>) => ({
    inputTokens: 0,
    outputTokens: 0,
    ...over,
  });

  it('names the model-turn budget when another turn would pass it', () => {
    const t = new BudgetTracker(budgets, 0);
    expect(t.beforeModelTurn(0)).toBeUndefined();
    t.recordModelTurn(billed({ inputTokens: 10 }));
    expect(t.beforeModelTurn(0)).toBeUndefined();
    t.recordModelTurn(billed({ inputTokens: 10 }));
    expect(t.beforeModelTurn(0)).toEqual({ budget: 'max_model_turns', limit: 2, used: 3 });
  });

  it('names tool-call, parallel and wall-time budgets', () => {
    const t = new BudgetTracker(budgets, 0);
    expect(t.beforeToolCalls(3, 0)).toEqual({
      budget: 'max_parallel_tool_calls',
      limit: 2,
      used: 3,
    });
    expect(t.beforeToolCalls(2, 0)).toBeUndefined();
    t.recordToolCalls(2);
    expect(t.beforeToolCalls(2, 0)).toEqual({ budget: 'max_tool_calls', limit: 3, used: 4 });
    expect(t.beforeToolCalls(1, 61_000)).toEqual({
      budget: 'max_wall_time_seconds',
      limit: 60,
      used: 61,
    });
  });

  it('names token and cost budgets a bill passes (a provider billing past its reservation)', () => {
    const t = new BudgetTracker(budgets, 0);
    expect(t.recordModelTurn(billed({}))).toBeUndefined();
    expect(t.recordModelTurn(billed({ outputTokens: 501 }))).toEqual({
      budget: 'max_output_tokens',
      limit: 500,
      used: 501,
    });
    const c = new BudgetTracker(budgets, 0);
    expect(c.recordModelTurn(billed({ cost: 1.5 }))).toEqual({
      budget: 'max_total_cost',
      limit: 1,
      used: 1.5,
    });
  });

  // AH-LIFE-4: budgets are ceilings, reserved before the request.
  const prices = { input: 1e-6, output: 5e-6, cacheRead: 1e-7, cacheWrite: 1.25e-6 };

  it('reserve: caps max_tokens at the output left and refuses what the input cannot fit', () => {
    const t = new BudgetTracker({ ...budgets, maxTotalCost: undefined }, 0);
    expect(t.reserve(400, 8192, undefined)).toEqual({ inputTokens: 400, maxTokens: 500 });
    t.recordModelTurn(billed({ inputTokens: 400, outputTokens: 480 }));
    expect(t.reserve(500, 8192, undefined)).toEqual({ inputTokens: 500, maxTokens: 20 });
    expect(t.reserve(601, 8192, undefined)).toEqual({
      budget: 'max_input_tokens',
      limit: 1000,
      used: 400,
      reserved: 601,
    });
    t.recordModelTurn(billed({ inputTokens: 1, outputTokens: 20 }));
    expect(t.reserve(1, 8192, undefined)).toEqual({
      budget: 'max_output_tokens',
      limit: 500,
      used: 500,
      reserved: 1,
    });
  });

  it('reserve: the cost left buys max_tokens at the output price, input at the dearest kind', () => {
    const t = new BudgetTracker({ ...budgets, maxTotalCost: 0.01 }, 0);
    // 1000 input at $1.25/M (a cache write) = $0.00125; the 500 output tokens left fit.
    expect(t.reserve(1000, 8192, prices)).toEqual({
      inputTokens: 1000,
      maxTokens: 500,
      cost: 0.00375,
    });
    const tight = new BudgetTracker({ ...budgets, maxInputTokens: 10_000, maxTotalCost: 0.002 }, 0);
    expect(tight.reserve(1000, 8192, prices)).toEqual({
      inputTokens: 1000,
      maxTokens: 150,
      cost: 0.002,
    });
    expect(tight.reserve(1600, 8192, prices)).toEqual({
      budget: 'max_total_cost',
      limit: 0.002,
      used: 0,
      reserved: 0.002005,
    });
    // A model the card cannot price is never sent a request under a cost limit.
    expect(tight.reserve(1, 8192, undefined)).toEqual({
      budget: 'max_total_cost',
      limit: 0.002,
      used: 0,
      unpriced: true,
    });
  });
});

describe('ScriptedGateway', () => {
  const request = { system: 's', messages: [], tools: [], maxOutputTokens: 100 };

  it('replays turns in order with stable tool-use ids, usage exactly as scripted', async () => {
    const gw = new ScriptedGateway(
      {
        model: 'scripted-test',
        turns: [
          {
            text: 'looking',
            tool_calls: [{ name: 'read_file', input: { path: 'a' } }],
            usage: { input_tokens: 12 },
          },
          { tool_calls: [] },
        ],
      },
      'inline',
    );
    const signal = new AbortController().signal;
    const first = await gw.complete(request, signal);
    expect(first).toEqual({
      model: 'scripted-test',
      content: [
        { type: 'text', text: 'looking' },
        { type: 'tool_use', id: 'toolu_scripted_0_0', name: 'read_file', input: { path: 'a' } },
      ],
      stopReason: 'tool_use',
      usage: { input_tokens: 12 },
    });
    expect('output_tokens' in first.usage).toBe(false);
    const second = await gw.complete(request, signal);
    expect(second.stopReason).toBe('end_turn');
    expect(second.usage).toEqual({});
    await expect(gw.complete(request, signal)).rejects.toBeInstanceOf(ScriptExhaustedError);
    expect(gw.route).toEqual({ provider: 'scripted', source: 'inline', credential: 'none' });
  });

  it('gives each child, and a grandchild the script names, its own turns; others the fallback (AH-DEL-1)', async () => {
    const gw = new ScriptedGateway(
      {
        model: 'm',
        turns: [{ text: 'top', tool_calls: [] }],
        children: {
          mid: { model: 'm', turns: [{ text: 'mid', tool_calls: [] }] },
          leaf: { model: 'm', turns: [{ text: 'leaf', tool_calls: [] }] },
        },
      },
      'inline',
      { model: 'm', turns: [{ text: 'fallback', tool_calls: [] }] },
    );
    const signal = new AbortController().signal;
    const textOf = async (g: { complete: typeof gw.complete }) =>
      ((await g.complete(request, signal)).content[0] as { text: string }).text;
    const mid = gw.forChild('mid');
    expect(await textOf(mid)).toBe('mid');
    expect(await textOf(mid.forChild?.('leaf') ?? gw)).toBe('leaf');
    expect(await textOf(gw.forChild('other'))).toBe('fallback');
    expect(await textOf(gw.forChild('other').forChild?.('leaf') ?? gw)).toBe('leaf');
  });

  it('like a provider, never bills past max_tokens, and counts the input its next turn bills', async () => {
    const gw = new ScriptedGateway(
      {
        model: 'm',
        turns: [
          {
            text: 'long',
            tool_calls: [],
            usage: { input_tokens: 5, cache_read_input_tokens: 40, output_tokens: 300 },
          },
          { text: 'no usage', tool_calls: [] },
        ],
      },
      'inline',
    );
    const signal = new AbortController().signal;
    expect(gw.counting).toBe('free');
    expect(await gw.countInputTokens(request, signal)).toBe(45);
    const cut = await gw.complete(request, signal);
    expect(cut.stopReason).toBe('max_tokens');
    expect(cut.usage).toEqual({ input_tokens: 5, cache_read_input_tokens: 40, output_tokens: 100 });
    expect(await gw.countInputTokens(request, signal)).toBeUndefined();
  });

  it('loads a script file and refuses a malformed one naming the field', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cfh-script-'));
    try {
      const good = path.join(dir, 'good.yaml');
      writeFileSync(good, 'turns:\n  - text: done\n');
      expect(loadScript(good)).toEqual({
        model: 'scripted',
        turns: [{ text: 'done', tool_calls: [] }],
      });
      const bad = path.join(dir, 'bad.yaml');
      writeFileSync(bad, 'turns:\n  - txt: done\n');
      expect(() => loadScript(bad)).toThrow(ConfigError);
      expect(() => loadScript(bad)).toThrow(/turns\[0\]: an unknown key at line 2, column 5/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
