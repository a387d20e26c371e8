// What the scrubber looks for, per held value (AH-TOOL-7): its spellings as bytes, matched
// in the text as it is (`plain`), and the same spellings normalised as the text's view is
// (`viewed`, scrub-view.ts), where what wraps, escapes or widens a spelling is gone. The
// spellings are the encodings a program applies to a value (as is, JSON-escaped, percent-
// encoded, hex, base64); how a program then prints them (wrapped, indented, escaped again,
// as UTF-16) is the view's to undo, not a list of combinations here.
import { foldBytes, normalised } from './scrub-view.js';

/** Shorter values would match ordinary text: such a credential is refused at planning. */
export const MIN_CREDENTIAL_CHARS = 8;

function hexOf(bytes: Buffer): string[] {
  return [bytes.toString('hex')];
}

function percentOf(value: string, bytes: Buffer): string[] {
  const component = encodeURIComponent(value);
  const every = [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  return [
    component,
    component.replace(/%20/g, '+'),
    every,
    encodeURI(value),
    // Python's urllib.parse.quote leaves `/` as it is.
    component.replace(/%2F/g, '/'),
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
  out.push(bytes.toString('base64'), bytes.toString('base64url'));
  return out;
}

/**
 * Every spelling of `value` as text, longest first (the plain ones; letters of every
 * spelling but base64's are matched in any case, base64's too, as one long random run in
 * another case is no less the value's).
 */
export function spellingsOf(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const json = JSON.stringify(value).slice(1, -1);
  // What JSON encoders other than JavaScript's escape too: Go and PHP's `\/`, `\u0026`,
  // `\u003c`, `\u003e`; and an encoder that escapes every character as `\uXXXX`.
  const goJson = json.replace(/&/g, '\\u0026').replace(/</g, '\\u003c').replace(/>/g, '\\u003e');
  let everyUnit = '';
  for (let i = 0; i < value.length; i += 1)
    everyUnit += `\\u${value.charCodeAt(i).toString(16).padStart(4, '0')}`;
  const all = [
    value,
    json,
    goJson,
    json.replace(/\//g, '\\/'),
    goJson.replace(/\//g, '\\/'),
    everyUnit,
    ...percentOf(value, bytes),
    ...hexOf(bytes),
    ...base64Cores(bytes),
  ];
  // A spelling much shorter than the value (a base64 core of a short one) stays long
  // enough to be specific: the value's own minimum length.
  const floor = Math.min(MIN_CREDENTIAL_CHARS, value.length);
  return [...new Set(all)].filter((x) => x.length >= floor).sort((a, b) => b.length - a.length);
}

/** A text as the bytes a program writes (UTF-8), one latin1 character per byte. */
export function asBytes(text: string): string {
  // eslint-disable-next-line no-control-regex
  return /[^\x00-\x7f]/.test(text) ? Buffer.from(text, 'utf8').toString('latin1') : text;
}

/** What a view of a text spells `bytes` as: normalised, then case-folded. */
export function viewed(bytes: string): string {
  return foldBytes(normalised(bytes).text);
}

export interface Needles {
  /** Matched in the text as it is (folded): each spelling. */
  readonly plain: readonly string[];
  /** Matched in the text's view (scrub-view.ts): each spelling as the view spells it. */
  readonly viewed: readonly string[];
}

/** The needles for `value`, as folded bytes (latin1), none shorter than is specific. */
export function needlesOf(value: string): Needles {
  const spellings = spellingsOf(value).map(asBytes);
  // UTF-16, little and big endian: the view drops its zero bytes, which leaves an ASCII
  // value as it is; a value with other characters keeps the other byte of each.
  const wide = [Buffer.from(value, 'utf16le'), Buffer.from(value, 'utf16le').swap16()].map((b) =>
    b.toString('latin1'),
  );
  const floor = Math.min(MIN_CREDENTIAL_CHARS, value.length);
  const long = (list: string[]): string[] =>
    [...new Set(list)].filter((x) => x.length >= floor).sort((a, b) => b.length - a.length);
  return {
    plain: long(spellings.map(foldBytes)),
    viewed: long([...spellings, ...wide].map(viewed)),
  };
}
