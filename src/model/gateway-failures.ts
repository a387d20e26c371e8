// What a failed model call is, the same for every provider gateway: the typed error with its
// failure class, and the classification of a failure as worth another try or not. Each
// gateway maps its own SDK's error classes into these terms (ApiFailureFacts); the retry
// loop (gateway-retry.ts) decides on them alone.
import { CfhError, errorMessage } from '../errors.js';

export type ModelGatewayErrorCode =
  'model_unavailable' | 'model_request_rejected' | 'model_retries_exhausted';

/**
 * What went wrong, in the operator's words, recorded in the error's details as `failure`:
 * the same vocabulary whatever the provider.
 */
export type FailureClass =
  | 'auth'
  | 'rate_limit'
  | 'context_length'
  | 'server'
  | 'rejected'
  | 'stream'
  | 'timeout'
  | 'connection'
  | 'malformed'
  | 'aborted';

/**
 * The model gateway failed the call. `model_request_rejected`: the provider refused the
 * request (not retried). `model_retries_exhausted`: transient failures on every allowed
 * attempt. `model_unavailable`: anything else that stops the call (a malformed response, a
 * client-side failure). Never carries the key; operator detail only, not for the model.
 */
export class ModelGatewayError extends CfhError {
  declare readonly code: ModelGatewayErrorCode;
  /** The provider's HTTP status, or null when there was none (connection error, stream). */
  readonly status: number | null;
  /** How many requests this call sent. */
  readonly attempts: number;

  constructor(
    code: ModelGatewayErrorCode,
    message: string,
    options: {
      status: number | null;
      attempts: number;
      errorType?: string | null;
      requestId?: string | null;
      failure?: FailureClass;
      cause?: unknown;
    },
  ) {
    const details: Record<string, unknown> = { status: options.status, attempts: options.attempts };
    if (options.errorType != null) details['error_type'] = options.errorType;
    if (options.requestId != null) details['request_id'] = options.requestId;
    if (options.failure !== undefined) details['failure'] = options.failure;
    // AH-DIAG-1: the provider's side of the call failed, not cfh's.
    super(code, message, {
      boundary: 'model-gateway',
      details,
      cause: options.cause,
      exitCode: 1,
    });
    this.status = options.status;
    this.attempts = options.attempts;
  }
}

export interface RetryDetail {
  readonly status: number | null;
  readonly errorType: string | null;
  /** How long the gateway waits before the next attempt. */
  readonly delayMs: number;
}

export type OnRetry = (attempt: number, reason: string, detail: RetryDetail) => void;

export interface Failure {
  readonly kind: 'transient' | 'rejected' | 'unavailable';
  readonly failure: FailureClass;
  readonly status: number | null;
  readonly errorType: string | null;
  readonly requestId: string | null;
  readonly retryAfterMs: number | null;
  /** Short, key-free: recorded with the retry event and in the final error. */
  readonly reason: string;
  readonly cause: unknown;
}

const REASON_LIMIT = 300;

export function bounded(text: string): string {
  return text.length <= REASON_LIMIT ? text : `${text.slice(0, REASON_LIMIT)}...`;
}

/** No response within the idle bound: before it started, or between stream events. */
export class AttemptTimeout extends Error {
  constructor(ms: number, cause: unknown) {
    super(`no response from the provider within ${ms} ms`, { cause });
    this.name = 'AttemptTimeout';
  }
}

/** The stream broke a rule of the protocol: not worth repeating. */
export class ProtocolError extends Error {
  constructor(what: string) {
    super(`malformed response stream: ${what}`);
    this.name = 'ProtocolError';
  }
}

/** The stream ended (connection closed) before the protocol's last event. */
export class IncompleteStream extends Error {
  constructor(what: string, options?: { cause: unknown }) {
    super(`the response stream ended before ${what}`, options);
    this.name = 'IncompleteStream';
  }
}

/** An HTTP-level failure as an SDK reports it, in the terms both SDKs share. */
export interface ApiFailureFacts {
  readonly status: number | null;
  readonly errorType: string | null;
  /** A stable code the provider sent (OpenAI's `code`, e.g. `context_length_exceeded`). */
  readonly code: string | null;
  readonly message: string | null;
  readonly requestId: string | null;
  readonly headers: Headers | undefined;
}

/** Error codes and wording by which providers say a request does not fit the context. */
const CONTEXT_CODES = new Set(['context_length_exceeded', 'string_above_max_length']);
const CONTEXT_WORDING =
  /context (length|window)|maximum context|prompt is too long|too many tokens/i;

/**
 * An HTTP failure: 429 and 5xx are transient, any other status a rejection. With no status
 * (an error event on a stream that had started) the provider's error type decides.
 */
export function apiFailure(
  facts: ApiFailureFacts,
  transientStreamTypes: ReadonlySet<string>,
  cause: unknown,
): Failure {
  const { status, errorType } = facts;
  const what = [status, errorType].filter((part) => part !== null).join(' ') || 'provider error';
  const reason = bounded(facts.message !== null ? `${what}: ${facts.message}` : what);
  const transient =
    status === null
      ? errorType !== null && transientStreamTypes.has(errorType)
      : status === 429 || status >= 500;
  return {
    kind: transient ? 'transient' : 'rejected',
    failure: failureClass(facts, transient),
    status,
    errorType,
    requestId: facts.requestId,
    retryAfterMs: retryAfter(facts.headers),
    reason,
    cause,
  };
}

function failureClass(facts: ApiFailureFacts, transient: boolean): FailureClass {
  const { status } = facts;
  if (status === 401 || status === 403) return 'auth';
  if (status === 429 || facts.errorType === 'rate_limit_error') return 'rate_limit';
  if (
    (facts.code !== null && CONTEXT_CODES.has(facts.code)) ||
    (status !== null && status < 500 && CONTEXT_WORDING.test(facts.message ?? ''))
  )
    return 'context_length';
  if (transient) return status === null ? 'stream' : 'server';
  return 'rejected';
}

/** The failures no SDK class names: ours (timeouts, streams) and the transport's. */
export function localFailure(error: unknown): Failure {
  const base = { status: null, errorType: null, requestId: null, retryAfterMs: null };
  if (error instanceof AttemptTimeout)
    return { ...base, kind: 'transient', failure: 'timeout', reason: error.message, cause: error };
  if (error instanceof IncompleteStream)
    return { ...base, kind: 'transient', failure: 'stream', reason: error.message, cause: error };
  if (error instanceof ProtocolError || error instanceof SyntaxError)
    return {
      ...base,
      kind: 'unavailable',
      failure: 'malformed',
      reason: bounded(errorMessage(error)),
      cause: error,
    };
  // What is left is the transport failing while the body streams (undici: "terminated").
  return {
    ...base,
    kind: 'transient',
    failure: 'connection',
    reason: bounded(`connection error: ${errorMessage(error)}`),
    cause: error,
  };
}

/** A connection error with the reason the transport gave underneath it. */
export function connectionFailure(error: Error): Failure {
  const cause = error.cause;
  const inner = cause instanceof Error && cause.cause instanceof Error ? cause.cause.message : null;
  const detail = inner === null ? error.message : `${error.message} (${inner})`;
  return {
    kind: 'transient',
    failure: 'connection',
    status: null,
    errorType: null,
    requestId: null,
    retryAfterMs: null,
    reason: bounded(`connection error: ${detail}`),
    cause: error,
  };
}

export function unavailable(failure: FailureClass, reason: string, cause: unknown): Failure {
  return {
    kind: 'unavailable',
    failure,
    status: null,
    errorType: null,
    requestId: null,
    retryAfterMs: null,
    reason: bounded(reason),
    cause,
  };
}

export function retryAfter(headers: Headers | undefined): number | null {
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const seconds = Number.parseFloat(headers?.get('retry-after') ?? '');
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  return null;
}
