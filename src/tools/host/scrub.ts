// Credential scrubbing (AH-TOOL-7, AH-TOOL-10): every credential value cfh holds for a run is
// removed from whatever a host tool gives back before it reaches the model or the evidence,
// in the spellings a program commonly prints it in: as is, JSON-escaped (JavaScript's, Go's
// and PHP's `\/` and `\u0026`, every character as `\uXXXX`), percent-encoded (any case, `+`
// for space, `/` kept as Python's quote does), hex (any case), and base64 (standard and
// URL-safe, at each of the three alignments it can take inside a longer base64 text, so a
// credential embedded in an encoded blob is caught too), each also wrapped over lines; the
// plain and JSON spellings in any case. A fragment of a credential (at least half of it, and
// at least MIN_CREDENTIAL_CHARS) is redacted too, so a credential split in two (two fields of
// a schema, two enum values a validation message lists) leaves neither half. What it cannot
// catch is published: a trusted tool that encrypts, reverses or splits its credential finer
// is not bounded by this.

export interface HeldCredential {
  /** The environment name it is given as (never secret); names the redaction. */
  readonly name: string;
  readonly value: string;
  /** What replaces it; `[redacted:<name>]` unless given (an opaque reference's handle). */
  readonly replacement?: string;
  /** Fragments of it redacted too (credentials: yes; a resolved reference's value: no). */
  readonly fragments?: boolean;
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
  // Base64 is the one spelling whose case carries information.
  const exact = base64Cores(bytes);
  const component = encodeURIComponent(value);
  const anyCase = [
    // Case-folded (a tool that upper- or lower-cases what it prints) is still the value.
    value,
    json,
    goJson,
    json.replace(/\//g, '\\/'),
    goJson.replace(/\//g, '\\/'),
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
      return this.#names.get(this.#anyCase ? key.toLowerCase() : key) ?? '[redacted:credential]';
    });
  }
}

export class Scrubber {
  readonly #text: SpellingMatcher[];
  readonly #bytes: SpellingMatcher[];
  readonly #fragments: FragmentMatcher;
  /** Every spelling, case-folded (text, and as bytes): what a cut may not leave a start of. */
  readonly #starts: { readonly text: readonly string[]; readonly bytes: readonly string[] };

  constructor(credentials: readonly HeldCredential[]) {
    const text = [new Map<string, string>(), new Map<string, string>()] as const;
    const bytes = [new Map<string, string>(), new Map<string, string>()] as const;
    for (const c of credentials) {
      const sets = spellingSets(c.value);
      const replacement = c.replacement ?? `[redacted:${c.name}]`;
      for (const [i, list] of [sets.exact, sets.anyCase].entries()) {
        for (const x of list) {
          if (!text[i as 0 | 1].has(x)) text[i as 0 | 1].set(x, replacement);
          // The same spelling as the bytes a program writes (latin1: one char per byte).
          const asBytes = Buffer.from(x, 'utf8').toString('latin1');
          if (!bytes[i as 0 | 1].has(asBytes)) bytes[i as 0 | 1].set(asBytes, replacement);
        }
      }
    }
    this.#text = [new SpellingMatcher(text[0], false), new SpellingMatcher(text[1], true)];
    this.#bytes = [new SpellingMatcher(bytes[0], false), new SpellingMatcher(bytes[1], true)];
    this.#starts = {
      text: [...text[0].keys(), ...text[1].keys()].map(foldCase),
      bytes: [...bytes[0].keys(), ...bytes[1].keys()].map(foldCase),
    };
    this.#fragments = new FragmentMatcher(
      credentials
        .filter((c) => c.fragments !== false)
        .map((c) => ({ value: c.value, replacement: c.replacement ?? `[redacted:${c.name}]` })),
    );
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
    return this.#fragments.replace(
      this.#text.reduce((out, m) => m.replace(out), input),
      false,
    );
  }

  bytes(input: Buffer): Buffer {
    if (this.empty || input.length === 0) return input;
    const scrubbed = this.#bytes.reduce((out, m) => m.replace(out), input.toString('latin1'));
    return Buffer.from(this.#fragments.replace(scrubbed, true), 'latin1');
  }

  /**
   * Scrubbed, THEN cut to `max` bytes, and no cut inside a credential: what a cut leaves of
   * the start of any spelling at the very end is removed too (a prefix of a credential is a
   * leak). `readCut`: `input` itself stops where reading stopped (a read limit), so its end
   * is a cut as well. Read `3 * longest` bytes past the cap, so a credential across the cap
   * is whole when it is scrubbed and becomes a redaction rather than a removal.
   */
  cutBytes(input: Buffer, max: number, readCut: boolean): Buffer {
    let text = this.bytes(input).toString('latin1');
    if (readCut) text = text.slice(0, text.length - partialEnd(text, this.#starts.bytes));
    if (text.length > max) {
      text = text.slice(0, max);
      text = text.slice(0, text.length - partialEnd(text, this.#starts.bytes));
    }
    return Buffer.from(text, 'latin1');
  }

  /** `cutBytes` for a whole text: scrubbed, then cut to `max` characters, never inside one. */
  cutText(input: string, max: number): string {
    const scrubbed = this.text(input);
    if (scrubbed.length <= max) return scrubbed;
    const head = scrubbed.slice(0, max);
    return head.slice(0, head.length - partialEnd(head, this.#starts.text));
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

/**
 * Fragments of credentials: every run of at least `min` characters of the text that is a
 * substring of a credential (case-folded), extended as far as it stays one, is replaced.
 * `min` is half the credential (and at least MIN_CREDENTIAL_CHARS): of a credential split in
 * two, each half is caught. A scan, not a regular expression: the alternatives would be
 * quadratic in the credential's length.
 */
class FragmentMatcher {
  readonly #list: readonly {
    readonly text: string;
    readonly bytes: string;
    readonly min: number;
    readonly replacement: string;
  }[];

  constructor(credentials: readonly { value: string; replacement: string }[]) {
    this.#list = credentials.map((c) => ({
      text: foldCase(c.value),
      bytes: foldCase(Buffer.from(c.value, 'utf8').toString('latin1')),
      min: Math.max(MIN_CREDENTIAL_CHARS, Math.floor(c.value.length / 2)),
      replacement: c.replacement,
    }));
  }

  replace(input: string, asBytes: boolean): string {
    let out = input;
    for (const c of this.#list)
      out = replaceFragments(out, asBytes ? c.bytes : c.text, c.min, c.replacement);
    return out;
  }
}

function replaceFragments(input: string, secret: string, min: number, replacement: string): string {
  if (secret.length < min || input.length < min) return input;
  const windows = new Set<string>();
  for (let i = 0; i + min <= secret.length; i += 1) windows.add(secret.slice(i, i + min));
  const lower = foldCase(input);
  let out = '';
  let last = 0;
  let i = 0;
  while (i + min <= lower.length) {
    if (!windows.has(lower.slice(i, i + min))) {
      i += 1;
      continue;
    }
    let end = i + min;
    while (end < lower.length && secret.includes(lower.slice(i, end + 1))) end += 1;
    out += input.slice(last, i) + replacement;
    last = end;
    i = end;
  }
  return last === 0 ? input : out + input.slice(last);
}

/** Lower case, code point by code point, keeping every index (no letter changes length). */
function foldCase(text: string): string {
  return Array.from(text, (ch) => {
    const l = ch.toLowerCase();
    return l.length === ch.length ? l : ch;
  }).join('');
}

/** How many characters at the end of `text` are the start of one of `spellings` (folded). */
function partialEnd(text: string, spellings: readonly string[]): number {
  if (spellings.length === 0) return 0;
  const tail = foldCase(text.slice(-Math.max(0, ...spellings.map((x) => x.length))));
  let longest = 0;
  for (const x of spellings)
    for (let k = Math.min(x.length - 1, tail.length); k > longest; k -= 1)
      if (tail.endsWith(x.slice(0, k))) {
        longest = k;
        break;
      }
  return longest;
}
