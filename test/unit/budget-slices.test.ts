// A child's budget slice (engine/agent/budgets.ts carve/settle): a fair share of what the parent
// has neither used nor lent, held while the child runs, then charged with what it used, so
// the parent's limits hold over the parent and its descendants together (AH-USAGE-2).
import { describe, expect, it } from 'vitest';
import { BudgetTracker, type Budgets } from '../../src/engine/agent/budgets.js';

const budgets = (over: Partial<Budgets> = {}): Budgets => ({
  maxModelTurns: 10,
  maxToolCalls: 20,
  maxParallelToolCalls: 4,
  maxWallTimeSeconds: 600,
  maxInputTokens: 1000,
  maxOutputTokens: 100,
  maxTotalCost: undefined,
  maxToolResultChars: 1000,
  maxRetriesPerModelCall: 0,
  maxRetriesPerToolCall: 0,
  ...over,
});

describe('budget slices', () => {
  it('lends each child a share of what is left and holds it until settled', () => {
    const parent = new BudgetTracker(budgets());
    const a = parent.carve(budgets({ maxModelTurns: 50 }), 2);
    if ('budget' in a) throw new Error('refused');
    expect(a.maxModelTurns).toBe(5);
    expect(a.maxInputTokens).toBe(500);
    const b = parent.carve(budgets({ maxModelTurns: 50 }), 2);
    if ('budget' in b) throw new Error('refused');
    // Half of what the first left: 5 of 10 held.
    expect(b.maxModelTurns).toBe(2);
    // What is lent is not the parent's to spend or lend again: 3 of 10 are left.
    const c = parent.carve(budgets({ maxModelTurns: 50 }), 1);
    if ('budget' in c) throw new Error('refused');
    expect(c.maxModelTurns).toBe(3);
    expect(parent.beforeModelTurn()).toMatchObject({ budget: 'max_model_turns' });
    parent.settle(c, { turns: 0, calls: 0, input: 0, output: 0, cost: 0 });
    parent.settle(a, { turns: 1, calls: 1, input: 10, output: 1, cost: 0 });
    parent.settle(b, { turns: 2, calls: 0, input: 0, output: 0, cost: 0 });
    expect(parent.beforeModelTurn()).toBeUndefined();
    expect(parent.snapshot()).toMatchObject({ model_turns: 3, tool_calls: 1, input_tokens: 10 });
    expect(parent.descendants()).toEqual({ turns: 3, calls: 1, input: 10, output: 1, cost: 0 });
  });

  it("counts the delegating turn's own calls, in flight, before lending calls to a child", () => {
    const parent = new BudgetTracker(budgets({ maxToolCalls: 10, maxParallelToolCalls: 8 }));
    // Six delegate calls in one turn: admitted, not yet ended.
    expect(parent.beforeToolCalls(6)).toBeUndefined();
    const slices = [];
    for (let i = 0; i < 6; i += 1) {
      const s = parent.carve(budgets({ maxToolCalls: 50 }), 4);
      if (!('budget' in s)) slices.push(s);
    }
    // 4 calls left for the children: the six calls and the slices stay within ten.
    const lent = slices.reduce((n, s) => n + s.maxToolCalls, 0);
    expect(6 + lent).toBeLessThanOrEqual(10);
    for (const s of slices)
      parent.settle(s, { turns: 0, calls: s.maxToolCalls, input: 0, output: 0, cost: 0 });
    parent.recordToolCalls(6);
    expect(parent.snapshot()).toMatchObject({ tool_calls: 6 + lent });
    expect(parent.beforeToolCalls(1)).toMatchObject({ budget: 'max_tool_calls', limit: 10 });
  });

  it('refuses a child when a limit has nothing left, naming it', () => {
    const parent = new BudgetTracker(budgets({ maxModelTurns: 1 }));
    parent.settle(
      budgets({ maxModelTurns: 0, maxToolCalls: 0, maxInputTokens: 0, maxOutputTokens: 0 }),
      {
        turns: 1,
        calls: 0,
        input: 0,
        output: 0,
        cost: 0,
      },
    );
    expect(parent.carve(budgets(), 1)).toMatchObject({ budget: 'max_model_turns', limit: 1 });
  });

  it('lends a share of the cost left and charges an unpriced child as exhausting it', () => {
    const parent = new BudgetTracker(budgets({ maxTotalCost: 1 }));
    const s = parent.carve(budgets(), 4);
    if ('budget' in s) throw new Error('refused');
    expect(s.maxTotalCost).toBe(0.25);
    parent.settle(s, { turns: 1, calls: 0, input: 0, output: 0, cost: 'unpriced' });
    expect(parent.carve(budgets(), 4)).toMatchObject({ budget: 'max_total_cost' });
    expect(parent.descendants().cost).toBe('unpriced');
  });
});
