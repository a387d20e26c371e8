// The model route of a run (cli/model-route.ts): the flags over the profile's `model`
// section over the environment, chosen once; without flag or section, as before (anthropic
// with ANTHROPIC_API_KEY, else scripted). A named credential that is unset is an error, never
// a run without it; a flag naming another provider takes nothing of the profile's route.
import { describe, expect, it } from 'vitest';
import { readEnvironment } from '../../src/config/env.js';
import { ModelSection } from '../../src/config/model-schema.js';
import { resolveRoute } from '../../src/cli/model-route.js';
import { ProfileFile } from '../../src/config/profile-schema.js';
import { mergeLayer } from '../../src/config/profile-loader.js';

const env = (vars: Record<string, string> = {}) => readEnvironment({ HOME: '/tmp', ...vars });
const LOCAL = ModelSection.parse({
  provider: 'openai-compatible',
  baseUrl: 'http://127.0.0.1:11434/v1',
  model: 'qwen3-coder',
  wire: 'chat',
  credential: 'none',
  contextWindow: 131072,
  pricing: { inputPerMTok: 0, outputPerMTok: 0 },
});

describe('model route', () => {
  it('without flags or a section: scripted with no key, anthropic with ANTHROPIC_API_KEY', () => {
    expect(resolveRoute({}, undefined, env())).toStrictEqual({
      provider: 'scripted',
      script: undefined,
    });
    expect(resolveRoute({}, undefined, env({ ANTHROPIC_API_KEY: 'k' }))).toMatchObject({
      provider: 'anthropic',
      keyEnv: 'ANTHROPIC_API_KEY',
      model: 'claude-sonnet-5-5',
    });
    // OPENAI_API_KEY alone changes nothing: no route names that provider.
    expect(resolveRoute({}, undefined, env({ OPENAI_API_KEY: 'k' })).provider).toBe('scripted');
  });

  it("takes the profile's section as the issue writes it", () => {
    expect(resolveRoute({}, LOCAL, env({ OPENAI_API_KEY: 'k' }))).toStrictEqual({
      provider: 'openai-compatible',
      baseUrl: 'http://127.0.0.1:11434/v1',
      model: 'qwen3-coder',
      wire: 'chat',
      keyEnv: null,
      contextWindow: 131072,
      pricing: { inputPerMTok: 0, outputPerMTok: 0 },
    });
  });

  it('flags over the section; a flag naming another provider takes none of it', () => {
    const r = resolveRoute({ model: 'llama3', baseUrl: 'http://127.0.0.1:8000/v1' }, LOCAL, env());
    expect(r).toMatchObject({ model: 'llama3', baseUrl: 'http://127.0.0.1:8000/v1', keyEnv: null });
    const a = resolveRoute({ provider: 'anthropic' }, LOCAL, env({ ANTHROPIC_API_KEY: 'k' }));
    expect(a).toMatchObject({
      provider: 'anthropic',
      baseUrl: undefined,
      contextWindow: undefined,
    });
  });

  it('flags alone: OPENAI_BASE_URL, OPENAI_API_KEY and CFH_MODEL are the fallbacks', () => {
    const e = env({
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      OPENAI_API_KEY: 'k',
      CFH_MODEL: 'm',
    });
    expect(resolveRoute({ provider: 'openai-compatible' }, undefined, e)).toStrictEqual({
      provider: 'openai-compatible',
      baseUrl: 'http://127.0.0.1:9/v1',
      model: 'm',
      wire: 'chat',
      keyEnv: 'OPENAI_API_KEY',
      contextWindow: undefined,
      pricing: undefined,
    });
  });

  it('refuses a named credential that is unset, a route with no model, --script with a provider', () => {
    const named = ModelSection.parse({ ...LOCAL, credential: { fromEnv: 'MY_KEY' } });
    expect(() => resolveRoute({}, named, env())).toThrow(
      expect.objectContaining({ code: 'credential_missing' }),
    );
    expect(() => resolveRoute({ provider: 'openai-compatible' }, undefined, env())).toThrow(
      expect.objectContaining({ code: 'invalid_model' }),
    );
    expect(() => resolveRoute({ script: 'x.yaml' }, LOCAL, env())).toThrow(
      expect.objectContaining({ code: 'script_with_provider' }),
    );
    expect(() =>
      resolveRoute({ provider: 'openai-compatible', baseUrl: 'ftp://x' }, LOCAL, env()),
    ).toThrow(expect.objectContaining({ code: 'invalid_gateway_option' }));
  });

  it('the section refuses what does not belong to its provider; a layer replaces it whole', () => {
    expect(ModelSection.safeParse({ provider: 'anthropic', wire: 'chat' }).success).toBe(false);
    expect(ModelSection.safeParse({ provider: 'anthropic', credential: 'none' }).success).toBe(
      false,
    );
    expect(
      ModelSection.safeParse({ provider: 'openai-compatible', baseUrl: 'http://u:p@h/v1' }).success,
    ).toBe(false);
    expect(
      ProfileFile.safeParse({ model: { provider: 'openai-compatible', extra: 1 } }).success,
    ).toBe(false);
    const merged = mergeLayer({ model: LOCAL }, { model: { provider: 'anthropic' } });
    expect(merged['model']).toStrictEqual({ provider: 'anthropic' });
  });
});
