// What the gateway resolved during one run, and how many new names it may still forward
//. Two questions the egress decision needs state for:
// - Which addresses stand for a name? Those the filtering resolver answered the sandbox for
//   it, or the gateway's own lookups: a name entry admits only these, so a client cannot
//   pair an allowed Host or server name with an address of its choosing.
// - May this new name go upstream? A `*.domain` entry forwards names the sandbox makes up;
//   each distinct name carries data to the domain's authoritative server. A token bucket
//   bounds how many new names per run (a burst, then a slow refill); names seen before cost
//   nothing. Both maps grow only by admitted names, so the budget bounds them too.
import { foldName } from './destination.js';
import { canonicalAddress } from './egress-policy.js';

/** New names under `*.domain` entries: this many at once, then one per interval. */
export const NAME_BURST = 64;
export const NAME_REFILL_MS = 1000;

export class RunResolutions {
  readonly #addresses = new Map<string, Set<string>>();
  readonly #admitted = new Set<string>();
  readonly #burst: number;
  readonly #refillMs: number;
  readonly #now: () => number;
  #tokens: number;
  #refilledAt: number;

  constructor(options: { burst?: number; refillMs?: number; now?: () => number } = {}) {
    this.#burst = options.burst ?? NAME_BURST;
    this.#refillMs = options.refillMs ?? NAME_REFILL_MS;
    this.#now = options.now ?? Date.now;
    this.#tokens = this.#burst;
    this.#refilledAt = this.#now();
  }

  /** May `name` be forwarded upstream now? Seen before: yes; new: if the budget allows. */
  admit(name: string): boolean {
    const key = foldName(name);
    if (this.#admitted.has(key)) return true;
    const now = this.#now();
    this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#refilledAt) / this.#refillMs);
    this.#refilledAt = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    this.#admitted.add(key);
    return true;
  }

  /** The gateway resolved `name` to `addresses` (for the sandbox or for itself). */
  record(name: string, addresses: readonly string[]): void {
    const key = foldName(name);
    let known = this.#addresses.get(key);
    if (known === undefined) {
      known = new Set();
      this.#addresses.set(key, known);
    }
    for (const a of addresses) known.add(canonicalAddress(a));
  }

  /** Did the gateway resolve `name` to `address` during this run? */
  resolvedFor(name: string, address: string): boolean {
    return this.#addresses.get(foldName(name))?.has(canonicalAddress(address)) ?? false;
  }
}
