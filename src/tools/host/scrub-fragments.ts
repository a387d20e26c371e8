// Fragments of credentials (AH-TOOL-7): every run of a text of at least `min` bytes (half of
// the credential, and at least MIN_CREDENTIAL_CHARS) that is a substring of a credential is
// a match; so of a credential split in two (two fields of a schema, two enum values a
// validation message lists), neither half is left. Linear in the text whatever the
// credential's length: seeds (MIN_CREDENTIAL_CHARS-byte pieces of the credential, one every
// `min - MIN_CREDENTIAL_CHARS + 1` bytes of it, so every run of `min` bytes of it holds one
// whole) are searched for as one regular expression; from up to that far before a seed, a
// suffix automaton of the credential reads on, knowing at each byte the longest substring
// of the credential that ends there (amortised constant work a byte), until that is shorter
// than a seed again past the seed.
import { MIN_CREDENTIAL_CHARS } from './scrub-spellings.js';

export interface Match {
  readonly from: number;
  readonly to: number;
  readonly replacement: string;
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The suffix automaton of a text: every substring of it is a path from state 0. */
class SuffixAutomaton {
  readonly #length: number[] = [0];
  readonly #link: number[] = [-1];
  readonly #next: Map<number, number>[] = [new Map<number, number>()];

  constructor(text: string) {
    let last = 0;
    for (let i = 0; i < text.length; i += 1) last = this.#extend(last, text.charCodeAt(i));
  }

  #state(length: number, link: number, next: Map<number, number>): number {
    this.#length.push(length);
    this.#link.push(link);
    this.#next.push(next);
    return this.#length.length - 1;
  }

  #extend(last: number, c: number): number {
    const current = this.#state((this.#length[last] ?? 0) + 1, 0, new Map());
    let p = last;
    while (p !== -1 && !(this.#next[p]?.has(c) ?? false)) {
      this.#next[p]?.set(c, current);
      p = this.#link[p] ?? -1;
    }
    if (p === -1) return current;
    const q = this.#next[p]?.get(c) ?? 0;
    if ((this.#length[p] ?? 0) + 1 === this.#length[q]) {
      this.#link[current] = q;
      return current;
    }
    const clone = this.#state(
      (this.#length[p] ?? 0) + 1,
      this.#link[q] ?? 0,
      new Map(this.#next[q]),
    );
    while (p !== -1 && this.#next[p]?.get(c) === q) {
      this.#next[p]?.set(c, clone);
      p = this.#link[p] ?? -1;
    }
    this.#link[q] = clone;
    this.#link[current] = clone;
    return current;
  }

  /** From `state` with `matched` bytes, one more byte `c`: the longest match ending there. */
  step(state: number, matched: number, c: number): [number, number] {
    let v = state;
    let l = matched;
    while (v !== 0 && !(this.#next[v]?.has(c) ?? false)) {
      v = this.#link[v] ?? 0;
      l = this.#length[v] ?? 0;
    }
    const to = this.#next[v]?.get(c);
    return to === undefined ? [0, 0] : [to, l + 1];
  }
}

class Secret {
  readonly #seeds: RegExp;
  readonly #automaton: SuffixAutomaton;
  readonly #min: number;
  /** How far apart seeds are taken: a run of `min` bytes of the credential holds one. */
  readonly #step: number;
  readonly #replacement: string;

  constructor(text: string, min: number, replacement: string) {
    this.#step = min - MIN_CREDENTIAL_CHARS + 1;
    const seeds = new Set<string>();
    for (let i = 0; i + MIN_CREDENTIAL_CHARS <= text.length; i += this.#step)
      seeds.add(text.slice(i, i + MIN_CREDENTIAL_CHARS));
    this.#seeds = new RegExp([...seeds].map(escapeRegex).join('|'), 'g');
    this.#automaton = new SuffixAutomaton(text);
    this.#min = min;
    this.#replacement = replacement;
  }

  find(folded: string, span: (from: number, to: number) => [number, number], out: Match[]): void {
    const seeds = this.#seeds;
    seeds.lastIndex = 0;
    // Before this, every fragment has been read: none starts earlier and goes on past it.
    let read = 0;
    for (let m = seeds.exec(folded); m !== null; m = seeds.exec(folded)) {
      read = this.#readFrom(folded, Math.max(read, m.index - this.#step + 1), m.index, span, out);
      seeds.lastIndex = read;
    }
  }

  /**
   * Reads from `from` on, past the seed at `seed`: each run of at least `min` bytes that is
   * a substring of the credential becomes a match. Returns where a later fragment may start
   * (past `seed`): a fragment starts with a seed's distance of the first seed in it.
   */
  #readFrom(
    folded: string,
    from: number,
    seed: number,
    span: (from: number, to: number) => [number, number],
    out: Match[],
  ): number {
    let state = 0;
    let matched = 0;
    let run: [number, number] | undefined;
    let p = from;
    for (; p < folded.length; p += 1) {
      [state, matched] = this.#automaton.step(state, matched, folded.charCodeAt(p));
      if (matched >= this.#min) {
        const start = p - matched + 1;
        if (run !== undefined && start <= run[1]) run[1] = p + 1;
        else {
          if (run !== undefined) out.push(this.#match(run, span));
          run = [start, p + 1];
        }
      }
      // Past the seed, a match shorter than a seed again: what follows needs a seed of its own.
      if (p >= seed + MIN_CREDENTIAL_CHARS - 1 && matched < MIN_CREDENTIAL_CHARS) break;
    }
    if (run !== undefined) out.push(this.#match(run, span));
    return Math.max(seed + 1, p - matched + 1);
  }

  #match(run: [number, number], span: (from: number, to: number) => [number, number]): Match {
    const [from, to] = span(run[0], run[1]);
    return { from, to, replacement: this.#replacement };
  }
}

export class FragmentMatcher {
  readonly #secrets: readonly Secret[];

  /** `credentials`: each value already as the view spells it (scrub-spellings.ts `viewed`). */
  constructor(credentials: readonly { text: string; replacement: string }[]) {
    this.#secrets = credentials.flatMap((c) => {
      // Half of the credential, in bytes of the view.
      const min = Math.max(MIN_CREDENTIAL_CHARS, Math.floor(c.text.length / 2));
      return c.text.length < min ? [] : [new Secret(c.text, min, c.replacement)];
    });
  }

  /** The fragments in `folded` (a folded view), mapped to the original by `span`. */
  find(folded: string, span: (from: number, to: number) => [number, number], out: Match[]): void {
    for (const secret of this.#secrets) secret.find(folded, span, out);
  }
}
