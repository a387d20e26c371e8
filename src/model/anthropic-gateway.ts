// The `anthropic` model gateway: one ModelRequest becomes one streamed Messages API
// call, assembled into one ModelResponse. What comes back is untrusted proposal data.
//
// - The key is handed to the SDK and to nothing else. The route names the credential by
//   reference only (AH-INV-2); no error, log line or returned value carries the key.
// - A failure never moves the run to another credential, route or model (AH-INV-5): every
//   attempt goes to the same client, and there is no fallback.
// - Retries are ours, not the SDK's: bounded by `maxRetries`, only for transient failures
//   (429, 5xx including 529 overloaded, connection errors and timeouts, streams that break off),
//   each one reported through `onRetry` so the loop can record it (AH-LIFE-5). A request the
//   provider rejects (400, 401, 403, 404, ...) is never retried.
// - Usage counters are exactly the ones the provider sent (AH-USAGE-1, see ./usage.ts).
// - Prompt caching: tools in the order given (the caller keeps it deterministic) with a
//   breakpoint on the last one, the static system prompt with a breakpoint, and a breakpoint
//   on the last block of the conversation so the next turn reads this one's prefix.
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic, {
  AnthropicError,
  APIConnectionError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import { CfhError, ConfigError, errorMessage } from '../errors.js';
import type { ModelGateway, ModelRequest, ModelResponse } from './gateway.js';
import { fromMessage, toCreateParams, type CreateParams } from './anthropic-request.js';
import { IncompleteStream, ProtocolError, StreamAssembler } from './anthropic-stream.js';

export type ModelGatewayErrorCode =
  'model_unavailable' | 'model_request_rejected' | 'model_retries_exhausted';

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
      cause?: unknown;
    },
  ) {
    const details: Record<string, unknown> = { status: options.status, attempts: options.attempts };
    if (options.errorType != null) details['error_type'] = options.errorType;
    if (options.requestId != null) details['request_id'] = options.requestId;
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

export interface AnthropicGatewayOptions {
  readonly apiKey: string;
  /** Omitted: the SDK's default (ANTHROPIC_BASE_URL, else api.anthropic.com); the route records which. */
  readonly baseURL?: string | undefined;
  readonly model: string;
  /** Retries after the first attempt, for transient failures only. 0: no retry. */
  readonly maxRetries: number;
  /** The longest the gateway waits for the response to start, and then between stream events. */
  readonly timeoutMs: number;
  /** Where the key came from, by reference (`env:ANTHROPIC_API_KEY`): recorded, never the key. */
  readonly keySource: string;
  /** First backoff; doubles per retry up to `maxBackoffMs`. Default 500. */
  readonly backoffMs?: number | undefined;
  /** Ceiling on one backoff, including one a `retry-after` header asks for. Default 8000. */
  readonly maxBackoffMs?: number | undefined;
  /** Called before each retry; `attempt` is the 1-based attempt that failed. */
  readonly onRetry?: ((attempt: number, reason: string, detail: RetryDetail) => void) | undefined;
  /** Stream the response (default). `false` asks for one JSON message instead. */
  readonly streaming?: boolean | undefined;
}

/** Error types the provider sends on a stream that has already started, worth another try. */
const TRANSIENT_STREAM_ERRORS = new Set([
  'overloaded_error',
  'api_error',
  'rate_limit_error',
  'timeout_error',
]);
const REASON_LIMIT = 300;

export class AnthropicGateway implements ModelGateway {
  readonly adapter = 'anthropic';
  readonly route: Readonly<Record<string, string>>;
  readonly model: string;
  /** A count is a request to the provider: asked only when the loop's bound does not fit. */
  readonly counting = 'round-trip';
  /**
   * Every Claude model the Messages API serves by default has a window of at least 200k
   * tokens (a larger one is opt-in); a profile's `context.windowTokens` says otherwise.
   */
  readonly contextWindowTokens = 200_000;
  readonly #client: Anthropic;
  readonly #key: string;
  readonly #model: string;
  readonly #maxRetries: number;
  readonly #timeoutMs: number;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #streaming: boolean;
  readonly #onRetry: AnthropicGatewayOptions['onRetry'];

  constructor(options: AnthropicGatewayOptions) {
    if (options.apiKey === '')
      throw new ConfigError(
        'missing_api_key',
        `the anthropic gateway has an empty key (${options.keySource})`,
        {
          field: 'apiKey',
          source: options.keySource,
        },
      );
    if (options.model === '')
      throw new ConfigError('invalid_model', 'the anthropic gateway needs a model', {
        field: 'model',
      });
    const count = (field: string, value: number, min: number): number => {
      if (!Number.isInteger(value) || value < min)
        throw new ConfigError(
          'invalid_gateway_option',
          `anthropic gateway: ${field} must be an integer >= ${min}, not ${value}`,
          {
            field,
            value,
          },
        );
      return value;
    };
    this.#key = options.apiKey;
    this.#model = options.model;
    this.model = options.model;
    this.#maxRetries = count('maxRetries', options.maxRetries, 0);
    this.#timeoutMs = count('timeoutMs', options.timeoutMs, 1);
    this.#backoffMs = count('backoffMs', options.backoffMs ?? 500, 0);
    this.#maxBackoffMs = count('maxBackoffMs', options.maxBackoffMs ?? 8000, 0);
    this.#streaming = options.streaming ?? true;
    this.#onRetry = options.onRetry;
    this.#client = new Anthropic({
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      // Retries are this gateway's, bounded and visible; the SDK's would be neither.
      maxRetries: 0,
      timeout: this.#timeoutMs,
      // Request and response detail stays out of the process's stdout and stderr...
      logLevel: 'off',
      // ...and out of any trace exporter the environment might switch on.
      openTelemetry: false,
    });
    this.route = {
      provider: 'anthropic',
      baseURL: this.#client.baseURL,
      model: options.model,
      credential: options.keySource,
    };
  }

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
    const params = toCreateParams(request, this.#model);
    for (let attempt = 1; ; attempt += 1) {
      signal.throwIfAborted();
      let failure: Failure;
      try {
        return await this.#attempt(params, signal);
      } catch (error) {
        signal.throwIfAborted();
        failure = this.#classify(error);
      }
      if (failure.kind === 'rejected' || failure.kind === 'unavailable') {
        const code = failure.kind === 'rejected' ? 'model_request_rejected' : 'model_unavailable';
        const what =
          failure.kind === 'rejected'
            ? 'the provider rejected the request'
            : 'the model call failed';
        throw this.#error(code, `anthropic: ${what}: ${failure.reason}`, failure, attempt);
      }
      if (attempt > this.#maxRetries)
        throw this.#error(
          'model_retries_exhausted',
          `anthropic: the model call failed on all ${attempt} attempt(s) (${this.#maxRetries} retr${this.#maxRetries === 1 ? 'y' : 'ies'} allowed); last: ${failure.reason}`,
          failure,
          attempt,
        );
      const delayMs = this.#delay(attempt, failure.retryAfterMs);
      this.#onRetry?.(attempt, failure.reason, {
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

  /**
   * The provider's own count of the request's input (POST /v1/messages/count_tokens), once,
   * not retried: on any failure undefined, and the caller keeps its upper bound (fail closed).
   */
  async countInputTokens(request: ModelRequest, signal: AbortSignal): Promise<number | undefined> {
    // The same request as `complete` sends, less max_tokens, which counting does not take.
    const { model, messages, system, tools } = toCreateParams(request, this.#model);
    const params = {
      model,
      messages,
      ...(system === undefined ? {} : { system }),
      ...(tools === undefined ? {} : { tools }),
    };
    try {
      const counted = await this.#client.messages.countTokens(params, {
        signal,
        maxRetries: 0,
        timeout: this.#timeoutMs,
      });
      const n = counted.input_tokens;
      return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
    } catch {
      signal.throwIfAborted();
      return undefined;
    }
  }

  /** One request: its own abort controller, fed by the caller's signal and an idle timer. */
  async #attempt(params: CreateParams, signal: AbortSignal): Promise<ModelResponse> {
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
      }, this.#timeoutMs);
    };
    arm();
    const options = { signal: controller.signal, maxRetries: 0, timeout: this.#timeoutMs };
    try {
      if (!this.#streaming) {
        const message = await this.#client.messages.create({ ...params, stream: false }, options);
        return fromMessage(message);
      }
      const stream = await this.#client.messages.create({ ...params, stream: true }, options);
      const assembler = new StreamAssembler();
      // An aborted stream ends quietly in the SDK; `finish` then finds no message_stop.
      for await (const event of stream) {
        arm();
        assembler.add(event);
      }
      return assembler.finish();
    } catch (error) {
      // Aborted here but not by the caller: the idle timer fired.
      if (controller.signal.aborted && !signal.aborted)
        throw new AttemptTimeout(this.#timeoutMs, error);
      throw error;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', forward);
    }
  }

  #delay(attempt: number, retryAfterMs: number | null): number {
    const backoff = Math.min(this.#maxBackoffMs, this.#backoffMs * 2 ** (attempt - 1));
    if (retryAfterMs === null) return backoff;
    return Math.max(backoff, Math.min(this.#maxBackoffMs, retryAfterMs));
  }

  #classify(error: unknown): Failure {
    const failure = classify(error);
    return { ...failure, reason: this.#redact(failure.reason) };
  }

  #error(code: ModelGatewayErrorCode, message: string, failure: Failure, attempts: number) {
    return new ModelGatewayError(code, this.#redact(message), {
      status: failure.status,
      attempts,
      errorType: failure.errorType,
      requestId: failure.requestId,
      cause: failure.cause,
    });
  }

  /** Belt and braces: nothing the provider echoes back may carry the key out. */
  #redact(text: string): string {
    return text.split(this.#key).join('[redacted]');
  }
}

// ---------------------------------------------------------------------------------------
// Failures

class AttemptTimeout extends Error {
  constructor(ms: number, cause: unknown) {
    super(`no response from the provider within ${ms} ms`, { cause });
    this.name = 'AttemptTimeout';
  }
}

interface Failure {
  readonly kind: 'transient' | 'rejected' | 'unavailable';
  readonly status: number | null;
  readonly errorType: string | null;
  readonly requestId: string | null;
  readonly retryAfterMs: number | null;
  /** Short, key-free: recorded with the retry event and in the final error. */
  readonly reason: string;
  readonly cause: unknown;
}

function bounded(text: string): string {
  return text.length <= REASON_LIMIT ? text : `${text.slice(0, REASON_LIMIT)}...`;
}

function classify(error: unknown): Failure {
  const base = { status: null, errorType: null, requestId: null, retryAfterMs: null, cause: error };
  if (error instanceof AttemptTimeout || error instanceof IncompleteStream)
    return { ...base, kind: 'transient', reason: error.message };
  if (error instanceof ProtocolError || error instanceof SyntaxError)
    return { ...base, kind: 'unavailable', reason: bounded(errorMessage(error)) };
  if (error instanceof APIUserAbortError)
    return { ...base, kind: 'unavailable', reason: 'the request was aborted' };
  if (error instanceof APIConnectionError)
    return {
      ...base,
      kind: 'transient',
      reason: bounded(`connection error: ${connectionDetail(error)}`),
    };
  if (error instanceof APIError) {
    const status = typeof error.status === 'number' ? error.status : null;
    const errorType = error.type;
    const what = [status, errorType].filter((part) => part !== null).join(' ') || 'provider error';
    const reason = bounded(error.apiMessage !== null ? `${what}: ${error.apiMessage}` : what);
    const transient =
      status === null
        ? errorType !== null && TRANSIENT_STREAM_ERRORS.has(errorType)
        : status === 429 || status >= 500;
    return {
      kind: transient ? 'transient' : 'rejected',
      status,
      errorType,
      requestId: error.requestID ?? null,
      retryAfterMs: retryAfter(error.headers as Headers | undefined),
      reason,
      cause: error,
    };
  }
  if (error instanceof AnthropicError)
    return { ...base, kind: 'unavailable', reason: bounded(errorMessage(error)) };
  // What is left is the transport failing while the body streams (undici: "terminated").
  return {
    ...base,
    kind: 'transient',
    reason: bounded(`connection error: ${errorMessage(error)}`),
  };
}

function connectionDetail(error: APIConnectionError): string {
  const cause = error.cause;
  const inner = cause instanceof Error && cause.cause instanceof Error ? cause.cause.message : null;
  return inner === null ? error.message : `${error.message} (${inner})`;
}

function retryAfter(headers: Headers | undefined): number | null {
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const seconds = Number.parseFloat(headers?.get('retry-after') ?? '');
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  return null;
}
