// What every provider gateway shares of calling: the bounded retry loop with its backoff,
// the idle timer of one request, the call options. The anthropic and openai-compatible
// gateways differ only in how their SDK names a failure (gateway-failures.ts); what is
// retried, how long cfh waits and what is recorded is the same for both (AH-LIFE-5), and
// every attempt goes to the same client: no fallback to another route, credential or model
// (AH-INV-5).
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '../errors.js';
import {
  AttemptTimeout,
  ModelGatewayError,
  type Failure,
  type ModelGatewayErrorCode,
  type OnRetry,
} from './gateway-failures.js';

// ---------------------------------------------------------------------------------------
// The loop

export interface RetryPolicy {
  /** The gateway's name in messages: `anthropic`, `openai-compatible`. */
  readonly provider: string;
  readonly maxRetries: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  readonly onRetry?: OnRetry | undefined;
  /** Belt and braces: nothing the provider echoes back may carry the key out. */
  readonly redact: (text: string) => string;
}

/**
 * Calls `attempt` until it answers, a failure is not transient, or `maxRetries` retries are
 * spent; each retry is announced through `onRetry` before its backoff (AH-LIFE-5). A
 * `retry-after` the provider sends is honoured up to `maxBackoffMs`.
 */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  classify: (error: unknown) => Failure,
  policy: RetryPolicy,
  signal: AbortSignal,
): Promise<T> {
  for (let n = 1; ; n += 1) {
    signal.throwIfAborted();
    let failure: Failure;
    try {
      return await attempt();
    } catch (error) {
      signal.throwIfAborted();
      const raw = classify(error);
      failure = { ...raw, reason: policy.redact(raw.reason) };
    }
    if (failure.kind !== 'transient') {
      const code = failure.kind === 'rejected' ? 'model_request_rejected' : 'model_unavailable';
      const what =
        failure.kind === 'rejected' ? 'the provider rejected the request' : 'the model call failed';
      throw gatewayError(
        code,
        `${policy.provider}: ${what}: ${failure.reason}`,
        failure,
        n,
        policy,
      );
    }
    if (n > policy.maxRetries)
      throw gatewayError(
        'model_retries_exhausted',
        `${policy.provider}: the model call failed on all ${n} attempt(s) (${policy.maxRetries} retr${policy.maxRetries === 1 ? 'y' : 'ies'} allowed); last: ${failure.reason}`,
        failure,
        n,
        policy,
      );
    const delayMs = backoff(policy, n, failure.retryAfterMs);
    policy.onRetry?.(n, failure.reason, {
      status: failure.status,
      errorType: failure.errorType,
      delayMs,
    });
    try {
      await sleep(delayMs, undefined, { signal });
    } catch (error) {
      signal.throwIfAborted();
      throw error;
    }
  }
}

function backoff(policy: RetryPolicy, attempt: number, retryAfterMs: number | null): number {
  const wait = Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** (attempt - 1));
  if (retryAfterMs === null) return wait;
  return Math.max(wait, Math.min(policy.maxBackoffMs, retryAfterMs));
}

function gatewayError(
  code: ModelGatewayErrorCode,
  message: string,
  failure: Failure,
  attempts: number,
  policy: RetryPolicy,
): ModelGatewayError {
  return new ModelGatewayError(code, policy.redact(message), {
    status: failure.status,
    attempts,
    errorType: failure.errorType,
    requestId: failure.requestId,
    failure: failure.failure,
    cause: failure.cause,
  });
}

/**
 * One request under an idle timer: its own abort controller, fed by the caller's signal and
 * by the timer, which `body` re-arms on every stream event it receives.
 */
export async function idleBounded<T>(
  timeoutMs: number,
  signal: AbortSignal,
  body: (signal: AbortSignal, arm: () => void) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const forward = (): void => {
    controller.abort(signal.reason);
  };
  signal.addEventListener('abort', forward, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      controller.abort();
    }, timeoutMs);
  };
  arm();
  try {
    return await body(controller.signal, arm);
  } catch (error) {
    // Aborted here but not by the caller: the idle timer fired.
    if (controller.signal.aborted && !signal.aborted) throw new AttemptTimeout(timeoutMs, error);
    throw error;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', forward);
  }
}

/** What every provider gateway takes of how it calls: bounds, retries, streaming. */
export interface CallOptions {
  /** Retries after the first attempt, for transient failures only. 0: no retry. */
  readonly maxRetries: number;
  /** The longest the gateway waits for the response to start, and then between stream events. */
  readonly timeoutMs: number;
  /** First backoff; doubles per retry up to `maxBackoffMs`. Default 500. */
  readonly backoffMs?: number | undefined;
  /** Ceiling on one backoff, including one a `retry-after` header asks for. Default 8000. */
  readonly maxBackoffMs?: number | undefined;
  /** Called before each retry; `attempt` is the 1-based attempt that failed. */
  readonly onRetry?: OnRetry | undefined;
  /** Stream the response (default). `false` asks for one JSON response instead. */
  readonly streaming?: boolean | undefined;
}

/** The bounds every gateway takes, checked once when it is built. */
export interface RetryBounds {
  readonly maxRetries: number;
  readonly timeoutMs: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
}

export function checkedBounds(
  provider: string,
  o: {
    maxRetries: number;
    timeoutMs: number;
    backoffMs?: number | undefined;
    maxBackoffMs?: number | undefined;
  },
): RetryBounds {
  const count = (field: string, value: number, min: number): number => {
    if (!Number.isInteger(value) || value < min)
      throw new ConfigError(
        'invalid_gateway_option',
        `${provider} gateway: ${field} must be an integer >= ${min}, not ${value}`,
        { field, value },
      );
    return value;
  };
  return {
    maxRetries: count('maxRetries', o.maxRetries, 0),
    timeoutMs: count('timeoutMs', o.timeoutMs, 1),
    backoffMs: count('backoffMs', o.backoffMs ?? 500, 0),
    maxBackoffMs: count('maxBackoffMs', o.maxBackoffMs ?? 8000, 0),
  };
}
