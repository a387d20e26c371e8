// The normalised view the scrubber matches in (AH-TOOL-7, AH-TOOL-10): a text (as bytes, one
// latin1 character per byte) with what a program puts between or around the characters of
// a spelling taken out or decoded (scrub-tokens.ts), each character of the view mapped back
// to the bytes it came from, so a match in the view redacts the whole of its original
// spelling. Needles are normalised by the same function, so a spelling is found however it
// is wrapped, escaped or widened, without a list of each combination:
// - blank runs that hold a line break (LF, CR, escaped `\n`/`\r` at any depth of escaping,
//   a quoted-printable soft break `=` before one), with the spaces, tabs and NULs around
//   them (indentation, trailing blanks, UTF-16's zero bytes): removed;
// - a NUL byte, raw or escaped (`\u0000`, `\x00`, `\0`, `%00`, `&#0;`): removed, so UTF-16
//   text (LE or BE, with or without a BOM, JSON-escaped too) reads as the text it encodes;
// - escapes, decoded to the bytes they stand for: `\uXXXX` (surrogate pairs joined) and
//   `\xHH` after any run of backslashes, `%HH`, `=3D`, HTML character references and the
//   five XML entities; a run of backslashes before any other character is dropped (`\"`,
//   `\/`, `\\` at any depth);
// - two quoted strings joined by `,`, `+` or nothing (`"ab", "cd"`, `'ab' + 'cd'`):
//   the quotes and what is between them removed, so a value split across strings is whole.
// Decoding never reads a decoded byte again (single pass, linear): an encoding of an
// encoding is not undone. What a neighbouring escape throws off (a backslash right before
// a spelling that starts with `n`) is still found as it is: the scrubber matches the plain
// text too.
import {
  CANDIDATE,
  KIND,
  NEXT_CANDIDATE,
  RAW_BLANK,
  blankRun,
  isBlank,
  token,
  type BlankRun,
} from './scrub-tokens.js';

/**
 * A normalised text and where each of its characters came from: segments of the view, each
 * either copied (character i of it came from byte o + i) or decoded (each of its characters
 * came from the whole token [o, oEnd)).
 */
export class View {
  readonly text: string;
  /** Per segment: its start in the view, its origin's start and end, 1 when copied. */
  readonly #segments: Int32Array;
  readonly #count: number;

  constructor(text: string, segments: Int32Array, count: number) {
    this.text = text;
    this.#segments = segments;
    this.#count = count;
  }

  /** The segment holding the view's character `at` (binary search on the starts). */
  #segment(at: number): number {
    let lo = 0;
    let hi = this.#count - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.#segments[mid * 4] ?? 0) <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo * 4;
  }

  /** The original offset where the view's character `at` starts. */
  start(at: number): number {
    const k = this.#segment(at);
    const o = this.#segments[k + 1] ?? 0;
    return this.#segments[k + 3] === 1 ? o + at - (this.#segments[k] ?? 0) : o;
  }

  /** The original offset right after the view's character `at`. */
  end(at: number): number {
    const k = this.#segment(at);
    if (this.#segments[k + 3] === 1) return this.start(at) + 1;
    return this.#segments[k + 2] ?? 0;
  }
}

/** The output of `normalised`: its bytes, and their origins as segments. */
class ViewBuilder {
  readonly #src: Buffer;
  readonly #text: Buffer;
  #segments = new Int32Array(64);
  #count = 0;
  length = 0;

  constructor(src: Buffer) {
    this.#src = src;
    // A decoded character never grows: the view is at most as long as the text.
    this.#text = Buffer.allocUnsafe(src.length);
  }

  #segment(o: number, oEnd: number, copied: boolean): void {
    const last = (this.#count - 1) * 4;
    // A copy that goes on where the last one stopped, in the view and the original, is it.
    if (copied && last >= 0 && this.#segments[last + 3] === 1 && this.#segments[last + 2] === o) {
      this.#segments[last + 2] = oEnd;
      return;
    }
    if ((this.#count + 1) * 4 > this.#segments.length) {
      const grown = new Int32Array(this.#segments.length * 2);
      grown.set(this.#segments);
      this.#segments = grown;
    }
    const at = this.#count * 4;
    this.#segments[at] = this.length;
    this.#segments[at + 1] = o;
    this.#segments[at + 2] = oEnd;
    this.#segments[at + 3] = copied ? 1 : 0;
    this.#count += 1;
  }

  copy(from: number, to: number): void {
    if (to <= from) return;
    this.#segment(from, to, true);
    this.#src.copy(this.#text, this.length, from, to);
    this.length += to - from;
  }

  decoded(bytes: readonly number[], from: number, to: number): void {
    let first = true;
    for (const b of bytes) {
      if (b === 0) continue;
      if (first) this.#segment(from, to, false);
      first = false;
      this.#text[this.length] = b;
      this.length += 1;
    }
  }

  /** Takes back the raw spaces and tabs copied last (the blanks before a line break). */
  trimBlanks(): void {
    const last = (this.#count - 1) * 4;
    if (last < 0 || this.#segments[last + 3] !== 1) return;
    const start = this.#segments[last] ?? 0;
    while (this.length > start) {
      const c = this.#text[this.length - 1];
      if (c !== 32 && c !== 9) break;
      this.length -= 1;
      this.#segments[last + 2] = (this.#segments[last + 2] ?? 0) - 1;
    }
    if (this.length === start) this.#count -= 1;
  }

  build(): View {
    return new View(this.#text.toString('latin1', 0, this.length), this.#segments, this.#count);
  }
}

/**
 * `s` (bytes as latin1) normalised (the header says how). `open`: `s` was cut at its end, so
 * an escape begun there and not finished is dropped (it cannot be told yet what it is).
 */
export function normalised(s: string, open = false): View {
  const src = Buffer.from(s, 'latin1');
  const out = new ViewBuilder(src);
  const run: BlankRun = { end: 0, lineBreak: false, bytes: [] };
  const next = new RegExp(NEXT_CANDIDATE.source, 'g');
  let i = 0;
  while (i < src.length) {
    next.lastIndex = i;
    const p = next.exec(s)?.index ?? src.length;
    out.copy(i, p);
    if (p >= src.length) break;
    const kind = KIND[src[p] ?? 0];
    const t = kind === CANDIDATE ? token(s, p, open) : undefined;
    i = p + 1;
    if (kind === RAW_BLANK || (t !== undefined && isBlank(t))) {
      blankRun(s, src, p, open, run);
      // The blanks before and after a line break go with it (trailing ones, indentation).
      if (run.lineBreak) out.trimBlanks();
      else out.decoded(run.bytes, p, run.end);
      i = Math.max(i, run.end);
    } else if (t === undefined) out.copy(p, p + 1);
    else {
      out.decoded(t.bytes, p, t.end);
      i = Math.max(i, t.end);
    }
  }
  return out.build();
}

/** ASCII letters in lower case; every other byte as it is or another (offsets kept). */
export function foldAscii(s: string): string {
  // A latin1 string's lower case keeps its length, and no ASCII byte becomes another: a
  // fold that also maps some bytes >= 0x80 to others, as it does, loses nothing of ASCII.
  return s.toLowerCase();
}

const lowered = new Map<number, number>();

/** The lower case of a code point when it is one code point of the same UTF-8 length. */
function lowerOf(point: number): number {
  const known = lowered.get(point);
  if (known !== undefined) return known;
  const ch = String.fromCodePoint(point);
  const lower = ch.toLowerCase();
  const l = lower.codePointAt(0) ?? point;
  const same =
    String.fromCodePoint(l) === lower &&
    Buffer.byteLength(lower, 'utf8') === Buffer.byteLength(ch, 'utf8');
  const result = same ? l : point;
  lowered.set(point, result);
  return result;
}

/** The code point of the UTF-8 sequence at `i` and its length, if it is one (shortest). */
function codePointAt(bytes: Buffer, i: number): { point: number; size: number } | undefined {
  const b = bytes[i] ?? 0;
  const size = b >= 0xf8 ? 0 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
  if (size === 0 || i + size > bytes.length) return undefined;
  let point = size === 4 ? b & 0x07 : size === 3 ? b & 0x0f : b & 0x1f;
  for (let k = 1; k < size; k += 1) {
    const c = bytes[i + k] ?? 0;
    if ((c & 0xc0) !== 0x80) return undefined;
    point = (point << 6) | (c & 0x3f);
  }
  const floor = size === 4 ? 0x10000 : size === 3 ? 0x800 : 0x80;
  if (point < floor || point > 0x10ffff || (point >= 0xd800 && point < 0xe000)) return undefined;
  return { point, size };
}

/**
 * Lower case where it keeps every byte offset: ASCII letters, and a UTF-8 character whose
 * lower case is one character of the same length (what a non-ASCII credential needs).
 */
export function foldBytes(s: string): string {
  // eslint-disable-next-line no-control-regex
  if (!/[^\x00-\x7f]/.test(s)) return s.toLowerCase();
  const bytes = Buffer.from(s, 'latin1');
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i] ?? 0;
    if (b < 0x80) {
      if (b >= 65 && b <= 90) bytes[i] = b + 32;
      i += 1;
      continue;
    }
    const ch = codePointAt(bytes, i);
    if (ch === undefined) {
      i += 1;
      continue;
    }
    const l = lowerOf(ch.point);
    if (l !== ch.point) bytes.write(String.fromCodePoint(l), i, ch.size, 'utf8');
    i += ch.size;
  }
  return bytes.toString('latin1');
}
