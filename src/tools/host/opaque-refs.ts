// Opaque references (AH-TOOL-8, AH-TOOL-10): identifiers a profile marks operator-only
// (`operatorOnly:` patterns, and the ids of durable resources a tool creates) reach the model
// as `cfh-ref:<authority>:<n>`, never as themselves. The model may hand a reference back to
// a tool: it is resolved before the call is decided, and only for the authority (the host
// tool entry) that issued it. A reference from another authority, or one never issued, is
// an invalid argument: the call is denied and nothing is sent. A value a reference stands for
// never comes back to the model in clear (AH-REF-4): every host result the model is shown has
// each issued value replaced by its handle, in every spelling the credential scrubber knows
// (exact, any case, JSON-escaped, percent-encoded, hex, base64), so a tool that echoes what a
// resolved reference gave it, in a context no pattern matches, launders nothing.
import { Scrubber } from './scrub.js';

const REF = /cfh-ref:([A-Za-z0-9_-]{1,32}):([0-9]{1,9})/g;

export interface IssuedReference {
  readonly ref: string;
  readonly authority: string;
  readonly kind: string;
}

export interface RefIssue {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

/** Thrown (and turned into a validation issue) when a reference cannot be resolved. */
export class ReferenceRefused extends Error {
  readonly issues: readonly RefIssue[];
  constructor(issues: readonly RefIssue[]) {
    super(issues.map((i) => i.message).join('; '));
    this.issues = issues;
  }
}

export class OpaqueReferences {
  readonly #byValue = new Map<string, string>();
  readonly #byRef = new Map<string, { value: string; authority: string; kind: string }>();
  #next = 0;
  /** The issued values as a scrubber, rebuilt when a reference is issued. */
  #handles: { readonly at: number; readonly scrubber: Scrubber } | undefined;
  /** Each new reference, for the evidence (the value never: it is operator-only). */
  onIssued: ((issued: IssuedReference) => void) | undefined;

  /** The reference for `value` under `authority`; the same value gets the same reference. */
  referenceFor(authority: string, kind: string, value: string): string {
    const key = `${authority}\0${value}`;
    const known = this.#byValue.get(key);
    if (known !== undefined) return known;
    this.#next += 1;
    const ref = `cfh-ref:${authority}:${this.#next}`;
    this.#byValue.set(key, ref);
    this.#byRef.set(ref, { value, authority, kind });
    this.onIssued?.({ ref, authority, kind });
    return ref;
  }

  /** `text` with every value any reference stands for replaced by that reference. */
  handlesFor(text: string): string {
    if (this.#byRef.size === 0) return text;
    if (this.#handles?.at !== this.#next) {
      const values = [...this.#byRef].map(([ref, r]) => ({
        name: r.kind,
        value: r.value,
        replacement: ref,
        fragments: false,
      }));
      this.#handles = { at: this.#next, scrubber: new Scrubber(values) };
    }
    return this.#handles.scrubber.text(text);
  }

  /** `text` with every match of the authority's patterns replaced by its reference. */
  conceal(authority: string, patterns: readonly ConcealPattern[], text: string): string {
    let out = text;
    for (const p of patterns) {
      // Never inside a reference already issued: a pattern for digits must not rewrite one.
      out = outsideReferences(out, (segment) =>
        replaceMatches(segment, p.regex, (m) => {
          const match = m[0];
          const span = p.group ? m.indices?.[1] : undefined;
          const captured = m[1];
          if (span === undefined || captured === undefined || captured === '')
            return match === '' ? match : this.referenceFor(authority, p.kind, match);
          // The group where it matched, not the first equal text in the match.
          const [from, to] = [span[0] - m.index, span[1] - m.index];
          return `${match.slice(0, from)}${this.referenceFor(authority, p.kind, captured)}${match.slice(to)}`;
        }),
      );
    }
    return out;
  }

  /**
   * The model's arguments with every reference replaced by its value, if each was issued by
   * `authority`; otherwise ReferenceRefused naming where and why (never the value).
   */
  resolve(authority: string, input: unknown): unknown {
    const issues: RefIssue[] = [];
    const walk = (value: unknown, path: (string | number)[]): unknown => {
      if (typeof value === 'string') {
        return value.replace(REF, (ref: string) => {
          const found = this.#byRef.get(ref);
          if (found === undefined) {
            issues.push({ path, message: `${ref} is not a reference this run issued` });
            return ref;
          }
          if (found.authority !== authority) {
            issues.push({
              path,
              message: `${ref} belongs to host tool '${found.authority}', not to '${authority}'`,
            });
            return ref;
          }
          return found.value;
        });
      }
      if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, i]));
      if (typeof value === 'object' && value !== null)
        return Object.fromEntries(
          Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]),
        );
      return value;
    };
    const resolved = walk(input, []);
    if (issues.length > 0) throw new ReferenceRefused(issues);
    return resolved;
  }
}

/** `fn` applied to the text between references, the references kept as they are. */
function outsideReferences(text: string, fn: (segment: string) => string): string {
  const parts = text.split(new RegExp(`(${REF.source})`, 'g'));
  // split with a capturing group: [text, ref, authority, n, text, ref, authority, n, ...].
  let out = '';
  for (let i = 0; i < parts.length; i += 4) {
    out += fn(parts[i] ?? '');
    if (i + 1 < parts.length) out += parts[i + 1] ?? '';
  }
  return out;
}

export interface ConcealPattern {
  readonly kind: string;
  readonly regex: RegExp;
  /** Replace capture group 1 only (the id inside its context), not the whole match. */
  readonly group: boolean;
}

/**
 * A profile pattern as a global regex; `group` when it has a capture group. Throws (a
 * configuration error at planning) for a pattern that does not compile or matches nothing.
 */
/** `text` with each match of a global regex replaced; the match carries its group indices. */
function replaceMatches(
  text: string,
  regex: RegExp,
  replace: (m: RegExpExecArray) => string,
): string {
  let out = '';
  let last = 0;
  for (const m of text.matchAll(regex)) {
    out += text.slice(last, m.index) + replace(m);
    last = m.index + m[0].length;
  }
  return out + text.slice(last);
}

export function concealPattern(kind: string, pattern: string): ConcealPattern {
  // `d`: group indices, so a captured identifier is replaced where it was captured.
  const regex = new RegExp(pattern, 'gud');
  if (regex.test('')) throw new Error(`pattern /${pattern}/ matches the empty string`);
  regex.lastIndex = 0;
  const groups = new RegExp(`${pattern}|`, 'u').exec('')?.length ?? 1;
  return { kind, regex, group: groups > 1 };
}
