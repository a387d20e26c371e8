// What of a child's end may reach its parent (AH-DEL-4, AH-CFC-13): a failure as a typed
// error naming the child's evidence, never its detail; an answer with control and
// bidirectional characters removed, within `returns.maxChars`, and with `returns.schema`
// JSON valid against it (ajv), passed on re-serialised. An invalid value is never exposed.
import { Ajv, type ValidateFunction } from 'ajv';
import { CfhError, ConfigError, errorMessage } from '../../errors.js';
import type { ResolvedChild } from '../../config/child-profiles.js';
import { CHILDREN_DIR } from '../../evidence/schema/events-children.js';

/** What the check reads of a child run's end. */
export interface ChildEnd {
  readonly runId: string;
  readonly status: 'completed' | 'failed' | 'cancelled';
  readonly terminalReason: string;
  readonly finalAnswer: string | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

export type Verdict =
  | { readonly kind: 'returned'; readonly text: string }
  | { readonly kind: 'failed' | 'return_invalid'; readonly code: string; readonly message: string };

export class ReturnCheck {
  readonly #validators = new Map<string, ValidateFunction>();
  readonly #ajv = new Ajv({ allErrors: false, strict: false });

  /** AH-DEL-4: what the parent may see of the child's end; failure detail stays inside. */
  verdict(
    child: ResolvedChild,
    outcome: ChildEnd,
  ):
    | { kind: 'returned'; text: string }
    | { kind: 'failed' | 'return_invalid'; code: string; message: string } {
    if (outcome.status !== 'completed' || outcome.finalAnswer === null) {
      const why = outcome.error?.code ?? outcome.terminalReason;
      return {
        kind: 'failed',
        code: 'child_failed',
        message: `child ${child.name} ended ${outcome.status} (${why}); its evidence is in ${CHILDREN_DIR}/${outcome.runId}`,
      };
    }
    const text = sanitize(outcome.finalAnswer);
    const max = child.entry.returns.maxChars;
    const invalid = (message: string) => ({
      kind: 'return_invalid' as const,
      code: 'child_return_invalid',
      message: `child ${child.name}: ${message}`,
    });
    if (text.length > max)
      return invalid(
        `its answer has ${String(text.length)} characters, over returns.maxChars ${String(max)}`,
      );
    const schema = child.entry.returns.schema;
    if (schema === undefined) return { kind: 'returned', text };
    let value: unknown;
    try {
      value = JSON.parse(unfence(text));
    } catch {
      return invalid('its answer is not JSON, and returns.schema asks for a JSON value');
    }
    const validate = this.#validatorOf(child.name, schema);
    if (!validate(value)) {
      // Named by the schema's rule, the operator's words only: the instance path and ajv's
      // message can carry the child's own property names and values (AH-DEL-3).
      const first = validate.errors?.[0];
      return invalid(
        first === undefined
          ? 'its answer breaks returns.schema'
          : `its answer breaks returns.schema's rule ${first.schemaPath} (${first.keyword})`,
      );
    }
    // Re-serialised, then stripped again: JSON.parse turns an escaped bidi or zero-width
    // character back into itself, and JSON.stringify leaves it as it is.
    return { kind: 'returned', text: sanitize(JSON.stringify(value)) };
  }

  /** Compiles a child's `returns.schema` now: one that does not compile refuses the run. */
  compile(parent: string, child: ResolvedChild): void {
    const schema = child.entry.returns.schema;
    if (schema === undefined) return;
    try {
      this.#validatorOf(child.name, schema);
    } catch (error) {
      if (error instanceof CfhError)
        throw new ConfigError(
          'child_return_invalid',
          `profile ${parent}, ${error.message}`,
          { profile: parent, child: child.name },
          'give a JSON Schema ajv compiles (docs/operators.md, "Child profiles")',
        );
      throw error;
    }
  }

  #validatorOf(name: string, schema: Record<string, unknown>): ValidateFunction {
    let v = this.#validators.get(name);
    if (v === undefined) {
      try {
        v = this.#ajv.compile(schema);
      } catch (error) {
        throw new CfhError(
          'child_return_invalid',
          `child ${name}: returns.schema does not compile: ${errorMessage(error)}`,
          {
            boundary: 'configuration',
            exitCode: 125,
          },
        );
      }
      this.#validators.set(name, v);
    }
    return v;
  }
}

// C0 (but tab and newline), DEL, C1, zero-width and bidirectional controls, built from code
// points so the source holds no control character.
const CONTROL = new RegExp(
  `[${[
    [0x00, 0x08],
    [0x0b, 0x1f],
    [0x7f, 0x9f],
    [0x200b, 0x200f],
    [0x202a, 0x202e],
    [0x2066, 0x2069],
  ]
    .map(([a, b]) => `\\u{${(a ?? 0).toString(16)}}-\\u{${(b ?? 0).toString(16)}}`)
    .join('')}]`,
  'gu',
);

/** Control characters other than newline and tab are dropped (AH-DEL-4: sanitised). */
function sanitize(text: string): string {
  return text.replace(CONTROL, '');
}

/** A JSON answer a model wrapped in a ``` fence is read inside it. */
function unfence(text: string): string {
  const m = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/.exec(text);
  return m?.[1] ?? text;
}
