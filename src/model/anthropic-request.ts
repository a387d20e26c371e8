// The anthropic gateway's request mapping: cfh's ModelRequest as Messages API parameters
// (prompt-cache breakpoints after the system prompt, the last tool and the last block),
// and a non-streamed Message back as a ModelResponse.
import type Anthropic from '@anthropic-ai/sdk';
import type { ContentBlock, ModelMessage, ModelRequest, ModelResponse } from './gateway.js';
import { reportedCounters } from './usage.js';

const EPHEMERAL = { type: 'ephemeral' } as const;

export type CreateParams = Omit<Anthropic.MessageCreateParamsNonStreaming, 'stream'>;

export function toCreateParams(request: ModelRequest, model: string): CreateParams {
  const params: CreateParams = {
    model,
    max_tokens: request.maxOutputTokens,
    messages: toMessageParams(request.messages),
  };
  if (request.system !== '')
    params.system = [{ type: 'text', text: request.system, cache_control: EPHEMERAL }];
  if (request.tools.length > 0) {
    const last = request.tools.length - 1;
    params.tools = request.tools.map((tool, i) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.input_schema as Anthropic.Tool.InputSchema,
      ...(i === last ? { cache_control: EPHEMERAL } : {}),
    }));
  }
  return params;
}

function toMessageParams(messages: readonly ModelMessage[]): Anthropic.MessageParam[] {
  const out: { role: 'user' | 'assistant'; content: BlockParam[] }[] = [];
  for (const message of messages) {
    // The API refuses empty text blocks; an empty text carries nothing.
    const blocks = message.content
      .filter((block) => block.type !== 'text' || block.text !== '')
      .map(toBlockParam);
    // Consecutive messages of one role (the prompt slots and a compaction summary, or a
    // session's next prompt after a turn's tool results) are sent as one turn, in order:
    // roles alternate on the wire and each block is as cfh recorded it.
    const last = out.at(-1);
    if (last?.role === message.role) last.content.push(...blocks);
    else out.push({ role: message.role, content: blocks });
  }
  const lastBlocks = out.at(-1)?.content;
  if (Array.isArray(lastBlocks) && lastBlocks.length > 0) {
    const i = lastBlocks.length - 1;
    const block = lastBlocks[i];
    if (block !== undefined) lastBlocks[i] = { ...block, cache_control: EPHEMERAL };
  }
  return out;
}

type BlockParam =
  Anthropic.TextBlockParam | Anthropic.ToolUseBlockParam | Anthropic.ToolResultBlockParam;

function toBlockParam(block: ContentBlock): BlockParam {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
    case 'tool_result':
      return {
        type: 'tool_result',
        tool_use_id: block.tool_use_id,
        content: block.content,
        is_error: block.is_error,
      };
  }
}

// ---------------------------------------------------------------------------------------
// Response assembly

export function fromMessage(message: Anthropic.Message): ModelResponse {
  const content: ContentBlock[] = [];
  for (const block of message.content) {
    if (block.type === 'text') content.push({ type: 'text', text: block.text });
    else if (block.type === 'tool_use')
      content.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
  }
  return {
    model: message.model,
    content,
    stopReason: message.stop_reason ?? 'unknown',
    usage: reportedCounters(message.usage),
  };
}
