// Credential scrubbing (AH-TOOL-7, AH-TOOL-10): every credential value cfh holds for a run is
// removed from whatever a host tool gives back before it reaches the model or the evidence.
// Matched twice, in bytes (a text is matched as its UTF-8), in any case:
// - in the text as it is, each spelling a program commonly encodes a value in (as is,
//   JSON-escaped as JavaScript, Go and PHP escape it or every character as `\uXXXX`,
//   percent-encoded, hex, base64 and base64url at each alignment: scrub-spellings.ts);
// - in the text's normalised view (scrub-view.ts), where what a program puts between or
//   around a spelling's characters is gone: line breaks (raw or escaped at any depth) with
//   their indentation, UTF-16's zero bytes, escapes (`\u`, `\x`, `%`, `=3D`, HTML
//   references), quotes joining two strings. Every match there is mapped back to the whole
//   of its original bytes, so a wrapped, indented or widened spelling is redacted whole.
// A fragment of a credential (at least half of it, and at least MIN_CREDENTIAL_CHARS) is a
// match too (scrub-fragments.ts). Structured values are matched as the JSON they are written
// as, numbers included (scrub-json.ts). The cost is linear in the text. What it cannot catch
// is published (docs/conformance.md): a trusted tool that encrypts, compresses, reverses or
// splits its credential finer is not bounded by this.
import { FragmentMatcher, type Match } from './scrub-fragments.js';
import { scrubbedValue } from './scrub-json.js';
import { asBytes, needlesOf, viewed } from './scrub-spellings.js';
import { foldAscii, foldBytes, normalised, type View } from './scrub-view.js';

export { MIN_CREDENTIAL_CHARS, spellingsOf } from './scrub-spellings.js';

export interface HeldCredential {
  /** The environment name it is given as (never secret); names the redaction. */
  readonly name: string;
  readonly value: string;
  /** What replaces it; `[redacted:<name>]` unless given (an opaque reference's handle). */
  readonly replacement?: string;
  /** Fragments of it redacted too (credentials: yes; a resolved reference's value: no). */
  readonly fragments?: boolean;
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

type Span = (from: number, to: number) => [number, number];

const same: Span = (from, to) => [from, to];

function through(view: View): Span {
  return (from, to) => [view.start(from), view.end(to - 1)];
}

/** Needles longer than this get a regular expression each (see NeedleSet). */
const SHORT_NEEDLE = 64;

/**
 * Needles (folded bytes) as regular expressions: the short ones as one alternation, longest
 * first; each long one (a long credential's spellings) alone, as a literal is searched by
 * skipping ahead, which an alternation of long literals is not (it cost ~100 ns a byte for
 * a 4 KiB credential's; measured with bench/scrub.ts).
 */
class NeedleSet {
  readonly #regexes: readonly RegExp[];
  readonly #names: ReadonlyMap<string, string>;
  readonly needles: readonly string[];

  constructor(names: ReadonlyMap<string, string>) {
    this.#names = names;
    this.needles = [...names.keys()].sort((a, b) => b.length - a.length);
    const short = this.needles.filter((x) => x.length <= SHORT_NEEDLE);
    this.#regexes = [
      ...this.needles.filter((x) => x.length > SHORT_NEEDLE).map((x) => [x]),
      ...(short.length === 0 ? [] : [short]),
    ].map((list) => new RegExp(list.map(escapeRegex).join('|'), 'g'));
  }

  get longest(): number {
    return this.needles[0]?.length ?? 0;
  }

  find(folded: string, span: Span, out: Match[]): void {
    for (const regex of this.#regexes) {
      regex.lastIndex = 0;
      for (let m = regex.exec(folded); m !== null; m = regex.exec(folded)) {
        const [from, to] = span(m.index, m.index + m[0].length);
        out.push({ from, to, replacement: this.#names.get(m[0]) ?? '[redacted:credential]' });
      }
    }
  }

  /** How many bytes at the end of `folded` are the start of a needle (a cut through one). */
  partialEnd(folded: string): number {
    const tail = folded.slice(-this.longest);
    let longest = 0;
    for (const x of this.needles)
      longest = Math.max(longest, startAtEnd(x, this.#prefixes(x), tail));
    return longest;
  }

  /** Per needle, its prefix function (Knuth-Morris-Pratt), made when a cut first needs it. */
  readonly #prefixFunctions = new Map<string, Int32Array>();

  #prefixes(x: string): Int32Array {
    let known = this.#prefixFunctions.get(x);
    if (known === undefined) {
      known = prefixFunction(x);
      this.#prefixFunctions.set(x, known);
    }
    return known;
  }
}

/** For each i, the length of the longest proper prefix of `x` that ends at i. */
function prefixFunction(x: string): Int32Array {
  const pi = new Int32Array(x.length);
  for (let i = 1, k = 0; i < x.length; i += 1) {
    while (k > 0 && x[i] !== x[k]) k = pi[k - 1] ?? 0;
    if (x[i] === x[k]) k += 1;
    pi[i] = k;
  }
  return pi;
}

/** The longest proper prefix of `x` that `tail` ends with: its length (linear, KMP). */
function startAtEnd(x: string, pi: Int32Array, tail: string): number {
  let k = 0;
  for (let i = 0; i < tail.length; i += 1) {
    while (k > 0 && (k === x.length || tail[i] !== x[k])) k = pi[k - 1] ?? 0;
    if (tail[i] === x[k]) k += 1;
  }
  return k === x.length ? (pi[k - 1] ?? 0) : k;
}

/** Overlapping matches as one (the earliest's replacement), in order. */
function merged(matches: Match[]): Match[] {
  matches.sort((a, b) => a.from - b.from || b.to - a.to);
  const out: Match[] = [];
  for (const m of matches) {
    const last = out[out.length - 1];
    if (last !== undefined && m.from < last.to) {
      if (m.to > last.to) out[out.length - 1] = { ...last, to: m.to };
    } else out.push(m);
  }
  return out;
}

function replaced(
  text: string,
  matches: readonly Match[],
  replacement: (m: Match) => string,
): string {
  let out = '';
  let at = 0;
  for (const m of matches) {
    out += text.slice(at, m.from) + replacement(m);
    at = m.to;
  }
  return out + text.slice(at);
}

/** Byte offsets of a text's UTF-8 as offsets into the text, rounded out to whole characters. */
function inCharacters(text: string, matches: readonly Match[]): Match[] {
  // eslint-disable-next-line no-control-regex
  if (matches.length === 0 || !/[^\x00-\x7f]/.test(text)) return [...matches];
  const startOf: number[] = [];
  const endOf: number[] = [];
  for (let i = 0; i < text.length;) {
    const point = text.codePointAt(i) ?? 0;
    const units = point > 0xffff ? 2 : 1;
    const bytes = point < 0x80 ? 1 : point < 0x800 ? 2 : point < 0x10000 ? 3 : 4;
    for (let b = 0; b < bytes; b += 1) {
      startOf.push(i);
      endOf.push(i + units);
    }
    i += units;
  }
  return matches.map((m) => ({
    ...m,
    from: startOf[m.from] ?? text.length,
    to: endOf[m.to - 1] ?? text.length,
  }));
}

export class Scrubber {
  readonly #plain: NeedleSet;
  readonly #viewed: NeedleSet;
  readonly #fragments: FragmentMatcher;
  /** How a text is case-folded: UTF-8 aware only when a held value needs it (it is slower). */
  readonly #fold: (bytes: string) => string;

  constructor(credentials: readonly HeldCredential[]) {
    // eslint-disable-next-line no-control-regex
    this.#fold = credentials.every((c) => !/[^\x00-\x7f]/.test(c.value)) ? foldAscii : foldBytes;
    const plain = new Map<string, string>();
    const view = new Map<string, string>();
    for (const c of credentials) {
      const needles = needlesOf(c.value);
      const replacement = c.replacement ?? `[redacted:${c.name}]`;
      for (const x of needles.plain) if (!plain.has(x)) plain.set(x, replacement);
      for (const x of needles.viewed) if (!view.has(x)) view.set(x, replacement);
    }
    this.#plain = new NeedleSet(plain);
    this.#viewed = new NeedleSet(view);
    this.#fragments = new FragmentMatcher(
      credentials
        .filter((c) => c.fragments !== false)
        .map((c) => ({
          text: viewed(asBytes(c.value)),
          replacement: c.replacement ?? `[redacted:${c.name}]`,
        })),
    );
  }

  /** The longest plain spelling, in bytes: what a read past a cap must at least allow for. */
  get longest(): number {
    return this.#plain.longest;
  }

  /** Whether there is anything to scrub at all. */
  get empty(): boolean {
    return this.longest === 0;
  }

  /** Every match in `bytes` (latin1), in byte offsets, merged and in order. */
  #matches(bytes: string): Match[] {
    if (this.empty || bytes === '') return [];
    const out: Match[] = [];
    this.#plain.find(this.#fold(bytes), same, out);
    const view = normalised(bytes);
    const folded = this.#fold(view.text);
    this.#viewed.find(folded, through(view), out);
    this.#fragments.find(folded, through(view), out);
    return merged(out);
  }

  /** Every match in `text`, in its own (UTF-16) offsets. */
  #textMatches(text: string): Match[] {
    return inCharacters(text, this.#matches(asBytes(text)));
  }

  text(input: string): string {
    const matches = this.#textMatches(input);
    return matches.length === 0 ? input : replaced(input, matches, (m) => m.replacement);
  }

  bytes(input: Buffer): Buffer {
    const text = input.toString('latin1');
    const matches = this.#matches(text);
    if (matches.length === 0) return input;
    return Buffer.from(
      replaced(text, matches, (m) => asBytes(m.replacement)),
      'latin1',
    );
  }

  /**
   * Scrubbed, THEN cut to `max` bytes, and no cut inside a credential: what a cut leaves of
   * the start of any spelling at the very end, as it is or in the view, is removed too (a
   * prefix of a credential is a leak). `readCut`: `input` itself stops where reading
   * stopped (a read limit), so its end is a cut as well. Read `3 * longest` bytes past the
   * cap, so a credential across the cap is whole when it is scrubbed and becomes a
   * redaction rather than a removal (one spread wider than that is removed, not redacted).
   */
  cutBytes(input: Buffer, max: number, readCut: boolean): Buffer {
    let text = this.bytes(input).toString('latin1');
    if (readCut) text = text.slice(0, text.length - this.#partialEnd(text));
    if (text.length > max) {
      text = text.slice(0, max);
      text = text.slice(0, text.length - this.#partialEnd(text));
    }
    return Buffer.from(text, 'latin1');
  }

  /** `cutBytes` for a whole text: scrubbed, then cut to `max` characters, never inside one. */
  cutText(input: string, max: number): string {
    const scrubbed = this.text(input);
    if (scrubbed.length <= max) return scrubbed;
    const head = scrubbed.slice(0, max);
    const bytes = asBytes(head);
    const cut = this.#partialEnd(bytes);
    if (cut === 0) return head;
    const [kept] = inCharacters(head, [
      { from: bytes.length - cut, to: bytes.length, replacement: '' },
    ]);
    return head.slice(0, kept?.from ?? 0);
  }

  /**
   * How many bytes at the end of `bytes` are the start of a spelling: as they are, or in
   * the view of the text (an escape the cut went through is not yet anything).
   */
  #partialEnd(bytes: string): number {
    if (this.empty) return 0;
    const plain = this.#plain.partialEnd(this.#fold(bytes));
    const view = normalised(bytes, true);
    const k = this.#viewed.partialEnd(this.#fold(view.text));
    const viewCut = k === 0 ? 0 : bytes.length - view.start(view.text.length - k);
    return Math.max(plain, viewCut);
  }

  /**
   * A JSON-like value scrubbed as the JSON it is written as: each string (keys too) and
   * number a match touches is redacted in place (a number becomes a string).
   */
  value(input: unknown): unknown {
    if (typeof input === 'string') return this.text(input);
    if (this.empty) return input;
    return scrubbedValue(input, (text) => this.#textMatches(text));
  }
}
