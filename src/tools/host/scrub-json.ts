// A JSON-like value scrubbed as the text it is serialised to (AH-TOOL-7, AH-TOOL-10): what
// leaves towards the model or the evidence as structured data (a tool's schema, an event's
// fields, a call's input) is written out as JSON later, so that text is what is matched,
// and each match is mapped back to the strings (keys too) and numbers it touches, which
// are redacted there. So a credential made of digits that a schema holds as a number (an
// `enum`, a `default`, a `maximum`), and one split across two strings of an array or two
// fields, is found as the model would read it, not only inside one string at a time.
import type { Match } from './scrub-fragments.js';

/** Matches in a text (UTF-16 offsets), merged and in order. */
export type TextMatcher = (text: string) => readonly Match[];

/** Where each leaf (string, key or number) lies in the text, in the serialiser's order. */
interface Leaves {
  readonly from: readonly number[];
  readonly to: readonly number[];
}

/**
 * The serialisation of `v` as JSON.stringify writes it, each string and number a leaf:
 * walked only once a match was found in JSON.stringify's text (flat arrays, one rope).
 */
class Serialiser {
  text = '';
  readonly leaves = { from: [] as number[], to: [] as number[] };

  #put(text: string): void {
    this.text += text;
  }

  leaf(text: string): void {
    this.leaves.from.push(this.text.length);
    this.text += text;
    this.leaves.to.push(this.text.length);
  }

  value(v: unknown): void {
    const shown = shownAs(v);
    if (typeof shown === 'string') this.leaf(JSON.stringify(shown));
    else if (typeof shown === 'number' || typeof shown === 'bigint') this.leaf(String(shown));
    else if (Array.isArray(shown)) {
      this.#put('[');
      shown.forEach((x, i) => {
        if (i > 0) this.#put(',');
        if (serialisable(x)) this.value(x);
        else this.#put('null');
      });
      this.#put(']');
    } else if (typeof shown === 'object' && shown !== null) {
      this.#put('{');
      let first = true;
      for (const [k, x] of Object.entries(shown)) {
        if (!serialisable(x)) continue;
        if (!first) this.#put(',');
        first = false;
        this.leaf(JSON.stringify(k));
        this.#put(':');
        this.value(x);
      }
      this.#put('}');
    } else this.#put(typeof shown === 'boolean' ? String(shown) : 'null');
  }
}

/** What JSON.stringify writes for `v`: its toJSON, and null for a number it cannot write. */
function shownAs(v: unknown): unknown {
  if (typeof v === 'object' && v !== null && 'toJSON' in v) {
    const toJSON: unknown = v.toJSON;
    if (typeof toJSON === 'function') {
      const shown: unknown = Reflect.apply(toJSON, v, []);
      return shown;
    }
  }
  if (typeof v === 'number' && !Number.isFinite(v)) return null;
  return v;
}

function serialisable(v: unknown): boolean {
  return v !== undefined && typeof v !== 'function' && typeof v !== 'symbol';
}

/** Where each character of `s` starts in JSON.stringify(s) (its opening quote at 0). */
function escapedStarts(s: string): number[] {
  const starts: number[] = [];
  let at = 1;
  for (let i = 0; i < s.length; i += 1) {
    starts.push(at);
    const c = s.charCodeAt(i);
    const high = c >= 0xd800 && c < 0xdc00;
    const low = c >= 0xdc00 && c < 0xe000;
    const paired =
      (high && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) ||
      (low && (s.charCodeAt(i - 1) & 0xfc00) === 0xd800);
    if (c === 34 || c === 92 || c === 8 || c === 9 || c === 10 || c === 12 || c === 13) at += 2;
    else if (c < 0x20 || ((high || low) && !paired)) at += 6;
    else at += 1;
  }
  starts.push(at);
  return starts;
}

/** The first index of the ascending `starts` whose value passes `pass` (binary search). */
function firstWhere(starts: readonly number[], pass: (start: number) => boolean): number {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (pass(starts[mid] ?? 0)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** `s` with each match (offsets into its serialisation, in order) replaced. */
function splicedString(s: string, matches: readonly Match[], serialised: boolean): string {
  const starts = serialised ? escapedStarts(s) : [...Array(s.length + 1).keys()];
  // A match in characters: from the first character whose escaped text ends after the
  // match's start, to the first whose escaped text starts at or after its end.
  const ends = starts.slice(1);
  const firstEndingAfter = (offset: number): number =>
    Math.min(
      s.length,
      firstWhere(ends, (e) => e > offset),
    );
  const firstStartingFrom = (offset: number): number =>
    Math.min(
      s.length,
      firstWhere(starts, (x) => x >= offset),
    );
  let out = '';
  let at = 0;
  for (const m of matches) {
    const from = Math.max(at, firstEndingAfter(m.from));
    const to = Math.max(from, firstStartingFrom(m.to));
    out += s.slice(at, from) + m.replacement;
    at = to;
  }
  return out + s.slice(at);
}

/** Rebuilds a value leaf by leaf, in the serialiser's order, splicing what a match touched. */
class Splicer {
  #next = 0;
  readonly #leaves: Leaves;
  readonly #matches: readonly Match[];
  /** The first match that may still touch a leaf (leaves come in order, as matches do). */
  #cursor = 0;

  constructor(leaves: Leaves, matches: readonly Match[]) {
    this.#leaves = leaves;
    this.#matches = matches;
  }

  /** The matches over the next leaf, in offsets relative to it. */
  #touching(): Match[] {
    const at = this.#next;
    this.#next += 1;
    const from = this.#leaves.from[at];
    const to = this.#leaves.to[at];
    if (from === undefined || to === undefined) return [];
    while ((this.#matches[this.#cursor]?.to ?? Infinity) <= from) this.#cursor += 1;
    const out: Match[] = [];
    for (let k = this.#cursor; k < this.#matches.length; k += 1) {
      const m = this.#matches[k];
      if (m === undefined || m.from >= to) break;
      out.push({
        from: Math.max(0, m.from - from),
        to: Math.min(to, m.to) - from,
        replacement: m.replacement,
      });
    }
    return out;
  }

  string(s: string): string {
    const touching = this.#touching();
    return touching.length === 0 ? s : splicedString(s, touching, true);
  }

  value(v: unknown): unknown {
    const shown = shownAs(v);
    if (typeof shown === 'string') return this.string(shown);
    if (typeof shown === 'number' || typeof shown === 'bigint') {
      const touching = this.#touching();
      return touching.length === 0 ? v : splicedString(String(shown), touching, false);
    }
    if (Array.isArray(shown)) {
      const items: readonly unknown[] = shown;
      return items.map((x) => (serialisable(x) ? this.value(x) : x));
    }
    if (typeof shown === 'object' && shown !== null)
      return Object.fromEntries(
        Object.entries(shown).map(([k, x]) =>
          serialisable(x) ? [this.string(k), this.value(x)] : [k, x],
        ),
      );
    return v;
  }
}

/** `input` with every match in its serialisation redacted in the leaves it touches. */
export function scrubbedValue(input: unknown, find: TextMatcher): unknown {
  if (!serialisable(input)) return input;
  // Matched in JSON.stringify's own text (what is sent); the walk that knows where each
  // leaf lies only when something matched, and its text is then the one matched.
  let written: string | undefined;
  try {
    written = JSON.stringify(input);
  } catch {
    written = undefined;
  }
  let matches = written === undefined ? undefined : find(written);
  if (matches?.length === 0) return input;
  const serialiser = new Serialiser();
  serialiser.value(input);
  if (serialiser.text !== written) matches = find(serialiser.text);
  if (matches === undefined || matches.length === 0) return input;
  return new Splicer(serialiser.leaves, matches).value(input);
}
