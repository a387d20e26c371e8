// The model gateway of a route (model-route.ts), built once per run and once per child
// profile that names a route of its own (AH-DEL-1). Every gateway reports its retries
// through the run's hook, so they become events (AH-LIFE-5).
import type { CfhEnvironment } from '../config/env.js';
import type { ModelSection } from '../config/model-schema.js';
import type { RetryHook } from '../engine/agent/agent-run.js';
import type { ModelGateway } from '../model/gateway.js';
import { AnthropicGateway } from '../model/anthropic-gateway.js';
import { OpenAiGateway } from '../model/openai-gateway.js';
import { ScriptedGateway, loadScript } from '../model/scripted-gateway.js';
import { EMBEDDED_SCRIPT, EMBEDDED_SCRIPT_SOURCE } from '../model/embedded-script.js';
import { resolveRoute, routeKey, type RouteChoice, type RouteFlags } from './model-route.js';

/** How long a gateway waits for a response to start, and then between stream events. */
const MODEL_TIMEOUT_MS = 120_000;

export function gatewayOf(
  choice: RouteChoice,
  env: CfhEnvironment,
  retries: number,
  retryHook: RetryHook,
): ModelGateway {
  const onRetry = (attempt: number, reason: string): void => {
    retryHook.current?.(attempt, reason);
  };
  if (choice.provider === 'scripted') {
    // A child profile the script does not name answers with the embedded script (AH-DEL).
    if (choice.script !== undefined)
      return new ScriptedGateway(loadScript(choice.script), choice.script, EMBEDDED_SCRIPT);
    return new ScriptedGateway(EMBEDDED_SCRIPT, EMBEDDED_SCRIPT_SOURCE, EMBEDDED_SCRIPT);
  }
  const key = routeKey(choice, env);
  if (choice.provider === 'anthropic')
    return new AnthropicGateway({
      apiKey: key ?? '',
      baseURL: choice.baseUrl,
      model: choice.model,
      maxRetries: retries,
      timeoutMs: MODEL_TIMEOUT_MS,
      keySource: `env:${choice.keyEnv}`,
      onRetry,
      pricing: choice.pricing,
    });
  return new OpenAiGateway({
    apiKey: key ?? null,
    baseURL: choice.baseUrl,
    model: choice.model,
    wire: choice.wire,
    keySource: choice.keyEnv === null ? 'none' : `env:${choice.keyEnv}`,
    maxRetries: retries,
    timeoutMs: MODEL_TIMEOUT_MS,
    onRetry,
    contextWindowTokens: choice.contextWindow,
    pricing: choice.pricing,
  });
}

/** The run's gateway: the flags over the profile's `model` section over the environment. */
export function chooseGateway(
  flags: RouteFlags,
  env: CfhEnvironment,
  retries: number,
  retryHook: RetryHook,
  section?: ModelSection,
): ModelGateway {
  return gatewayOf(resolveRoute(flags, section, env), env, retries, retryHook);
}

/**
 * A child's gateway when its profile names a route of its own (no flag reaches a child: the
 * command line chose the parent's route); undefined: the parent's gateway answers it.
 */
export function childGatewayOf(
  env: CfhEnvironment,
  retryHook: RetryHook,
): (profile: {
  readonly model?: ModelSection | undefined;
  readonly budgets: { readonly maxRetriesPerModelCall: number };
}) => ModelGateway | undefined {
  return (profile) =>
    profile.model === undefined || profile.model.provider === 'scripted'
      ? undefined
      : chooseGateway({}, env, profile.budgets.maxRetriesPerModelCall, retryHook, profile.model);
}

/** The credential a gateway holds, by the name its route records (for scrubbing, digests). */
export function heldCredential(
  gateway: ModelGateway,
  env: CfhEnvironment,
): { readonly name: string; readonly value: string } | undefined {
  const source = gateway.route['credential'];
  if (gateway.adapter === 'scripted' || source?.startsWith('env:') !== true) return undefined;
  const name = source.slice('env:'.length);
  const value = env.credentialSource[name];
  return value === undefined || value === '' ? undefined : { name, value };
}

export { EMBEDDED_SCRIPT_SOURCE };
