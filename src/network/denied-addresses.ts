// A name deny stands for the name and for the addresses it resolves to (AH-CONT-4). A client
// that dials a denied name's address directly (no Host header, TLS without a server name)
// or pairs it with another name (under `open` any name goes, and nothing ties a name to an
// address) must meet the deny all the same, or "deny wins over allow" holds only for
// clients that announce themselves. The gateway resolves each exact-name deny itself, on
// the first connection that needs the answer, and again once the answer is older than a
// TTL (addresses move). A `*.domain` deny cannot be enumerated: it holds for names only,
// which docs/conformance.md publishes, with deny by address as the hard form.
import { addressForms } from './address-forms.js';
import type { EgressPolicy } from './egress-policy.js';

export const DENIED_NAME_TTL_MS = 30_000;

/** The gateway's upstream lookup (gateway-context.ts's `Resolve`). */
type Resolve = (name: string) => Promise<string[]>;

interface Answer {
  readonly at: number;
  readonly addresses: Promise<ReadonlySet<string>>;
}

export class DeniedNameAddresses {
  readonly #resolve: Resolve;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #answers = new Map<string, Answer>();

  constructor(resolve: Resolve, options: { ttlMs?: number; now?: () => number } = {}) {
    this.#resolve = resolve;
    this.#ttlMs = options.ttlMs ?? DENIED_NAME_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** The exact-name deny entry (as written) whose name resolves to `address`, if any. */
  async denying(policy: EgressPolicy, address: string, port: number): Promise<string | undefined> {
    // Any spelling against any spelling: a 6to4 answer reaches its IPv4 address too.
    const wanted = spellingsOf(address);
    for (const entry of policy.config.deny) {
      if (entry.kind !== 'name' || (entry.port !== undefined && entry.port !== port)) continue;
      const denied = await this.#addressesOf(entry.name);
      if (wanted.some((w) => denied.has(w))) return entry.text;
    }
    return undefined;
  }

  #addressesOf(name: string): Promise<ReadonlySet<string>> {
    const now = this.#now();
    const known = this.#answers.get(name);
    if (known !== undefined && now - known.at < this.#ttlMs) return known.addresses;
    // A failed lookup denies nothing by address (the name itself stays denied) and is
    // cached like an answer, so a dead resolver costs one timeout per TTL, not per connection.
    const addresses = this.#resolve(name).then(
      (found) => new Set(found.flatMap(spellingsOf)),
      () => new Set<string>(),
    );
    this.#answers.set(name, { at: now, addresses });
    return addresses;
  }
}

function spellingsOf(address: string): readonly string[] {
  const forms = addressForms(address);
  return forms.judged ? forms.spellings : [forms.canonical];
}
