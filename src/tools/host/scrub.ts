// Credential scrubbing (AH-TOOL-7, AH-TOOL-10): every credential value cfh holds for a run is
// removed from whatever a host tool gives back before it reaches the model or the evidence,
// in the spellings a program commonly prints it in: as is, JSON-escaped, percent-encoded
// (either case, `+` for space), hex (either case), and base64 (standard and URL-safe, at
// each of the three alignments it can take inside a longer base64 text, so a credential
// embedded in an encoded blob is caught too). What it cannot catch is published: a trusted
// tool that encrypts, reverses or splits its credential is not bounded by this.

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

/** Every spelling of `value` the scrubber removes, longest first. */
export function spellingsOf(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const json = JSON.stringify(value).slice(1, -1);
  const escapedTags = json.replace(/</g, '\\u003c').replace(/>/g, '\\u003e');
  const all = [
    value,
    json,
    escapedTags,
    ...percentOf(value, bytes),
    ...hexOf(bytes),
    ...base64Cores(bytes),
  ];
  // A spelling much shorter than the value (a base64 core of a short one) stays long
  // enough to be specific: the value's own minimum length.
  return [...new Set(all)]
    .filter((s) => s.length >= Math.min(MIN_CREDENTIAL_CHARS, value.length))
    .sort((a, b) => b.length - a.length);
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export class Scrubber {
  readonly #text: RegExp | undefined;
  readonly #bytes: RegExp | undefined;
  readonly #names: ReadonlyMap<string, string>;
  readonly #byteNames: ReadonlyMap<string, string>;

  constructor(credentials: readonly HeldCredential[]) {
    const names = new Map<string, string>();
    const byteNames = new Map<string, string>();
    for (const c of credentials) {
      for (const s of spellingsOf(c.value)) {
        if (!names.has(s)) names.set(s, c.name);
        // The same spelling as the bytes a program writes (latin1: one char per byte).
        const asBytes = Buffer.from(s, 'utf8').toString('latin1');
        if (!byteNames.has(asBytes)) byteNames.set(asBytes, c.name);
      }
    }
    this.#names = names;
    this.#byteNames = byteNames;
    this.#text = alternation([...names.keys()]);
    this.#bytes = alternation([...byteNames.keys()]);
  }

  /** Whether there is anything to scrub at all. */
  get empty(): boolean {
    return this.#text === undefined;
  }

  text(input: string): string {
    if (this.#text === undefined) return input;
    return input.replace(this.#text, (m) => `[redacted:${this.#names.get(m) ?? 'credential'}]`);
  }

  bytes(input: Buffer): Buffer {
    if (this.#bytes === undefined || input.length === 0) return input;
    const scrubbed = input
      .toString('latin1')
      .replace(this.#bytes, (m) => `[redacted:${this.#byteNames.get(m) ?? 'credential'}]`);
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

function alternation(spellings: readonly string[]): RegExp | undefined {
  if (spellings.length === 0) return undefined;
  const sorted = [...spellings].sort((a, b) => b.length - a.length);
  return new RegExp(sorted.map(escapeRegex).join('|'), 'g');
}
