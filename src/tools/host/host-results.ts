// What a host tool's result becomes (AH-TOOL-5, AH-TOOL-10). The raw result goes to the
// evidence with every credential scrubbed (operator channel: operator-only identifiers stay);
// the model gets a structured observation: credentials scrubbed first (before anything is
// cut, so no part of one survives a cut), then operator-only identifiers replaced by opaque
// references; binary content is described, never inlined; errors are typed.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { errorObservation, type Observation } from '../observation.js';
import type { ConcealPattern, OpaqueReferences } from './opaque-refs.js';
import type { Scrubber } from './scrub.js';

export class Sanitizer {
  readonly #scrubber: Scrubber;
  readonly #refs: OpaqueReferences;
  readonly #authority: string;
  readonly #conceal: readonly ConcealPattern[];

  constructor(
    scrubber: Scrubber,
    refs: OpaqueReferences,
    authority: string,
    conceal: readonly ConcealPattern[],
  ) {
    this.#scrubber = scrubber;
    this.#refs = refs;
    this.#authority = authority;
    this.#conceal = conceal;
  }

  /**
   * For the model: no credential, no value an issued reference stands for (a tool that
   * echoes what it was given), no operator-only identifier.
   */
  forModel(text: string): string {
    const scrubbed = this.#refs.handlesFor(this.#scrubber.text(text));
    return this.#refs.conceal(this.#authority, this.#conceal, scrubbed);
  }

  /** For the evidence: no credential. */
  forEvidence(bytes: Buffer): Buffer {
    return this.#scrubber.bytes(bytes);
  }

  evidenceText(text: string): string {
    return this.#scrubber.text(text);
  }

  /** How many bytes past a cap must be read so a cut never splits a credential unseen. */
  get margin(): number {
    // Three times the longest spelling: room for a line break (`\r\n`) between any two of
    // its characters, the most a wrapped spelling the scrubber matches can take.
    return 3 * this.#scrubber.longest;
  }

  /**
   * Scrubbed, then cut to `cap` bytes, never inside a credential (Scrubber.cutBytes):
   * `output` holds up to `cap + margin` bytes, so every credential that starts before the cap
   * is whole in it and is redacted before the cut; `readCut` when reading stopped there.
   */
  scrubThenCut(output: Buffer, cap: number, readCut: boolean): { bytes: Buffer; cut: boolean } {
    const bytes = this.#scrubber.cutBytes(output, cap, readCut);
    return { bytes, cut: readCut || output.length > cap };
  }
}

function base64Bytes(data: string): number {
  return Math.floor((data.replace(/=+$/, '').length * 3) / 4);
}

type Block = CallToolResult['content'][number];

function describeBlock(block: Block, s: Sanitizer): string {
  switch (block.type) {
    case 'text':
      return s.forModel(block.text);
    case 'image':
    case 'audio':
      return `[${block.type} ${s.forModel(block.mimeType)}, ${base64Bytes(block.data)} bytes: kept in the evidence, not shown]`;
    case 'resource': {
      const r = block.resource;
      const head = `[resource ${s.forModel(r.uri)}${r.mimeType === undefined ? '' : ` ${s.forModel(r.mimeType)}`}]`;
      if ('text' in r) return `${head}\n${s.forModel(r.text)}`;
      return `${head} ${base64Bytes(r.blob)} bytes of binary content: kept in the evidence, not shown`;
    }
    case 'resource_link':
      return `[resource_link ${s.forModel(block.uri)} name ${s.forModel(block.name)}${block.mimeType === undefined ? '' : ` ${s.forModel(block.mimeType)}`}]`;
  }
}

/** A tools/call result as the model sees it. */
export function mcpObservation(result: CallToolResult, s: Sanitizer): Observation {
  const items = result.content.map((b) => describeBlock(b, s));
  if (result.structuredContent !== undefined)
    items.push(`structured content: ${s.forModel(JSON.stringify(result.structuredContent))}`);
  const failed = result.isError === true;
  return {
    status: failed ? 'error' : 'success',
    summary: failed
      ? 'the tool reported an error'
      : `${result.content.length} content block(s)${result.structuredContent === undefined ? '' : ' and structured content'}`,
    items,
    evidence_refs: [],
    next_valid_actions: [],
  };
}

/** A JSON-RPC error the server answered a call with: the model may correct its call. */
export function mcpErrorObservation(code: number, message: string, s: Sanitizer): Observation {
  return errorObservation(
    'error',
    `the server answered with MCP error ${code}: ${s.forModel(message).slice(0, 500)}`,
  );
}

export interface ExecResult {
  readonly exitCode: number | undefined;
  readonly signal: string | undefined;
  readonly stdout: Buffer;
  readonly stdoutCut: boolean;
  readonly timedOut: boolean;
  readonly timeoutMs: number;
}

/** An exec host tool's run as the model sees it: its stdout, and how it ended. */
export function execObservation(r: ExecResult, s: Sanitizer): Observation {
  if (r.timedOut) return errorObservation('timeout', `timed out after ${r.timeoutMs} ms: killed`);
  const out = s.forModel(r.stdout.toString('utf8'));
  const items = out === '' ? [] : [out];
  const cut = r.stdoutCut ? " (its output exceeded the tool's cap and was cut)" : '';
  if (r.exitCode === 0)
    return {
      status: 'success',
      summary: `exited with status 0${cut}`,
      items,
      evidence_refs: [],
      next_valid_actions: [],
    };
  return {
    status: 'error',
    summary: `${r.signal === undefined ? `exited with status ${String(r.exitCode)}` : `killed by ${r.signal}`}${cut}`,
    items,
    evidence_refs: [],
    next_valid_actions: [],
  };
}

/** The ids a durable-resource pattern finds in a raw result (group 1 when it has one). */
export function resourceIds(pattern: RegExp, raw: string, max = 100): string[] {
  const ids = new Set<string>();
  for (const m of raw.matchAll(new RegExp(pattern.source, 'gu'))) {
    const id = m[1] ?? m[0];
    if (id !== '') ids.add(id);
    if (ids.size >= max) break;
  }
  return [...ids];
}
