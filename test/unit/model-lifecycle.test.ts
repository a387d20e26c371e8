// The default model and the rate card against the installed Anthropic SDK's own data: the
// default is in the SDK's Model list and not in its deprecation table; every priced model is
// one the SDK knows and none was retired when the card was checked; the lifecycle the
// doctor reports reads the SDK's table (claude-sonnet-4-5 reached end of life 2026-11-30).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, readEnvironment } from '../../src/config/env.js';
import { loadRateCard, ratesFor } from '../../src/model/cost.js';
import { modelLifecycle, parseSdkDate } from '../../src/model/model-lifecycle.js';
import { modelCheck } from '../../src/engine/ops/doctor.js';

// The SDK's data, read here independently of the code under test.
const require = createRequire(import.meta.url);
const sdkRoot = path.dirname(require.resolve('@anthropic-ai/sdk'));
const deprecated = (
  require(path.join(sdkRoot, 'internal', 'data', 'deprecated-models.js')) as {
    DEPRECATED_MODELS: Record<string, string>;
  }
).DEPRECATED_MODELS;
const modelType = /export type Model = ([^;]+);/.exec(
  readFileSync(path.join(sdkRoot, 'resources', 'messages', 'messages.d.ts'), 'utf8'),
)?.[1];
const sdkModels = [...(modelType ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]);

describe('the default model', () => {
  it('is in the installed SDK’s model list and not deprecated there', () => {
    const model = readEnvironment({}).model;
    expect(model).toBe(DEFAULT_MODEL);
    expect(sdkModels.length).toBeGreaterThan(5);
    expect(sdkModels).toContain(model);
    expect(Object.keys(deprecated)).not.toContain(model);
  });

  it('is priced on the rate card', () => {
    expect(ratesFor(loadRateCard(), readEnvironment({}).model)).toBeDefined();
  });

  it('CFH_MODEL still wins', () => {
    expect(readEnvironment({ CFH_MODEL: 'claude-haiku-4-5' }).model).toBe('claude-haiku-4-5');
  });
});

describe('the rate card', () => {
  const card = loadRateCard();

  it('names where and when it was checked', () => {
    expect(card.checked?.on).toBe(card.version);
    expect(card.checked?.against.some((a) => a.includes('platform.claude.com'))).toBe(true);
    expect(card.source).toContain('checked');
  });

  it('prices only models the SDK knows, none retired on the day it was checked', () => {
    const on = new Date(`${card.checked?.on ?? ''}T00:00:00Z`);
    for (const model of Object.keys(card.models)) {
      expect(sdkModels, model).toContain(model);
      expect(modelLifecycle(model, on).status, model).not.toBe('retired');
    }
  });
});

describe('model lifecycle from the SDK', () => {
  it('parses the SDK’s dates', () => {
    expect(parseSdkDate('November 30th, 2026')).toBe('2026-11-30');
    expect(parseSdkDate('January 22nd, 2027')).toBe('2027-01-22');
    expect(parseSdkDate('June 1st, 2026')).toBe('2026-06-01');
    expect(parseSdkDate('soon')).toBeUndefined();
  });

  it('is deprecated before the end-of-life day and retired from it on', () => {
    const data = { version: 'x', deprecated: { 'claude-old': 'November 30th, 2026' } };
    expect(modelLifecycle('claude-old', new Date('2026-11-29T23:59:59Z'), data)).toMatchObject({
      status: 'deprecated',
      endOfLife: '2026-11-30',
    });
    expect(modelLifecycle('claude-old', new Date('2026-11-30T00:00:00Z'), data).status).toBe(
      'retired',
    );
    expect(modelLifecycle('claude-new', new Date(), data).status).toBe('current');
    expect(modelLifecycle('m', new Date(), { version: 'x', deprecated: undefined }).status).toBe(
      'unknown',
    );
  });

  it('reads the installed SDK: the old default is retired, the doctor warns', () => {
    const after = new Date('2026-12-01T00:00:00Z');
    expect(modelLifecycle('claude-sonnet-4-5', after)).toMatchObject({
      status: 'retired',
      endOfLife: '2026-11-30',
    });
    expect(modelLifecycle('claude-sonnet-4-5-20250929', after).status).toBe('retired');
    expect(modelCheck('claude-sonnet-4-5', after)).toMatchObject({ ok: false, required: false });
    expect(modelCheck(DEFAULT_MODEL, after)).toMatchObject({ ok: true, required: false });
  });
});
