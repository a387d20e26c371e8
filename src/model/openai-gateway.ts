// The `openai-compatible` model gateway: one ModelRequest becomes one streamed request to an
// endpoint that speaks OpenAI's API (vLLM, Ollama, llama.cpp's server, LiteLLM, OpenRouter,
// OpenAI itself), on the `chat` wire (Chat Completions) or the `responses` wire, assembled
// into one ModelResponse. What comes back is untrusted proposal data.
//
// - The `openai` package is loaded at the first request, not when this module is: a run on
//   another provider (and every command) never evaluates it.
// - Everything the SDK would read from the environment is given explicitly (key, base URL,
//   organization, project, log level): the route is the one cfh chose and recorded
//   (AH-INV-2), not one the process's variables bend.
// - The key goes to the SDK and nowhere else; `credential: none` sends no Authorization
//   header at all. Retries are gateway-retry.ts's (the SDK's are off), the same as the
//   anthropic gateway's: bounded, recorded, one route (AH-INV-5, AH-LIFE-5).
// - Usage counters are exactly the ones the endpoint sent (AH-USAGE-1); a server that sends
//   none leaves usage empty. The endpoint cannot count tokens for cfh: the loop keeps its
//   own bound (AH-LIFE-4).
import type OpenAI from 'openai';
import type * as OpenAiSdk from 'openai';
import { z } from 'zod';
import { ConfigError, errorMessage } from '../errors.js';
import type { ModelGateway, ModelRequest, ModelResponse, RoutePricing } from './gateway.js';
import {
  apiFailure,
  connectionFailure,
  IncompleteStream,
  localFailure,
  ProtocolError,
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
import {
  ChatStreamAssembler,
  fromCompletion,
  toChatParams,
  type MaxTokensParam,
} from './openai-chat.js';
import { fromResponse, ResponsesStreamAssembler, toResponsesParams } from './openai-responses.js';
import { StreamFailure } from './openai-shared.js';

export type OpenAiWire = 'chat' | 'responses';

export const OPENAI_COMPATIBLE = 'openai-compatible';

export interface OpenAiGatewayOptions extends CallOptions {
  /** null: the endpoint takes no credential (a local server); no Authorization is sent. */
  readonly apiKey: string | null;
  readonly baseURL: string;
  readonly model: string;
  readonly wire: OpenAiWire;
  /** Where the key came from, by reference (`env:OPENAI_API_KEY`, `none`): recorded. */
  readonly keySource: string;
  /** The model's window, from the route's configuration: the endpoint cannot say. */
  readonly contextWindowTokens?: number | undefined;
  /** The route's own prices (the profile's `model.pricing`); absent: unpriced. */
  readonly pricing?: RoutePricing | undefined;
}

/** Error codes a stream that had started may end with, worth another try. */
const TRANSIENT_STREAM_ERRORS = new Set([
  'server_error',
  'rate_limit_exceeded',
  'rate_limit_error',
  'overloaded_error',
  'api_error',
  'timeout',
]);

/** OpenAI's own API refuses `max_tokens` for its newer models; compatible servers know the old name. */
function maxTokensParamOf(baseURL: string): MaxTokensParam {
  return new URL(baseURL).hostname === 'api.openai.com' ? 'max_completion_tokens' : 'max_tokens';
}

type Sdk = typeof OpenAiSdk;
interface Loaded {
  readonly sdk: Sdk;
  readonly client: OpenAI;
}

export class OpenAiGateway implements ModelGateway {
  readonly adapter = OPENAI_COMPATIBLE;
  readonly route: Readonly<Record<string, string>>;
  readonly model: string;
  /** No endpoint of the family counts for free; `countInputTokens` cannot say. */
  readonly counting = 'round-trip';
  readonly contextWindowTokens: number | undefined;
  readonly pricing: RoutePricing | undefined;
  readonly #options: OpenAiGatewayOptions;
  readonly #timeoutMs: number;
  readonly #retry: RetryPolicy;
  readonly #maxTokensParam: MaxTokensParam;
  #sdk: Promise<Loaded> | undefined;

  constructor(options: OpenAiGatewayOptions) {
    if (options.apiKey === '')
      throw new ConfigError(
        'missing_api_key',
        `the openai-compatible gateway has an empty key (${options.keySource})`,
        { field: 'apiKey', source: options.keySource },
      );
    if (options.model === '')
      throw new ConfigError('invalid_model', 'the openai-compatible gateway needs a model', {
        field: 'model',
      });
    const bounds = checkedBounds(OPENAI_COMPATIBLE, options);
    const key = options.apiKey;
    this.#options = options;
    this.model = options.model;
    this.contextWindowTokens = options.contextWindowTokens;
    this.pricing = options.pricing;
    this.#timeoutMs = bounds.timeoutMs;
    this.#maxTokensParam = maxTokensParamOf(options.baseURL);
    this.#retry = {
      provider: OPENAI_COMPATIBLE,
      ...bounds,
      onRetry: options.onRetry,
      redact: key === null ? (text) => text : (text) => text.split(key).join('[redacted]'),
    };
    this.route = {
      provider: OPENAI_COMPATIBLE,
      baseURL: options.baseURL.replace(/\/+$/, ''),
      model: options.model,
      wire: options.wire,
      credential: options.keySource,
    };
  }

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
    const loaded = await this.#load();
    const attempt =
      this.#options.wire === 'chat'
        ? this.#chat(loaded, request, signal)
        : this.#responses(loaded, request, signal);
    return withRetries(attempt, classifierOf(loaded.sdk), this.#retry, signal);
  }

  /** Cannot say: the family has no counting endpoint every server serves. */
  countInputTokens(_request: ModelRequest, signal: AbortSignal): Promise<number | undefined> {
    signal.throwIfAborted();
    return Promise.resolve(undefined);
  }

  #load(): Promise<Loaded> {
    this.#sdk ??= import('openai').then((sdk) => ({ sdk, client: this.#client(sdk) }));
    return this.#sdk;
  }

  #client(sdk: Sdk): OpenAI {
    const { apiKey, baseURL } = this.#options;
    return new sdk.OpenAI({
      // The SDK insists on a key; with none, a placeholder it never sends (the header is
      // removed below).
      apiKey: apiKey ?? 'cfh-no-credential',
      ...(apiKey === null ? { defaultHeaders: { Authorization: null } } : {}),
      baseURL,
      organization: null,
      project: null,
      webhookSecret: null,
      adminAPIKey: null,
      // Retries are this gateway's, bounded and visible; the SDK's would be neither.
      maxRetries: 0,
      timeout: this.#timeoutMs,
      // Request and response detail stays out of the process's stdout and stderr.
      logLevel: 'off',
    });
  }

  #chat(
    { sdk, client }: Loaded,
    request: ModelRequest,
    signal: AbortSignal,
  ): () => Promise<ModelResponse> {
    const params = toChatParams(request, this.model, this.#maxTokensParam);
    return () =>
      idleBounded(this.#timeoutMs, signal, async (inner, arm) => {
        const options = { signal: inner, maxRetries: 0, timeout: this.#timeoutMs };
        if (this.#options.streaming === false) {
          const completion = await client.chat.completions.create(
            { ...params, stream: false },
            options,
          );
          return fromCompletion(completion, this.model);
        }
        const stream = await client.chat.completions.create(
          { ...params, stream: true, stream_options: { include_usage: true } },
          options,
        );
        const assembler = new ChatStreamAssembler();
        await drain(stream, sdk, 'a finish_reason', (chunk) => {
          arm();
          assembler.add(chunk);
        });
        return assembler.finish(this.model);
      });
  }

  #responses(
    { sdk, client }: Loaded,
    request: ModelRequest,
    signal: AbortSignal,
  ): () => Promise<ModelResponse> {
    const params = toResponsesParams(request, this.model);
    return () =>
      idleBounded(this.#timeoutMs, signal, async (inner, arm) => {
        const options = { signal: inner, maxRetries: 0, timeout: this.#timeoutMs };
        if (this.#options.streaming === false) {
          const response = await client.responses.create({ ...params, stream: false }, options);
          return fromResponse(response, this.model);
        }
        const stream = await client.responses.create({ ...params, stream: true }, options);
        const assembler = new ResponsesStreamAssembler();
        await drain(stream, sdk, 'response.completed', (event) => {
          arm();
          assembler.add(event);
        });
        return assembler.finish(this.model);
      });
  }
}

/**
 * Feeds every item of a started stream to `each`. The transport failing mid-body (undici's
 * "terminated") is the stream breaking off before `last`: IncompleteStream, worth another
 * try; what the SDK, the assembler or the provider said is kept as it is.
 */
async function drain<T>(
  stream: AsyncIterable<T>,
  sdk: Sdk,
  last: string,
  each: (item: T) => void,
): Promise<void> {
  try {
    for await (const item of stream) each(item);
  } catch (error) {
    const ours =
      error instanceof sdk.OpenAIError ||
      error instanceof ProtocolError ||
      error instanceof StreamFailure ||
      error instanceof SyntaxError;
    if (ours) throw error;
    throw new IncompleteStream(`${last} (${errorMessage(error)})`, { cause: error });
  }
}

// ---------------------------------------------------------------------------------------
// Failures: the SDK's error classes in the terms gateway-retry.ts shares with every gateway.

const ErrorBody = z.looseObject({ message: z.string() });

function classifierOf(sdk: Sdk): (error: unknown) => Failure {
  return (error) => {
    if (error instanceof StreamFailure)
      return apiFailure(
        {
          status: null,
          errorType: error.code,
          code: error.code,
          message: error.detail,
          requestId: null,
          headers: undefined,
        },
        TRANSIENT_STREAM_ERRORS,
        error,
      );
    if (error instanceof sdk.APIUserAbortError)
      return unavailable('aborted', 'the request was aborted', error);
    if (error instanceof sdk.APIConnectionError) return connectionFailure(error);
    if (error instanceof sdk.APIError) {
      const body = ErrorBody.safeParse(error.error);
      return apiFailure(
        {
          status: typeof error.status === 'number' ? error.status : null,
          errorType: error.type ?? null,
          code: error.code ?? null,
          message: body.success ? body.data.message : null,
          requestId: error.requestID ?? null,
          headers: error.headers instanceof Headers ? error.headers : undefined,
        },
        TRANSIENT_STREAM_ERRORS,
        error,
      );
    }
    if (error instanceof sdk.OpenAIError)
      return unavailable('malformed', errorMessage(error), error);
    return localFailure(error);
  };
}
