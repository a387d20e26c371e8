// The model route of an agent run, chosen once here (AH-INV-2, AH-INV-5): the flags
// `--provider`, `--model`, `--base-url` over the profile's `model` section, over each
// provider's documented environment variables. With neither flag nor section, as always:
// anthropic when ANTHROPIC_API_KEY is set, else the scripted gateway. The credential is read
// here from cfh's own environment, by the name the route records; nothing else sees it.
// Nothing chosen here changes after a failure: there is no fallback route.
import { ConfigError } from '../errors.js';
import type { CfhEnvironment } from '../config/env.js';
import {
  BaseUrl,
  ModelProvider,
  type ModelSection,
  type ModelWire,
} from '../config/model-schema.js';

/** What the command line says of the route (each absent when not given). */
export interface RouteFlags {
  readonly provider?: string | undefined;
  readonly model?: string | undefined;
  readonly baseUrl?: string | undefined;
  readonly script?: string | undefined;
}

export type RouteChoice =
  | { readonly provider: 'scripted'; readonly script: string | undefined }
  | {
      readonly provider: 'anthropic';
      readonly baseUrl: string | undefined;
      readonly model: string;
      readonly keyEnv: string;
      readonly contextWindow: number | undefined;
      readonly pricing: ModelSection['pricing'];
    }
  | {
      readonly provider: 'openai-compatible';
      readonly baseUrl: string;
      readonly model: string;
      readonly wire: ModelWire;
      /** null: `credential: none` (or no key in the environment for a flags-only route). */
      readonly keyEnv: string | null;
      readonly contextWindow: number | undefined;
      readonly pricing: ModelSection['pricing'];
    };

/** Anthropic's endpoint when neither the route nor ANTHROPIC_BASE_URL names one. */
export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';

/** OpenAI's own endpoint: the SDK's default, named so the route records it. */
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

function providerOf(flags: RouteFlags, section: ModelSection | undefined, env: CfhEnvironment) {
  if (flags.provider !== undefined) {
    const parsed = ModelProvider.safeParse(flags.provider);
    if (!parsed.success)
      throw new ConfigError(
        'invalid_gateway_option',
        `--provider: '${flags.provider}' is not a provider`,
        { field: '--provider', value: flags.provider },
        `use one of ${ModelProvider.options.join(', ')}`,
      );
    return parsed.data;
  }
  if (section !== undefined) return section.provider;
  if (flags.script !== undefined) return 'scripted';
  return env.anthropicApiKey !== undefined ? 'anthropic' : 'scripted';
}

function baseUrlOf(flags: RouteFlags, section: ModelSection | undefined): string | undefined {
  if (flags.baseUrl === undefined) return section?.baseUrl;
  const parsed = BaseUrl.safeParse(flags.baseUrl);
  if (!parsed.success)
    throw new ConfigError(
      'invalid_gateway_option',
      `--base-url: ${parsed.error.issues[0]?.message ?? 'not an http or https URL'}`,
      { field: '--base-url', value: flags.baseUrl },
    );
  return parsed.data;
}

/** The route the flags, the profile's section and the environment make, checked. */
export function resolveRoute(
  flags: RouteFlags,
  profileSection: ModelSection | undefined,
  env: CfhEnvironment,
): RouteChoice {
  const provider = providerOf(flags, profileSection, env);
  // A flag naming another provider than the profile's takes nothing of the profile's route.
  const section = profileSection?.provider === provider ? profileSection : undefined;
  if (flags.script !== undefined && provider !== 'scripted')
    throw new ConfigError(
      'script_with_provider',
      `--script: only with the scripted provider (the route is ${provider})`,
      { field: 'script', value: flags.script },
      `drop --script, or --provider ${provider}`,
    );
  if (provider === 'scripted') return { provider, script: flags.script };
  const baseUrl = baseUrlOf(flags, section);
  const keyEnv = keyEnvOf(provider, section, env);
  const contextWindow = section?.contextWindow;
  const pricing = section?.pricing;
  if (provider === 'anthropic') {
    if (keyEnv === null) throw missingCredential(provider, 'ANTHROPIC_API_KEY');
    const model = flags.model ?? section?.model ?? env.model;
    const url = baseUrl ?? env.anthropicBaseUrl;
    return { provider, baseUrl: url, model, keyEnv, contextWindow, pricing };
  }
  const model = flags.model ?? section?.model ?? env.modelOverride;
  if (model === undefined)
    throw new ConfigError(
      'invalid_model',
      'the openai-compatible route names no model',
      { field: 'model' },
      "give --model, the profile's model.model, or CFH_MODEL",
    );
  return {
    provider,
    baseUrl: baseUrl ?? env.openaiBaseUrl ?? OPENAI_DEFAULT_BASE_URL,
    model,
    wire: section?.wire ?? 'chat',
    keyEnv,
    contextWindow,
    pricing,
  };
}

/**
 * Where the key is read: the section's `credential`, else the provider's own variable. A
 * named variable that is unset is an error (never a silent run without the credential); a
 * flags-only openai-compatible route without OPENAI_API_KEY is a local one, with none.
 */
function keyEnvOf(
  provider: 'anthropic' | 'openai-compatible',
  section: ModelSection | undefined,
  env: CfhEnvironment,
): string | null {
  const credential = section?.credential;
  if (credential === 'none') return null;
  const fallback = provider === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
  const name = credential?.fromEnv ?? fallback;
  const value = env.credentialSource[name];
  if (value !== undefined && value !== '') return name;
  if (provider === 'openai-compatible' && credential === undefined) return null;
  throw missingCredential(provider, name);
}

function missingCredential(provider: string, name: string): ConfigError {
  return new ConfigError(
    'credential_missing',
    `the ${provider} route reads its key from ${name}, which is not set`,
    { field: 'credential', value: `env:${name}` },
    `set ${name}, or name another route`,
  );
}

/** The key the route names, read from cfh's own environment (undefined: none). */
export function routeKey(choice: RouteChoice, env: CfhEnvironment): string | undefined {
  if (choice.provider === 'scripted' || choice.keyEnv === null) return undefined;
  return env.credentialSource[choice.keyEnv];
}
