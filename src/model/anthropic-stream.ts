// The anthropic gateway's stream assembly: raw Messages API stream events folded into one
// ModelResponse, and the two ways a stream can fail the protocol.
import type Anthropic from '@anthropic-ai/sdk';
import type { ContentBlock, ModelResponse, ReportedUsage } from './gateway.js';
import { overlayReported, reportedCounters } from './usage.js';
import { IncompleteStream, ProtocolError } from './gateway-failures.js';

type Building =
  | { kind: 'text'; text: string }
  | { kind: 'tool_use'; id: string; name: string; startInput: unknown; json: string }
  | { kind: 'other' };

/**
 * Folds the raw stream events into one response. Text deltas are concatenated; a tool call's
 * input is the concatenated `input_json_delta`s parsed strictly once the stream is complete
 * (the SDK's own helper parses leniently, which would turn a truncated call into a partial
 * one). Input that does not parse is kept as the raw string, which the loop's argument
 * validation then rejects as a model-correctable error. Block types cfh does not request
 * (thinking, server tools) are dropped.
 */
export class StreamAssembler {
  #started = false;
  #stopped = false;
  #model = '';
  #stopReason: string | null = null;
  #usage: ReportedUsage = {};
  readonly #blocks: (Building | undefined)[] = [];

  add(event: Anthropic.RawMessageStreamEvent): void {
    if (event.type !== 'message_start' && !this.#started)
      throw new ProtocolError(`${event.type} before message_start`);
    switch (event.type) {
      case 'message_start':
        if (this.#started) throw new ProtocolError('a second message_start');
        this.#started = true;
        this.#model = event.message.model;
        this.#stopReason = event.message.stop_reason;
        this.#usage = reportedCounters(event.message.usage);
        return;
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'text') this.#blocks[event.index] = { kind: 'text', text: block.text };
        else if (block.type === 'tool_use')
          this.#blocks[event.index] = {
            kind: 'tool_use',
            id: block.id,
            name: block.name,
            startInput: block.input,
            json: '',
          };
        else this.#blocks[event.index] = { kind: 'other' };
        return;
      }
      case 'content_block_delta': {
        const block = this.#blocks[event.index];
        if (block === undefined)
          throw new ProtocolError(`content_block_delta for block ${event.index}, never started`);
        if (event.delta.type === 'text_delta' && block.kind === 'text')
          block.text += event.delta.text;
        else if (event.delta.type === 'input_json_delta' && block.kind === 'tool_use')
          block.json += event.delta.partial_json;
        return;
      }
      case 'content_block_stop':
        if (this.#blocks[event.index] === undefined)
          throw new ProtocolError(`content_block_stop for block ${event.index}, never started`);
        return;
      case 'message_delta':
        if (event.delta.stop_reason !== null) this.#stopReason = event.delta.stop_reason;
        this.#usage = overlayReported(this.#usage, event.usage);
        return;
      case 'message_stop':
        this.#stopped = true;
        return;
    }
  }

  finish(): ModelResponse {
    if (!this.#stopped)
      throw new IncompleteStream(
        this.#started ? 'message_stop' : 'message_stop (no message_start)',
      );
    const content: ContentBlock[] = [];
    for (const block of this.#blocks) {
      if (block === undefined) continue;
      if (block.kind === 'text') content.push({ type: 'text', text: block.text });
      else if (block.kind === 'tool_use')
        content.push({ type: 'tool_use', id: block.id, name: block.name, input: toolInput(block) });
    }
    return {
      model: this.#model,
      content,
      stopReason: this.#stopReason ?? 'unknown',
      usage: this.#usage,
    };
  }
}

function toolInput(block: { startInput: unknown; json: string }): unknown {
  if (block.json === '') return block.startInput ?? {};
  try {
    return JSON.parse(block.json) as unknown;
  } catch {
    return block.json;
  }
}
