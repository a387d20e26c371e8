// AH-USAGE-4/5: estimates from the repository's rate card, with typed omissions.
import { describe, expect, it } from 'vitest';
import {
  estimateAttempt,
  estimateRun,
  loadRateCard,
  rateCardOf,
  routeRateCard,
} from '../../src/model/cost.js';

const card = loadRateCard();

describe('cost estimates', () => {
  it('loads the versioned rate card with its currency and source', () => {
    expect(card.currency).toBe('USD');
    expect(card.version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(card.source.length).toBeGreaterThan(10);
  });

  it('prices input, output and cache counters separately', () => {
    const e = estimateAttempt(card, 't1', 'claude-sonnet-4-6', {
      input_tokens: 1_000_000,
      output_tokens: 100_000,
      cache_read_input_tokens: 1_000_000,
      cache_creation_input_tokens: 0,
    });
    expect(e).toEqual({ attemptId: 't1', estimated: 3 + 1.5 + 0.3 });
  });

  it('omits with a typed reason rather than guessing', () => {
    expect(
      estimateAttempt(card, 't', 'scripted-demo', { input_tokens: 1, output_tokens: 1 }),
    ).toEqual({ attemptId: 't', omitted: 'unsupported_pricing' });
    expect(estimateAttempt(card, 't', 'claude-sonnet-4-6', { input_tokens: 1 })).toEqual({
      attemptId: 't',
      omitted: 'missing_provider_detail',
    });
    expect(
      estimateAttempt(card, 't', 'claude-sonnet-4-6', { input_tokens: -1, output_tokens: 1 }),
    ).toEqual({ attemptId: 't', omitted: 'invalid_counters' });
  });

  it('prices a dated model id by its undated rate-card entry, and says so', () => {
    const usage = { input_tokens: 1_000_000, output_tokens: 100_000 };
    // Exact id: priced as itself, no pricedAs.
    expect(estimateAttempt(card, 'a', 'claude-sonnet-4-6', usage)).toEqual({
      attemptId: 'a',
      estimated: 3 + 1.5,
    });
    // The provider answers with the dated snapshot id.
    expect(estimateAttempt(card, 'b', 'claude-sonnet-4-6-20250929', usage)).toEqual({
      attemptId: 'b',
      estimated: 3 + 1.5,
      pricedAs: 'claude-sonnet-4-6',
    });
    expect(estimateAttempt(card, 'c', 'claude-haiku-4-5-20251001', usage)).toMatchObject({
      pricedAs: 'claude-haiku-4-5',
    });
    // Unknown models stay unpriced, dated or not; only a trailing -YYYYMMDD is dropped.
    for (const model of [
      'claude-unknown-9-20250929',
      'claude-sonnet-4-6-2025092',
      'claude-sonnet-4-6-20250929-beta',
      'claude-sonnet-4-6-latest',
      'toString',
    ]) {
      expect(estimateAttempt(card, 'd', model, usage)).toEqual({
        attemptId: 'd',
        omitted: 'unsupported_pricing',
      });
    }
    // A run of dated attempts totals, and each says what it was priced as.
    const run = estimateRun(card, [
      {
        attemptId: 'e',
        model: 'claude-haiku-4-5-20251001',
        usage: { input_tokens: 1_000_000, output_tokens: 0 },
      },
    ]);
    expect(run.total).toBe(1);
    expect(run.perAttempt[0]).toMatchObject({ pricedAs: 'claude-haiku-4-5' });
  });

  it('totals only with full coverage', () => {
    const full = estimateRun(card, [
      {
        attemptId: 'a',
        model: 'claude-haiku-4-5',
        usage: { input_tokens: 1_000_000, output_tokens: 0 },
      },
      {
        attemptId: 'b',
        model: 'claude-haiku-4-5',
        usage: { input_tokens: 0, output_tokens: 1_000_000 },
      },
    ]);
    expect(full).toMatchObject({ kind: 'harness-estimate', currency: 'USD', total: 6 });
    const partial = estimateRun(card, [
      { attemptId: 'a', model: 'claude-haiku-4-5', usage: { input_tokens: 1, output_tokens: 1 } },
      { attemptId: 'b', model: 'claude-haiku-4-5', usage: {} },
    ]);
    expect(partial.total).toBeUndefined();
    expect(partial.totalOmitted).toBe('incomplete_coverage');
    expect(estimateRun(card, []).totalOmitted).toBe('no_attempts');
  });

  it("a route's own prices price whatever model id its endpoint answers with, and name their source", () => {
    const card = routeRateCard('gpt-5.1', { inputPerMTok: 1, outputPerMTok: 2 });
    const usage = { input_tokens: 300, output_tokens: 20 };
    expect(estimateAttempt(card, 'turn-1', 'gpt-5.1', usage)).toStrictEqual({
      attemptId: 'turn-1',
      estimated: 0.00034,
    });
    expect(estimateAttempt(card, 'turn-2', 'gpt-5.1-2026-11-04', usage)).toStrictEqual({
      attemptId: 'turn-2',
      estimated: 0.00034,
      pricedAs: 'gpt-5.1',
    });
    expect(estimateRun(card, [{ attemptId: 't', model: 'x', usage }]).rateCard).toStrictEqual({
      file: 'profile model.pricing',
      version: card.version,
      source: card.source,
    });
    // No prices of its own: the repository's card, which does not price the family.
    const repo = rateCardOf({ model: 'qwen3-coder', pricing: undefined });
    expect(estimateAttempt(repo, 't', 'qwen3-coder', usage)).toStrictEqual({
      attemptId: 't',
      omitted: 'unsupported_pricing',
    });
  });
});
