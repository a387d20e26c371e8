// The `chat` wire of the openai-compatible gateway (Chat Completions, the format every
// compatible server speaks): cfh's ModelRequest as `POST /chat/completions` parameters, and
// the streamed chunks (or one JSON completion) folded into one ModelResponse. Chunks are
// parsed with zod, not trusted as the SDK's types: any server may be on the other end.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import type { ContentBlock, ModelMessage, ModelRequest, ModelResponse } from './gateway.js';
import { IncompleteStream, ProtocolError } from './gateway-failures.js';
import { toolArguments, toolInput, toolResultText, type WireUsage } from './openai-shared.js';

export type ChatParams = Omit<ChatCompletionCreateParamsStreaming, 'stream' | 'stream_options'>;
type ChatMessage = ChatParams['messages'][number];

/** Which field carries the output cap: OpenAI's own API wants the newer name. */
export type MaxTokensParam = 'max_tokens' | 'max_completion_tokens';

export function toChatParams(
  request: ModelRequest,
  model: string,
  maxTokensParam: MaxTokensParam,
): ChatParams {
  const messages: ChatMessage[] = [];
  if (request.system !== '') messages.push({ role: 'system', content: request.system });
  for (const message of request.messages) messages.push(...toChatMessages(message));
  const params: ChatParams = { model, messages, [maxTokensParam]: request.maxOutputTokens };
  if (request.tools.length > 0)
    params.tools = request.tools.map((tool) => ({
      type: 'function' as const,
      function: { name: tool.name, description: tool.description, parameters: tool.input_schema },
    }));
  return params;
}

/**
 * One cfh message as Chat messages: an assistant turn is one message (its text, its calls);
 * a user turn's tool results are `tool` messages, which must follow the calls directly,
 * before any text of the same turn.
 */
function toChatMessages(message: ModelMessage): ChatMessage[] {
  const texts = message.content.flatMap((b) =>
    b.type === 'text' && b.text !== '' ? [b.text] : [],
  );
  if (message.role === 'assistant') {
    const calls = message.content.flatMap((b) =>
      b.type === 'tool_use'
        ? [
            {
              id: b.id,
              type: 'function' as const,
              function: { name: b.name, arguments: toolArguments(b.input) },
            },
          ]
        : [],
    );
    const content = texts.length > 0 ? texts.join('\n\n') : null;
    return [{ role: 'assistant', content, ...(calls.length > 0 ? { tool_calls: calls } : {}) }];
  }
  const out: ChatMessage[] = message.content.flatMap((b) =>
    b.type === 'tool_result'
      ? [{ role: 'tool' as const, tool_call_id: b.tool_use_id, content: toolResultText(b) }]
      : [],
  );
  if (texts.length > 0) out.push({ role: 'user', content: texts.join('\n\n') });
  return out;
}

// ---------------------------------------------------------------------------------------
// Response assembly

const Usage = z.looseObject({
  prompt_tokens: z.number().nullish(),
  completion_tokens: z.number().nullish(),
});

const ToolCallDelta = z.looseObject({
  index: z.number().int().nonnegative(),
  id: z.string().nullish(),
  function: z
    .looseObject({ name: z.string().nullish(), arguments: z.string().nullish() })
    .nullish(),
});

const Chunk = z.looseObject({
  model: z.string().nullish(),
  choices: z
    .array(
      z.looseObject({
        index: z.number().int().nonnegative().default(0),
        delta: z
          .looseObject({
            content: z.string().nullish(),
            tool_calls: z.array(ToolCallDelta).nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .default([]),
  usage: Usage.nullish(),
});

const Completion = z.looseObject({
  model: z.string().nullish(),
  choices: z
    .array(
      z.looseObject({
        index: z.number().int().nonnegative().default(0),
        message: z.looseObject({
          content: z.string().nullish(),
          tool_calls: z
            .array(
              z.looseObject({
                id: z.string(),
                function: z.looseObject({ name: z.string(), arguments: z.string() }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: Usage.nullish(),
});

function usageOf(raw: z.infer<typeof Usage> | null | undefined): WireUsage {
  // prompt_tokens counts cached input too (prompt_tokens_details.cached_tokens is a part of
  // it, not beside it as the Messages API's cache counters are): input_tokens is the whole.
  return {
    ...(typeof raw?.prompt_tokens === 'number' ? { input_tokens: raw.prompt_tokens } : {}),
    ...(typeof raw?.completion_tokens === 'number' ? { output_tokens: raw.completion_tokens } : {}),
  };
}

interface BuildingCall {
  id: string;
  name: string;
  json: string;
}

/**
 * Folds chunks into one response. Only choice 0 is read (cfh asks for one). A call's
 * arguments are the concatenated deltas, parsed strictly once the stream is complete; text
 * that does not parse is kept as the raw string for the loop's argument validation to refuse
 * (a typed invalid call the model sees, AH-TOOL-5). A stream that ends with no finish_reason
 * was cut off: IncompleteStream, worth another try.
 */
export class ChatStreamAssembler {
  #model = '';
  #text = '';
  #finish: string | null = null;
  #usage: WireUsage = {};
  readonly #calls: BuildingCall[] = [];

  add(raw: unknown): void {
    const parsed = Chunk.safeParse(raw);
    if (!parsed.success) throw new ProtocolError('a chunk that is not a chat completion chunk');
    const chunk = parsed.data;
    if (typeof chunk.model === 'string' && chunk.model !== '') this.#model = chunk.model;
    if (chunk.usage != null) this.#usage = usageOf(chunk.usage);
    for (const choice of chunk.choices) {
      if (choice.index !== 0) continue;
      if (typeof choice.delta?.content === 'string') this.#text += choice.delta.content;
      for (const delta of choice.delta?.tool_calls ?? []) this.#addCall(delta);
      if (typeof choice.finish_reason === 'string') this.#finish = choice.finish_reason;
    }
  }

  #addCall(delta: z.infer<typeof ToolCallDelta>): void {
    let call = this.#calls[delta.index];
    if (call === undefined) {
      call = { id: '', name: '', json: '' };
      this.#calls[delta.index] = call;
    }
    if (typeof delta.id === 'string' && delta.id !== '' && call.id === '') call.id = delta.id;
    const fn = delta.function;
    if (typeof fn?.name === 'string' && fn.name !== '' && call.name === '') call.name = fn.name;
    if (typeof fn?.arguments === 'string') call.json += fn.arguments;
  }

  finish(requestModel: string): ModelResponse {
    if (this.#finish === null) throw new IncompleteStream('a finish_reason');
    const content: ContentBlock[] = [];
    if (this.#text !== '') content.push({ type: 'text', text: this.#text });
    this.#calls.forEach((call, index) => {
      if (call.name === '') throw new ProtocolError(`tool call ${index} has no function name`);
      content.push({
        type: 'tool_use',
        id: call.id === '' ? mintedId(index) : call.id,
        name: call.name,
        input: toolInput(call.json),
      });
    });
    return {
      model: this.#model === '' ? requestModel : this.#model,
      content,
      stopReason: this.#finish,
      usage: this.#usage,
    };
  }
}

/** A server that sends no call id (some local servers): one cfh can pair with its result. */
function mintedId(index: number): string {
  return `call_cfh_${randomUUID().slice(0, 8)}_${index}`;
}

/** A non-streamed completion, the same mapping. */
export function fromCompletion(raw: unknown, requestModel: string): ModelResponse {
  const parsed = Completion.safeParse(raw);
  if (!parsed.success) throw new ProtocolError('a response that is not a chat completion');
  const completion = parsed.data;
  const choice = completion.choices.find((c) => c.index === 0) ?? completion.choices[0];
  const content: ContentBlock[] = [];
  const text = choice?.message.content;
  if (typeof text === 'string' && text !== '') content.push({ type: 'text', text });
  for (const call of choice?.message.tool_calls ?? [])
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: toolInput(call.function.arguments),
    });
  return {
    model: completion.model ?? requestModel,
    content,
    stopReason: choice?.finish_reason ?? 'unknown',
    usage: usageOf(completion.usage),
  };
}
