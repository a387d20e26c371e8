// Opaque references of host tools (AH-REF-1..4, AH-TOOL-8, AH-TOOL-10). A reference is minted
// only for a structured referent the operator named (a field of a tool's structured result:
// referents.ts), never for a match in free text: a pattern conceals what it matches as
// `[operator-only:<kind>]`, a marker that resolves to nothing. A reference is
// `cfh-ref:<authority>:<16 base32>`, the characters an HMAC of the authority and the value
// under a salt drawn for this run and never written anywhere: the same value gets the same
// name for the run's lifetime, the names are neither sequential nor guessable, and a name
// from another run (a resumed one included: its salt is another) is unheld here.
//
// The model may hand a reference back: it is resolved before the call is decided, and only
// for the authority (the host tool entry) that minted it; anything spelled like a reference
// that this table does not hold for that authority is an invalid argument, and nothing is
// sent (AH-REF-2). A value a reference stands for never comes back to the model in clear
// (AH-REF-4): every host result the model is shown has each held value replaced by its
// reference, in every spelling the credential scrubber knows, so a tool that echoes what a
// resolved reference gave it launders nothing. The values stay in cfh's memory; the evidence
// records a reference's name, authority and kind only (the raw results in outputs/ keep the
// values: the operator's channel).
import { createHmac, randomBytes } from 'node:crypto';
import { HeldScrubber } from './held-scrubber.js';

/** A reference as minted: its authority (HOST_TOOL_NAME), then 16 base32 characters. */
const REF = /cfh-ref:[A-Za-z0-9_-]{1,32}:[a-z2-7]{16}/g;
/** Anything spelled like a reference, in any case: resolved only when held (AH-REF-2). */
const SPELLED = /cfh-ref:[A-Za-z0-9_-]*(?::[A-Za-z0-9]*)?/gi;
const NAME_CHARS = 16;
/**
 * References one run holds at most. Every held value is looked for in every host result
 * (AH-REF-4), at a cost that grows with each; past the bound a field is concealed by a
 * marker instead: never shown, no longer resolvable.
 */
export const MAX_REFERENCES = 256;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** What a reference stands for: a string or a number, as the structured result held it. */
export type Referent = string | number;

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

/** What a pattern puts where it matched: names the kind, stands for nothing. */
export function concealedMarker(kind: string): string {
  return `[operator-only:${kind}]`;
}

/** Whether `text` is one reference whole (it stands for a value the model was not shown). */
export function isWholeReference(text: string): boolean {
  const whole = text.match(SPELLED);
  return whole?.length === 1 && whole[0] === text;
}

/** Whether `text` holds anything spelled like a reference (a call that may name one). */
export function mentionsReference(text: string): boolean {
  return /cfh-ref:/i.test(text);
}

function base32(bytes: Buffer, chars: number): string {
  let out = '';
  let bits = 0;
  let acc = 0;
  for (const b of bytes) {
    acc = ((acc << 8) | b) & 0xffff;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += BASE32.charAt((acc >>> (bits - 5)) & 31);
      bits -= 5;
    }
  }
  return out;
}

interface Held {
  readonly value: Referent;
  readonly authority: string;
  readonly kind: string;
}

export class OpaqueReferences {
  /** This run's: in memory only, so no evidence and no other run can name a reference. */
  readonly #salt = randomBytes(32);
  readonly #byKey = new Map<string, string>();
  readonly #byRef = new Map<string, Held>();
  /** The held values' spellings, each replaced by its reference. */
  readonly #spellings = new HeldScrubber();
  /** Each checked call's resolved arguments: the model's own strings of it (noteModelForm). */
  readonly #modelStrings = new WeakMap<object, readonly string[]>();
  /** Each new reference, for the evidence (never its value, nor anything computed from it). */
  onIssued: ((issued: IssuedReference) => void) | undefined;

  /**
   * The reference for `value` under `authority`; the same value gets the same reference.
   * Undefined once the run holds MAX_REFERENCES others: the caller conceals the value.
   */
  referenceFor(authority: string, kind: string, value: Referent): string | undefined {
    // The type is part of the referent: 42 and "42" are two values of a structured result.
    const key = JSON.stringify([authority, value]);
    const known = this.#byKey.get(key);
    if (known !== undefined) return known;
    if (this.#byRef.size >= MAX_REFERENCES) return undefined;
    const mac = createHmac('sha256', this.#salt).update(key).digest();
    const ref = `cfh-ref:${authority}:${base32(mac, NAME_CHARS)}`;
    // 80 bits: a collision would make one name stand for two values; refuse rather than mix.
    if (this.#byRef.has(ref)) throw new Error(`reference name collision under ${authority}`);
    this.#byKey.set(key, ref);
    this.#byRef.set(ref, { value, authority, kind });
    this.#spellings.add({ kind, value: String(value), ref });
    this.onIssued?.({ ref, authority, kind });
    return ref;
  }

  /**
   * `text` with every value a held reference stands for replaced by that reference, except
   * where it lies inside one of `echoes` as written: the model's own strings of the call
   * (modelStringsOf), which a tool may echo. A guess the model sent is its words, not a
   * disclosure: replacing it in an echo would mark the guess that is the value. Where a held
   * value in the text straddles such an echo (it is not inside the model's words), the
   * whole text is replaced as if there were no echo.
   */
  handlesFor(text: string, echoes: readonly string[] = []): string {
    if (this.#byRef.size === 0) return text;
    const scrub = (segment: string): string =>
      this.#outsideHeld(segment, (part) => this.#spellings.text(part));
    const full = scrub(text);
    const kept = echoes.filter((e) => scrub(e) !== e);
    if (kept.length === 0) return full;
    const stretches = splitAt(text, kept);
    if (!stretches.some((st) => st.echo)) return full;
    const apart = stretches.map((st) => scrub(st.text)).join('');
    if (apart !== full) return full;
    return stretches.map((st) => (st.echo ? st.text : scrub(st.text))).join('');
  }

  /**
   * Notes the model's form of a call whose arguments resolved to `args` (an object): its
   * strings that name no reference, which the call's result may echo as written.
   */
  noteModelForm(args: unknown, modelForm: unknown): void {
    if (typeof args !== 'object' || args === null) return;
    const strings = new Set<string>();
    const walk = (v: unknown): void => {
      if (typeof v === 'string') {
        if (v === '' || mentionsReference(v)) return;
        strings.add(v);
        // As a JSON result holds it, too (a structured result is shown as JSON text).
        strings.add(JSON.stringify(v).slice(1, -1));
      } else if (Array.isArray(v)) v.forEach(walk);
      else if (typeof v === 'object' && v !== null)
        for (const [k, x] of Object.entries(v)) {
          walk(k);
          walk(x);
        }
    };
    walk(modelForm);
    this.#modelStrings.set(args, [...strings]);
  }

  /** The model's own strings of the call that resolved to `args` (none if not noted). */
  modelStringsOf(args: unknown): readonly string[] {
    if (typeof args !== 'object' || args === null) return [];
    return this.#modelStrings.get(args) ?? [];
  }

  /** `text` with every match of `patterns` replaced by its kind's marker (no reference). */
  conceal(patterns: readonly ConcealPattern[], text: string): string {
    let out = text;
    for (const p of patterns) {
      // Never inside a reference this table holds: a pattern for letters must not break one.
      out = this.#outsideHeld(out, (segment) =>
        replaceMatches(segment, p.regex, (m) => {
          const match = m[0];
          const span = p.group ? m.indices?.[1] : undefined;
          const captured = m[1];
          if (span === undefined || captured === undefined || captured === '')
            return match === '' ? match : concealedMarker(p.kind);
          // The group where it matched, not the first equal text in the match.
          const [from, to] = [span[0] - m.index, span[1] - m.index];
          return `${match.slice(0, from)}${concealedMarker(p.kind)}${match.slice(to)}`;
        }),
      );
    }
    return out;
  }

  /**
   * The model's arguments with every reference replaced by its value, if each is held for
   * `authority`; otherwise ReferenceRefused naming where and why (never a value). A string
   * that is one reference whole becomes the referent as it was (a number stays a number).
   */
  resolve(authority: string, input: unknown): unknown {
    const issues: RefIssue[] = [];
    const one = (token: string, path: (string | number)[]): Referent | undefined => {
      const found = this.#byRef.get(token);
      if (found === undefined) {
        issues.push({ path, message: `${token} is not a reference this run holds` });
        return undefined;
      }
      if (found.authority !== authority) {
        issues.push({
          path,
          message: `${token} belongs to host tool '${found.authority}', not to '${authority}'`,
        });
        return undefined;
      }
      return found.value;
    };
    const text = (value: string, path: (string | number)[]): Referent => {
      if (!mentionsReference(value)) return value;
      if (isWholeReference(value)) return one(value, path) ?? value;
      return value.replace(SPELLED, (token) => String(one(token, path) ?? token));
    };
    const walk = (value: unknown, path: (string | number)[]): unknown => {
      if (typeof value === 'string') return text(value, path);
      if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, i]));
      if (typeof value === 'object' && value !== null) {
        // A key is the model's too: resolved like a value; two keys alike would drop one.
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(value)) {
          const key = String(text(k, [...path, k]));
          if (Object.hasOwn(out, key))
            issues.push({ path: [...path, k], message: 'resolves to a key given twice' });
          out[key] = walk(v, [...path, k]);
        }
        return out;
      }
      return value;
    };
    const resolved = walk(input, []);
    if (issues.length > 0) throw new ReferenceRefused(issues);
    return resolved;
  }

  /** `fn` applied to the text between held references, the references kept as they are. */
  #outsideHeld(text: string, fn: (segment: string) => string): string {
    let out = '';
    let last = 0;
    for (const m of text.matchAll(REF)) {
      if (!this.#byRef.has(m[0])) continue;
      out += fn(text.slice(last, m.index)) + m[0];
      last = m.index + m[0].length;
    }
    return out + fn(text.slice(last));
  }
}

export interface ConcealPattern {
  readonly kind: string;
  readonly regex: RegExp;
  /** Replace capture group 1 only (the id inside its context), not the whole match. */
  readonly group: boolean;
}

/** `text` cut into stretches, each occurrence of one of `echoes` (the longest first) apart. */
export function splitAt(
  text: string,
  echoes: readonly string[],
): { readonly text: string; readonly echo: boolean }[] {
  const byLength = [...echoes].filter((e) => e !== '').sort((a, b) => b.length - a.length);
  const out: { text: string; echo: boolean }[] = [];
  let last = 0;
  let at = 0;
  while (at < text.length) {
    const found = byLength.find((e) => text.startsWith(e, at));
    if (found === undefined) {
      at += 1;
      continue;
    }
    if (at > last) out.push({ text: text.slice(last, at), echo: false });
    out.push({ text: found, echo: true });
    at += found.length;
    last = at;
  }
  if (last < text.length) out.push({ text: text.slice(last), echo: false });
  return out;
}

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

/**
 * A profile pattern as a global regex; `group` when it has a capture group. Throws (a
 * configuration error at planning) for a pattern that does not compile or matches nothing.
 */
export function concealPattern(kind: string, pattern: string): ConcealPattern {
  // `d`: group indices, so a captured identifier is replaced where it was captured.
  const regex = new RegExp(pattern, 'gud');
  if (regex.test('')) throw new Error(`pattern /${pattern}/ matches the empty string`);
  regex.lastIndex = 0;
  const groups = new RegExp(`${pattern}|`, 'u').exec('')?.length ?? 1;
  return { kind, regex, group: groups > 1 };
}
