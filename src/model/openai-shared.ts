// What both wires of the openai-compatible gateway (chat, responses) map the same way:
// a tool call's arguments to and from their JSON text, a tool result as text.
import type { ContentBlock, ReportedUsage } from './gateway.js';

/** The counters a wire reported, exactly (AH-USAGE-1: absent stays absent). */
export type WireUsage = ReportedUsage;

/**
 * A call's arguments as the wire carries them: JSON text. Arguments that did not parse
 * were kept as the model's raw text (toolInput) and go back as that same text, so the
 * conversation shows the model what it sent.
 */
export function toolArguments(input: unknown): string {
  return typeof input === 'string' ? input : JSON.stringify(input ?? {});
}

/**
 * A call's arguments from the wire's JSON text, parsed strictly once complete. Text that does
 * not parse is kept as the raw string: the loop's argument validation refuses it as a typed
 * invalid call the model sees (AH-TOOL-5), never a crash. No text at all is no arguments.
 */
export function toolInput(json: string): unknown {
  if (json.trim() === '') return {};
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return json;
  }
}

/**
 * A tool result as the wire's text. Neither wire has the Messages API's `is_error`, so a
 * failed call says so in its first words: a failure never reads as a successful observation
 * (AH-TOOL-5).
 */
export function toolResultText(block: Extract<ContentBlock, { type: 'tool_result' }>): string {
  return block.is_error ? `[tool call failed] ${block.content}` : block.content;
}

/**
 * The provider failed the response inside a stream that had started (`response.failed`, an
 * `error` event): classified like an HTTP failure with no status, by its code.
 */
export class StreamFailure extends Error {
  readonly code: string | null;
  readonly detail: string | null;

  constructor(code: string | null, detail: string | null) {
    super(`the provider failed the response${code === null ? '' : ` (${code})`}`);
    this.name = 'StreamFailure';
    this.code = code;
    this.detail = detail;
  }
}
