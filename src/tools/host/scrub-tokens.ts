// The tokens of the scrubber's normalised view (scrub-view.ts): what a program puts between
// or around the characters of a spelling, read at one position of a text (bytes as latin1)
// and decoded to the bytes it stands for. Every token reads a bounded look-ahead (a run of
// backslashes aside, which a token consumes whole), so reading a text is linear.

/** One token: where it ends and the bytes it decodes to (0 for a NUL; none: nothing). */
export interface Token {
  readonly end: number;
  readonly bytes: readonly number[];
}

/** A byte that may start a token (`\ % = & " '`); anything else is an ordinary byte. */
export const CANDIDATE = 1;
/** A raw byte that starts a blank run itself: NUL, LF, CR. */
export const RAW_BLANK = 2;
export const KIND = (() => {
  const table = new Uint8Array(256);
  for (const c of [92, 37, 61, 38, 34, 39]) table[c] = CANDIDATE;
  for (const c of [0, 10, 13]) table[c] = RAW_BLANK;
  return table;
})();
/** Where the next token may start: every byte KIND names. */
export const NEXT_CANDIDATE = /[\\%=&"'\r\n\0]/g;

const HEX = /^[0-9a-fA-F]+$/;
const ENTITY = /^&(?:#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos));/;
const ENTITIES: Readonly<Record<string, number>> = { amp: 38, lt: 60, gt: 62, quot: 34, apos: 39 };
const SIMPLE_ESCAPES: Readonly<Record<string, number>> = { n: 10, r: 13, t: 9, '0': 0 };
/** Bytes a blank run is made of: NUL (UTF-16's other half), tab, LF, CR, space. */
const BLANK = new Set([0, 9, 10, 13, 32]);

const nothing = (end: number): Token => ({ end, bytes: [] });

function utf8(codePoint: number): number[] {
  if (codePoint === 0) return [0];
  // A lone surrogate or a point past Unicode is what Buffer makes of one: U+FFFD.
  const valid = codePoint <= 0x10ffff && !(codePoint >= 0xd800 && codePoint < 0xe000);
  return [...Buffer.from(String.fromCodePoint(valid ? codePoint : 0xfffd), 'utf8')];
}

function hexAt(s: string, at: number, digits: number): number | undefined {
  const h = s.slice(at, at + digits);
  return h.length === digits && HEX.test(h) ? parseInt(h, 16) : undefined;
}

/** Whether what is left of `s` from `at` is the start of an escape a cut went through. */
function cutShort(s: string, at: number, pattern: RegExp): boolean {
  return pattern.test(s.slice(at, at + 16));
}

function pastBackslashes(s: string, at: number): number {
  let q = at;
  while (s.charCodeAt(q) === 92) q += 1;
  return q;
}

/** `\uXXXX` (after backslashes ending at `q`), a high surrogate joined with a low one. */
function unicodeEscape(s: string, q: number): Token | undefined {
  const unit = hexAt(s, q + 1, 4);
  if (unit === undefined) return undefined;
  if (unit >= 0xd800 && unit < 0xdc00 && s.charCodeAt(q + 5) === 92) {
    const r = pastBackslashes(s, q + 5);
    const low = s[r] === 'u' ? hexAt(s, r + 1, 4) : undefined;
    if (low !== undefined && low >= 0xdc00 && low < 0xe000)
      return { end: r + 5, bytes: utf8(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)) };
  }
  return { end: q + 5, bytes: utf8(unit) };
}

/** A run of backslashes (any depth of escaping) and what it escapes. */
function backslashToken(s: string, p: number, open: boolean): Token {
  const q = pastBackslashes(s, p);
  const d = s[q];
  if (d === undefined) return nothing(q);
  const byte = SIMPLE_ESCAPES[d];
  if (byte !== undefined) return { end: q + 1, bytes: [byte] };
  if (d === 'u') {
    const u = unicodeEscape(s, q);
    if (u !== undefined) return u;
    if (open && cutShort(s, q + 1, /^[0-9a-fA-F]{0,3}$/)) return nothing(s.length);
  }
  if (d === 'x') {
    const x = hexAt(s, q + 1, 2);
    if (x !== undefined) return { end: q + 3, bytes: [x] };
    if (open && cutShort(s, q + 1, /^[0-9a-fA-F]?$/)) return nothing(s.length);
  }
  // Any other escaped character is itself: the backslashes go, the character stays.
  return nothing(q);
}

/** An HTML character reference, or one of the five XML entities. */
function entityToken(s: string, p: number, open: boolean): Token | undefined {
  const m = ENTITY.exec(s.slice(p, p + 12));
  if (m === null)
    return open && cutShort(s, p, /^&(?:#[0-9]{0,7}|#[xX][0-9a-fA-F]{0,6}|[a-z]{0,4})$/)
      ? nothing(s.length)
      : undefined;
  const named = m[3] === undefined ? undefined : ENTITIES[m[3]];
  const point = named ?? (m[1] === undefined ? parseInt(m[2] ?? '0', 16) : parseInt(m[1], 10));
  return { end: p + m[0].length, bytes: utf8(point) };
}

/** The quotes of two strings joined and what is between them: `"ab" + "cd"` reads `abcd`. */
function joinToken(s: string, p: number): Token | undefined {
  const quote = s[p];
  let q = p + 1;
  const blanks = (): void => {
    for (;;) {
      const c = s.charCodeAt(q);
      if (c === 32 || c === 9 || c === 10 || c === 13) q += 1;
      else if (c === 92 && /^\\+[nrt]/.test(s.slice(q, q + 16))) q = pastBackslashes(s, q) + 1;
      else return;
    }
  };
  blanks();
  if (s[q] === ',' || s[q] === '+') {
    q += 1;
    blanks();
  }
  q = pastBackslashes(s, q);
  return s[q] === quote ? nothing(q + 1) : undefined;
}

/** Quoted-printable: `=3D` is `=`; `=` before a line break is a soft break (one line break). */
function equalsToken(s: string, p: number, open: boolean): Token | undefined {
  if (s.slice(p + 1, p + 3).toUpperCase() === '3D') return { end: p + 3, bytes: [61] };
  const next = s.charCodeAt(p + 1) === 61 ? undefined : token(s, p + 1, open);
  if (next?.bytes.length === 1 && (next.bytes[0] === 10 || next.bytes[0] === 13))
    return { end: next.end, bytes: [10] };
  return open && cutShort(s, p + 1, /^3?$/i) ? nothing(s.length) : undefined;
}

/**
 * The token at `p`, or undefined where the byte there is an ordinary one. `open`: `s` was
 * cut at its end, so an escape begun there and not finished is nothing (yet).
 */
export function token(s: string, p: number, open: boolean): Token | undefined {
  const c = s.charCodeAt(p);
  switch (c) {
    case 0:
    case 10:
    case 13:
      return { end: p + 1, bytes: [c] };
    case 92:
      return backslashToken(s, p, open);
    case 37: {
      const x = hexAt(s, p + 1, 2);
      if (x !== undefined) return { end: p + 3, bytes: [x] };
      return open && cutShort(s, p + 1, /^[0-9a-fA-F]?$/) ? nothing(s.length) : undefined;
    }
    case 61:
      return equalsToken(s, p, open);
    case 38:
      return entityToken(s, p, open);
    case 34:
    case 39:
      return joinToken(s, p);
    default:
      return undefined;
  }
}

export function isBlank(t: Token): boolean {
  return t.bytes.length === 1 && BLANK.has(t.bytes[0] ?? -1);
}

/** Raw bytes a blank run may hold without a token: NUL, tab, LF, CR, space. */
function rawBlank(c: number): boolean {
  return c === 0 || c === 9 || c === 10 || c === 13 || c === 32;
}

/** A blank run (reused from one to the next): its end, its bytes (no NULs), a line break. */
export interface BlankRun {
  end: number;
  lineBreak: boolean;
  readonly bytes: number[];
}

/** The blank run from `p`: raw blank bytes and tokens that decode to one, into `run`. */
export function blankRun(s: string, src: Buffer, p: number, open: boolean, run: BlankRun): void {
  let q = p;
  run.lineBreak = false;
  run.bytes.length = 0;
  while (q < src.length) {
    const c = src[q] ?? 0;
    let b = c;
    let end = q + 1;
    if (!rawBlank(c)) {
      const t = KIND[c] === CANDIDATE ? token(s, q, open) : undefined;
      if (t === undefined || !isBlank(t)) break;
      b = t.bytes[0] ?? 0;
      end = t.end;
    }
    if (b === 10 || b === 13) run.lineBreak = true;
    if (b !== 0) run.bytes.push(b);
    q = end;
  }
  run.end = q;
}
