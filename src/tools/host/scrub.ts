// Credential scrubbing (AH-TOOL-7, AH-TOOL-10): every credential value cfh holds for a run is
// removed from whatever a host tool gives back before it reaches the model or the evidence,
// in the spellings a program commonly prints it in: as is, JSON-escaped (JavaScript's, Go's
// and PHP's `\/` and `\u0026`, every character as `\uXXXX`), percent-encoded (any case, `+`
// for space, `/` kept as Python's quote does), hex (any case), and base64 (standard and
// URL-safe, at each of the three alignments it can take inside a longer base64 text, so a
// credential embedded in an encoded blob is caught too), each also wrapped over lines. What
// it cannot catch is published: a trusted tool that encrypts, reverses or splits its
// credential is not bounded by this.

export interface HeldCredential {
  /** The environment name it is given as (never secret); names the redaction. */
  readonly name: string;
  readonly value: string;
}

/** Shorter values would match ordinary text: such a credential is refused at planning. */
export const MIN_CREDENTIAL_CHARS = 8;

function hexOf(bytes: Buffer): string[] {
  const lower = bytes.toString('hex');
  return [lower, lower.toUpperCase()];
}

function percentOf(value: string, bytes: Buffer): string[] {
  const component = encodeURIComponent(value);
  const lowered = component.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
  const every = [...bytes].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
  return [
    component,
    lowered,
    component.replace(/%20/g, '+'),
    every,
    every.toLowerCase(),
    encodeURI(value),
  ];
}

/**
 * The base64 characters that depend only on `bytes`, when they start `k` bytes into a 3-byte
 * group: character i covers bits [6i, 6i+6), the credential bits [8k, 8(k+n)).
 */
function base64Cores(bytes: Buffer): string[] {
  const out: string[] = [];
  for (const k of [0, 1, 2]) {
    const text = Buffer.concat([Buffer.alloc(k), bytes])
      .toString('base64')
      .replace(/=+$/, '');
    const from = Math.ceil((8 * k) / 6);
    const to = Math.floor((8 * (k + bytes.length)) / 6);
    const core = text.slice(from, to);
    out.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  // The complete, padded encodings too, so nothing of a whole encoded value is left.
  const whole = bytes.toString('base64');
  out.push(whole, bytes.toString('base64url'));
  return out;
}

/**
 * Every spelling of `value` the scrubber removes, longest first: case-sensitive ones, and
 * those whose letters are hex digits (hex, percent-encoding), matched in any case.
 */
export function spellingsOf(value: string): string[] {
  const { exact, anyCase } = spellingSets(value);
  return [...new Set([...exact, ...anyCase])].sort((a, b) => b.length - a.length);
}

function spellingSets(value: string): { exact: string[]; anyCase: string[] } {
  const bytes = Buffer.from(value, 'utf8');
  const json = JSON.stringify(value).slice(1, -1);
  // What JSON encoders other than JavaScript's escape too: Go and PHP's `\/`, `\u0026`,
  // `\u003c`, `\u003e`; and an encoder that escapes every character as `\uXXXX`.
  const goJson = json.replace(/&/g, '\\u0026').replace(/</g, '\\u003c').replace(/>/g, '\\u003e');
  let everyUnit = '';
  for (let i = 0; i < value.length; i += 1)
    everyUnit += `\\u${value.charCodeAt(i).toString(16).padStart(4, '0')}`;
  const exact = [
    value,
    json,
    goJson,
    json.replace(/\//g, '\\/'),
    goJson.replace(/\//g, '\\/'),
    ...base64Cores(bytes),
  ];
  const component = encodeURIComponent(value);
  const anyCase = [
    ...percentOf(value, bytes),
    // Python's urllib.parse.quote leaves `/` as it is.
    component.replace(/%2F/g, '/'),
    ...hexOf(bytes),
    everyUnit,
  ];
  // A spelling much shorter than the value (a base64 core of a short one) stays long
  // enough to be specific: the value's own minimum length.
  const long = (list: string[]): string[] =>
    [...new Set(list)].filter((x) => x.length >= Math.min(MIN_CREDENTIAL_CHARS, value.length));
  return { exact: long(exact), anyCase: long(anyCase.map((x) => x.toLowerCase())) };
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Line breaks a program may wrap an encoding with (base64 at 64 or 76 columns, PEM, MIME). */
const WRAP = /\r?\n/g;

/**
 * One set of spellings as one regular expression: longest first, a line break allowed
 * between any two characters (wrapped encodings), in any case when `anyCase`.
 */
class SpellingMatcher {
  readonly #regex: RegExp | undefined;
  readonly #names: ReadonlyMap<string, string>;
  readonly #anyCase: boolean;
  readonly longest: number;

  constructor(names: ReadonlyMap<string, string>, anyCase: boolean) {
    this.#names = names;
    this.#anyCase = anyCase;
    const sorted = [...names.keys()].sort((a, b) => b.length - a.length);
    this.longest = sorted[0]?.length ?? 0;
    this.#regex =
      sorted.length === 0
        ? undefined
        : new RegExp(
            sorted.map((x) => Array.from(x, escapeRegex).join('(?:\\r?\\n)?')).join('|'),
            anyCase ? 'gi' : 'g',
          );
  }

  replace(input: string): string {
    if (this.#regex === undefined) return input;
    return input.replace(this.#regex, (m) => {
      const key = m.replace(WRAP, '');
      const name = this.#names.get(this.#anyCase ? key.toLowerCase() : key) ?? 'credential';
      return `[redacted:${name}]`;
    });
  }
}

export class Scrubber {
  readonly #text: SpellingMatcher[];
  readonly #bytes: SpellingMatcher[];

  constructor(credentials: readonly HeldCredential[]) {
    const text = [new Map<string, string>(), new Map<string, string>()] as const;
    const bytes = [new Map<string, string>(), new Map<string, string>()] as const;
    for (const c of credentials) {
      const sets = spellingSets(c.value);
      for (const [i, list] of [sets.exact, sets.anyCase].entries()) {
        for (const x of list) {
          if (!text[i as 0 | 1].has(x)) text[i as 0 | 1].set(x, c.name);
          // The same spelling as the bytes a program writes (latin1: one char per byte).
          const asBytes = Buffer.from(x, 'utf8').toString('latin1');
          if (!bytes[i as 0 | 1].has(asBytes)) bytes[i as 0 | 1].set(asBytes, c.name);
        }
      }
    }
    this.#text = [new SpellingMatcher(text[0], false), new SpellingMatcher(text[1], true)];
    this.#bytes = [new SpellingMatcher(bytes[0], false), new SpellingMatcher(bytes[1], true)];
  }

  /** The longest spelling, in bytes (line breaks aside): how far past a cut one can reach. */
  get longest(): number {
    return Math.max(...this.#bytes.map((m) => m.longest));
  }

  /** Whether there is anything to scrub at all. */
  get empty(): boolean {
    return this.longest === 0;
  }

  text(input: string): string {
    return this.#text.reduce((out, m) => m.replace(out), input);
  }

  bytes(input: Buffer): Buffer {
    if (this.empty || input.length === 0) return input;
    const scrubbed = this.#bytes.reduce((out, m) => m.replace(out), input.toString('latin1'));
    return Buffer.from(scrubbed, 'latin1');
  }

  /** Every string inside a JSON-like value, scrubbed (keys too). */
  value(input: unknown): unknown {
    if (typeof input === 'string') return this.text(input);
    if (Array.isArray(input)) return input.map((v) => this.value(v));
    if (typeof input === 'object' && input !== null) {
      return Object.fromEntries(
        Object.entries(input).map(([k, v]) => [this.text(k), this.value(v)]),
      );
    }
    return input;
  }
}
