// What a host tool's result becomes (AH-TOOL-5, AH-TOOL-10, AH-REF-1/4). The raw result goes to
// the evidence with every credential scrubbed (operator channel: operator-only identifiers
// stay); the model gets a structured observation: credentials scrubbed first (before anything
// is cut, so no part of one survives a cut), then the fields of a structured result the
// profile names replaced by opaque references (minted from those fields and nothing else),
// then every value a held reference stands for replaced by it, then free-text matches of the
// profile's patterns concealed by markers; binary content is described, never inlined;
// errors are typed.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { DurableResources } from '../../config/host-tools-schema.js';
import { errorObservation, type Observation } from '../observation.js';
import type { ConcealPattern, OpaqueReferences } from './opaque-refs.js';
import { fieldRule, mintFields, type FieldRule } from './referents.js';
import type { Scrubber } from './scrub.js';

/** What a host tool entry's results hide from the model (host-plan.ts compiles it). */
export interface Concealment {
  /** `operatorOnly` fields of a structured result: opaque references. */
  readonly fields: readonly FieldRule[];
  /** `operatorOnly` patterns over free text: markers, resolvable to nothing. */
  readonly patterns: readonly ConcealPattern[];
}

/** The ids a result's `resources.idField` held, each with the reference the model got. */
export interface CreatedIds {
  readonly ids: readonly string[];
  readonly references: readonly string[];
}

export const NONE_CREATED: CreatedIds = { ids: [], references: [] };

export class Sanitizer {
  readonly #scrubber: Scrubber;
  readonly #refs: OpaqueReferences;
  readonly #authority: string;
  readonly #conceal: Concealment;
  /** The model's own strings of the call whose result this is (left as written in it). */
  readonly #echoes: readonly string[];

  constructor(
    scrubber: Scrubber,
    refs: OpaqueReferences,
    authority: string,
    conceal: Concealment,
    echoes: readonly string[] = [],
  ) {
    this.#scrubber = scrubber;
    this.#refs = refs;
    this.#authority = authority;
    this.#conceal = conceal;
    this.#echoes = echoes;
  }

  /** This sanitizer for the result of the call that resolved to `args` (its echoes). */
  forCall(args: unknown): Sanitizer {
    return new Sanitizer(
      this.#scrubber,
      this.#refs,
      this.#authority,
      this.#conceal,
      this.#refs.modelStringsOf(args),
    );
  }

  /**
   * Free text for the model: no credential, no value a held reference stands for (a tool
   * that echoes what it was given; the model's own strings it echoes are left as written),
   * no match of an operator-only pattern.
   */
  forModel(text: string): string {
    const scrubbed = this.#refs.handlesFor(this.#scrubber.text(text), this.#echoes);
    return this.#refs.conceal(this.#conceal.patterns, scrubbed);
  }

  /**
   * A structured result for the model, as JSON text: credentials scrubbed, each field the
   * profile names (the entry's operatorOnly fields, the tool's resources.idField) minted
   * as a reference, then as free text (forModel). Mint before any other part of the same
   * result is shown, so the values it holds are replaced there too.
   */
  structured(
    value: unknown,
    resources: DurableResources | undefined,
  ): {
    text: string;
    created: CreatedIds;
  } {
    const ids = resources === undefined ? undefined : fieldRule(resources.kind, resources.idField);
    const minted = mintFields(
      this.#refs,
      this.#authority,
      this.#scrubber.value(value),
      this.#conceal.fields,
      ids,
    );
    return {
      text: this.forModel(JSON.stringify(minted.shown)),
      created: {
        ids: minted.ids.map((m) => String(m.id)),
        references: minted.ids.map((m) => m.ref),
      },
    };
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
    // Three times the longest spelling (every character as `\uXXXX`): room for it wrapped
    // or widened as programs print it. One spread wider is still never cut into: the cut
    // removes what the view shows of its start (Scrubber.cutBytes); it is not redacted.
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

/** What the model is shown of a result, and the resource ids it created (AH-TOOL-9). */
export interface Shown {
  readonly observation: Observation;
  readonly created: CreatedIds;
}

/**
 * A tools/call result as the model sees it: its structured content minted first, so a value
 * a named field holds is a reference in the text blocks (which usually repeat it) too.
 */
export function mcpObservation(
  result: CallToolResult,
  s: Sanitizer,
  resources: DurableResources | undefined,
): Shown {
  const structured =
    result.structuredContent === undefined
      ? undefined
      : s.structured(result.structuredContent, resources);
  const items = result.content.map((b) => describeBlock(b, s));
  if (structured !== undefined) items.push(`structured content: ${structured.text}`);
  const failed = result.isError === true;
  return {
    observation: {
      status: failed ? 'error' : 'success',
      summary: failed
        ? 'the tool reported an error'
        : `${result.content.length} content block(s)${structured === undefined ? '' : ' and structured content'}`,
      items,
      evidence_refs: [],
      next_valid_actions: [],
    },
    created: structured?.created ?? NONE_CREATED,
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

/** What an exec tool printed, as the model may see it (`output: json`: its structured result). */
function execOutput(
  stdout: string,
  s: Sanitizer,
  output: 'text' | 'json',
  resources: DurableResources | undefined,
): { items: string[]; created: CreatedIds; note: string } {
  if (output === 'text') {
    const out = s.forModel(stdout);
    return { items: out === '' ? [] : [out], created: NONE_CREATED, note: '' };
  }
  if (stdout.trim() === '') return { items: [], created: NONE_CREATED, note: '' };
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch {
    // Its fields cannot be found in it: nothing of it is shown (the evidence keeps it).
    return {
      items: [],
      created: NONE_CREATED,
      note: '; its output is not the JSON its profile declares: kept in the evidence, not shown',
    };
  }
  const structured = s.structured(value, resources);
  return { items: [structured.text], created: structured.created, note: '' };
}

/** An exec host tool's run as the model sees it: its stdout, and how it ended. */
export function execObservation(
  r: ExecResult,
  s: Sanitizer,
  output: 'text' | 'json',
  resources: DurableResources | undefined,
): Shown {
  if (r.timedOut)
    return {
      observation: errorObservation('timeout', `timed out after ${r.timeoutMs} ms: killed`),
      created: NONE_CREATED,
    };
  const { items, created, note } = execOutput(r.stdout.toString('utf8'), s, output, resources);
  const cut = r.stdoutCut ? " (its output exceeded the tool's cap and was cut)" : '';
  const ok = r.exitCode === 0 && note === '';
  const ended =
    r.signal === undefined ? `exited with status ${String(r.exitCode)}` : `killed by ${r.signal}`;
  return {
    observation: {
      status: ok ? 'success' : 'error',
      summary: `${ended}${cut}${note}`,
      items,
      evidence_refs: [],
      next_valid_actions: [],
    },
    created,
  };
}
