// The values a run's references stand for, as a scrubber (AH-REF-4): each spelling of a held
// value the credential scrubber knows (scrub.ts) is replaced by its reference. The values
// arrive a few at a time for the whole run, so they are scrubbed in small groups built once
// each (a Scrubber over many values costs more than its parts: it is never rebuilt), and
// groups of longer values are applied first, so a held value inside a longer one never
// splits the longer one's reference off a remainder of it.
import { Scrubber } from './scrub.js';

/** Values per Scrubber: small groups keep each one's cost linear in what it holds. */
const GROUP = 8;

export interface HeldSpelling {
  readonly kind: string;
  readonly value: string;
  readonly ref: string;
}

export class HeldScrubber {
  /** By the length of the values it holds, each list a few Scrubbers of GROUP values. */
  readonly #byLength = new Map<number, Scrubber[]>();
  #pending: HeldSpelling[] = [];
  #order: number[] = [];

  add(held: HeldSpelling): void {
    this.#pending.push(held);
  }

  /** `text` with every spelling of every held value replaced by its reference. */
  text(text: string): string {
    this.#build();
    let out = text;
    for (const length of this.#order)
      for (const scrubber of this.#byLength.get(length) ?? []) out = scrubber.text(out);
    return out;
  }

  #build(): void {
    if (this.#pending.length === 0) return;
    const byLength = new Map<number, HeldSpelling[]>();
    for (const h of this.#pending)
      byLength.set(h.value.length, [...(byLength.get(h.value.length) ?? []), h]);
    this.#pending = [];
    for (const [length, values] of byLength) {
      const list = this.#byLength.get(length) ?? [];
      for (let i = 0; i < values.length; i += GROUP)
        list.push(
          new Scrubber(
            values.slice(i, i + GROUP).map((h) => ({
              name: h.kind,
              value: h.value,
              replacement: h.ref,
              fragments: false,
            })),
          ),
        );
      this.#byLength.set(length, list);
    }
    this.#order = [...this.#byLength.keys()].sort((a, b) => b - a);
  }
}
