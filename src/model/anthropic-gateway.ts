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
import Anthropic, {
  AnthropicError,
  APIConnectionError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import { ConfigError, errorMessage } from '../errors.js';
import type { ModelGateway, ModelRequest, ModelResponse, RoutePricing } from './gateway.js';
import { fromMessage, toCreateParams, type CreateParams } from './anthropic-request.js';
import { StreamAssembler } from './anthropic-stream.js';
import {
  apiFailure,
  connectionFailure,
  localFailure,
  unavailable,
  type Failure,
} from './gateway-failures.js';
import {
  checkedBounds,
  idleBounded,
  withRetries,
  type CallOptions,
  type RetryPolicy,
} from './gateway-retry.js';

export {
  ModelGatewayError,
  type ModelGatewayErrorCode,
  type RetryDetail,
} from './gateway-failures.js';

export interface AnthropicGatewayOptions extends CallOptions {
  readonly apiKey: string;
  /** Omitted: the SDK's default (ANTHROPIC_BASE_URL, else api.anthropic.com); the route records which. */
  readonly baseURL?: string | undefined;
  readonly model: string;
  /** Where the key came from, by reference (`env:ANTHROPIC_API_KEY`): recorded, never the key. */
  readonly keySource: string;
  /** The route's own prices (a profile's `model.pricing`), over the rate card. */
  readonly pricing?: RoutePricing | undefined;
}

/** Error types the provider sends on a stream that has already started, worth another try. */
const TRANSIENT_STREAM_ERRORS = new Set([
  'overloaded_error',
  'api_error',
  'rate_limit_error',
  'timeout_error',
]);

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
  readonly pricing: RoutePricing | undefined;
  readonly #client: Anthropic;
  readonly #model: string;
  readonly #timeoutMs: number;
  readonly #streaming: boolean;
  readonly #retry: RetryPolicy;

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
    const bounds = checkedBounds('anthropic', options);
    const key = options.apiKey;
    this.#model = options.model;
    this.model = options.model;
    this.#timeoutMs = bounds.timeoutMs;
    this.#streaming = options.streaming ?? true;
    this.pricing = options.pricing;
    this.#retry = {
      provider: 'anthropic',
      ...bounds,
      onRetry: options.onRetry,
      redact: (text) => text.split(key).join('[redacted]'),
    };
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
    return withRetries(() => this.#attempt(params, signal), classify, this.#retry, signal);
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

  /** One request under the idle timer (re-armed by every stream event). */
  async #attempt(params: CreateParams, signal: AbortSignal): Promise<ModelResponse> {
    return idleBounded(this.#timeoutMs, signal, async (inner, arm) => {
      const options = { signal: inner, maxRetries: 0, timeout: this.#timeoutMs };
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
    });
  }
}

// ---------------------------------------------------------------------------------------
// Failures: the SDK's error classes in the terms gateway-retry.ts shares with every gateway.

function classify(error: unknown): Failure {
  if (error instanceof APIUserAbortError)
    return unavailable('aborted', 'the request was aborted', error);
  if (error instanceof APIConnectionError) return connectionFailure(error);
  if (error instanceof APIError)
    return apiFailure(
      {
        status: typeof error.status === 'number' ? error.status : null,
        errorType: error.type,
        code: null,
        message: error.apiMessage,
        requestId: error.requestID ?? null,
        headers: error.headers as Headers | undefined,
      },
      TRANSIENT_STREAM_ERRORS,
      error,
    );
  if (error instanceof AnthropicError) return unavailable('malformed', errorMessage(error), error);
  return localFailure(error);
}
