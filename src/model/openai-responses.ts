// The `responses` wire of the openai-compatible gateway (the Responses API, where the
// endpoint serves it): cfh's ModelRequest as `POST /responses` parameters, and the streamed
// events (or one JSON response) folded into one ModelResponse. Events are parsed with zod.
// `store: false`: the provider is asked not to keep the conversation (a retention route the
// run did not choose, AH-INV-5); every request carries the whole context instead.
import { z } from 'zod';
import type { ResponseCreateParamsStreaming } from 'openai/resources/responses/responses';
import type { ContentBlock, ModelMessage, ModelRequest, ModelResponse } from './gateway.js';
import { IncompleteStream, ProtocolError } from './gateway-failures.js';
import {
  StreamFailure,
  toolArguments,
  toolInput,
  toolResultText,
  type WireUsage,
} from './openai-shared.js';

export type ResponsesParams = Omit<ResponseCreateParamsStreaming, 'stream'>;
type InputItem = Exclude<ResponsesParams['input'], string | undefined | null>[number];

export function toResponsesParams(request: ModelRequest, model: string): ResponsesParams {
  const params: ResponsesParams = {
    model,
    input: request.messages.flatMap(toInputItems),
    max_output_tokens: request.maxOutputTokens,
    store: false,
  };
  if (request.system !== '') params.instructions = request.system;
  if (request.tools.length > 0)
    params.tools = request.tools.map((tool) => ({
      type: 'function' as const,
      name: tool.name,
      description: tool.description,
      parameters: tool.input_schema,
      // cfh's schemas are not written for strict mode (optional fields, open objects).
      strict: false,
    }));
  return params;
}

/** One cfh message as input items, in its blocks' order. */
function toInputItems(message: ModelMessage): InputItem[] {
  const out: InputItem[] = [];
  for (const block of message.content) {
    if (block.type === 'text') {
      if (block.text !== '') out.push({ role: message.role, content: block.text });
    } else if (block.type === 'tool_use')
      out.push({
        type: 'function_call',
        call_id: block.id,
        name: block.name,
        arguments: toolArguments(block.input),
      });
    else
      out.push({
        type: 'function_call_output',
        call_id: block.tool_use_id,
        output: toolResultText(block),
      });
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Response assembly

const Usage = z.looseObject({
  input_tokens: z.number().nullish(),
  output_tokens: z.number().nullish(),
});

const Item = z.looseObject({
  type: z.string(),
  call_id: z.string().nullish(),
  name: z.string().nullish(),
  arguments: z.string().nullish(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().nullish() })).nullish(),
});

const ResponseObject = z.looseObject({
  model: z.string().nullish(),
  status: z.string().nullish(),
  output: z.array(Item).nullish(),
  usage: Usage.nullish(),
  incomplete_details: z.looseObject({ reason: z.string().nullish() }).nullish(),
  error: z.looseObject({ code: z.string().nullish(), message: z.string().nullish() }).nullish(),
});

const Event = z.looseObject({
  type: z.string(),
  output_index: z.number().int().nonnegative().nullish(),
  delta: z.string().nullish(),
  item: Item.nullish(),
  response: ResponseObject.nullish(),
  code: z.string().nullish(),
  message: z.string().nullish(),
});

function usageOf(raw: z.infer<typeof Usage> | null | undefined): WireUsage {
  // input_tokens counts cached input too (input_tokens_details.cached_tokens is a part of it).
  return {
    ...(typeof raw?.input_tokens === 'number' ? { input_tokens: raw.input_tokens } : {}),
    ...(typeof raw?.output_tokens === 'number' ? { output_tokens: raw.output_tokens } : {}),
  };
}

type Building =
  | { kind: 'text'; text: string }
  | { kind: 'call'; id: string; name: string; json: string }
  | { kind: 'other' };

function building(item: z.infer<typeof Item>): Building {
  if (item.type === 'function_call')
    return {
      kind: 'call',
      id: item.call_id ?? '',
      name: item.name ?? '',
      json: item.arguments ?? '',
    };
  if (item.type === 'message') return { kind: 'text', text: messageText(item) };
  // Reasoning and server-side tool items are not requested; dropped.
  return { kind: 'other' };
}

function messageText(item: z.infer<typeof Item>): string {
  return (item.content ?? [])
    .filter((c) => c.type === 'output_text' && typeof c.text === 'string')
    .map((c) => c.text ?? '')
    .join('');
}

/**
 * Folds the events into one response. Items by output_index: text deltas concatenated,
 * argument deltas concatenated; an item's `done` event, when it comes, is its final form.
 * No response.completed (or .incomplete) before the stream ends: IncompleteStream. A
 * `response.failed` or `error` event: the provider's failure, classified like an HTTP one.
 */
export class ResponsesStreamAssembler {
  #model = '';
  #status: string | null = null;
  #usage: WireUsage = {};
  readonly #items: (Building | undefined)[] = [];

  add(raw: unknown): void {
    const parsed = Event.safeParse(raw);
    if (!parsed.success) throw new ProtocolError('an event that is not a Responses stream event');
    const event = parsed.data;
    const index = event.output_index ?? undefined;
    switch (event.type) {
      case 'response.created':
      case 'response.in_progress':
        if (typeof event.response?.model === 'string') this.#model = event.response.model;
        return;
      case 'response.output_item.added':
      case 'response.output_item.done':
        if (index === undefined || event.item == null)
          throw new ProtocolError(`${event.type} without output_index or item`);
        this.#items[index] = building(event.item);
        return;
      case 'response.output_text.delta':
      case 'response.function_call_arguments.delta':
        this.#delta(event.type, index, event.delta ?? '');
        return;
      case 'response.completed':
      case 'response.incomplete':
        this.#end(event.response);
        return;
      case 'response.failed':
        throw new StreamFailure(
          event.response?.error?.code ?? null,
          event.response?.error?.message ?? null,
        );
      case 'error':
        throw new StreamFailure(event.code ?? null, event.message ?? null);
    }
  }

  #delta(type: string, index: number | undefined, delta: string): void {
    const item = index === undefined ? undefined : this.#items[index];
    if (item === undefined) throw new ProtocolError(`${type} for an item never added`);
    if (item.kind === 'text' && type === 'response.output_text.delta') item.text += delta;
    else if (item.kind === 'call' && type === 'response.function_call_arguments.delta')
      item.json += delta;
  }

  #end(response: z.infer<typeof ResponseObject> | null | undefined): void {
    if (response == null) throw new ProtocolError('a terminal event without its response');
    if (typeof response.model === 'string') this.#model = response.model;
    this.#status = response.incomplete_details?.reason ?? response.status ?? 'completed';
    this.#usage = usageOf(response.usage);
  }

  finish(requestModel: string): ModelResponse {
    if (this.#status === null) throw new IncompleteStream('response.completed');
    return {
      model: this.#model === '' ? requestModel : this.#model,
      content: contentOf(this.#items),
      stopReason: this.#status,
      usage: this.#usage,
    };
  }
}

function contentOf(items: readonly (Building | undefined)[]): ContentBlock[] {
  const content: ContentBlock[] = [];
  items.forEach((item, index) => {
    if (item === undefined || item.kind === 'other') return;
    if (item.kind === 'text') {
      if (item.text !== '') content.push({ type: 'text', text: item.text });
      return;
    }
    if (item.name === '' || item.id === '')
      throw new ProtocolError(`function call ${index} has no name or call_id`);
    content.push({ type: 'tool_use', id: item.id, name: item.name, input: toolInput(item.json) });
  });
  return content;
}

/** A non-streamed response, the same mapping. */
export function fromResponse(raw: unknown, requestModel: string): ModelResponse {
  const parsed = ResponseObject.safeParse(raw);
  if (!parsed.success) throw new ProtocolError('a response that is not a Responses API response');
  const response = parsed.data;
  if (response.status === 'failed')
    throw new StreamFailure(response.error?.code ?? null, response.error?.message ?? null);
  return {
    model: response.model ?? requestModel,
    content: contentOf((response.output ?? []).map(building)),
    stopReason: response.incomplete_details?.reason ?? response.status ?? 'completed',
    usage: usageOf(response.usage),
  };
}
