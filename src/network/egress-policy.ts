// The egress decision, in one place: whichever process enforces a posture asks
// this module, and records its reason code. Pure: names, addresses and ports in, a decision
// out. Deny wins over allow; in every mode loopback, link-local (the metadata address
// included), private, multicast and the host's own addresses are refused unless an allow
// entry names that address explicitly (AH-CONT-4). A name entry allows the name, and an
// address only as one resolved for it; a `*.domain` entry allows names of bounded shape
// below the domain (what an unbounded one would forward upstream is a channel out).
import { BlockList, isIP } from 'node:net';
import { addressForms, canonicalAddress } from './address-forms.js';
import { foldName, type Destination } from './destination.js';
import { POSTURES, type EgressMode } from '../config/postures.js';

export type { EgressMode } from '../config/postures.js';

export { canonicalAddress } from './address-forms.js';

export type EgressReason =
  | 'allowlisted'
  | 'open'
  | 'denylisted'
  | 'not-allowlisted'
  | 'dns-refused'
  | 'loopback-address'
  | 'link-local-address'
  | 'metadata-address'
  | 'private-address'
  | 'host-address'
  | 'multicast-address'
  | 'unspecified-address'
  | 'no-destination'
  | 'address-not-resolved-for-name'
  | 'name-too-deep'
  | 'name-too-long'
  /** Not a host name: a byte outside letters, digits, `-` and `_`, or a bad label. */
  | 'invalid-name'
  /** An IPv6 form whose embedded IPv4 address cannot be located (address-forms.ts). */
  | 'unjudgeable-address';

export interface EgressDecision {
  readonly allowed: boolean;
  readonly reason: EgressReason;
  /** The allow or deny entry that decided, as written. */
  readonly rule?: string;
  /** Allowed by a `*.domain` entry: each new name costs the run's name budget. */
  readonly bySuffix?: true;
}

/**
 * The shape of a name a `*.domain` entry allows, below the domain: at most this many labels
 * and characters (dots included). Real service names fit (`bucket.s3.region` under
 * `*.amazonaws.com` is 3 labels, about 30 characters); a DNS tunnel's labels do not.
 */
export const MAX_LABELS_BELOW_SUFFIX = 4;
export const MAX_CHARS_BELOW_SUFFIX = 100;

export interface EgressPolicyConfig {
  readonly mode: EgressMode;
  readonly allow: readonly Destination[];
  readonly deny: readonly Destination[];
  /** The host's own addresses (bridge gateways included), refused unless listed. */
  readonly hostAddresses: readonly string[];
}

const SPECIAL: readonly [EgressReason, string, number][] = [
  ['metadata-address', '169.254.169.254', 32],
  ['metadata-address', 'fd00:ec2::254', 128],
  ['loopback-address', '127.0.0.0', 8],
  ['loopback-address', '::1', 128],
  ['link-local-address', '169.254.0.0', 16],
  ['link-local-address', 'fe80::', 10],
  ['private-address', '10.0.0.0', 8],
  ['private-address', '172.16.0.0', 12],
  ['private-address', '192.168.0.0', 16],
  ['private-address', '100.64.0.0', 10],
  ['private-address', 'fc00::', 7],
  // Site-local (RFC 3879 deprecated it; routers may still route it privately).
  ['private-address', 'fec0::', 10],
  ['multicast-address', '224.0.0.0', 4],
  ['multicast-address', 'ff00::', 8],
  ['unspecified-address', '0.0.0.0', 8],
  ['unspecified-address', '::', 128],
];

function family(address: string): 'ipv4' | 'ipv6' {
  return isIP(address) === 6 ? 'ipv6' : 'ipv4';
}

function cidrContains(entry: Extract<Destination, { kind: 'cidr' }>, address: string): boolean {
  if (isIP(address) !== entry.family) return false;
  const list = new BlockList();
  list.addSubnet(entry.address, entry.prefix, entry.family === 4 ? 'ipv4' : 'ipv6');
  return list.check(address, family(address));
}

function portMatches(entry: Destination, port: number): boolean {
  return entry.port === undefined || entry.port === port;
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/**
 * Whether a (normalized) name is a host name: labels of letters, digits, `-` and `_`, at
 * most 63 characters each and 253 in all. A name from a server name, a DNS question or a
 * Host header is the sandbox's choice: one carrying a NUL, a space or any other byte is
 * refused before any rule or resolver sees it (a resolver library may stop at a NUL and
 * look up a different name than the one the policy judged).
 */
export function isHostName(name: string): boolean {
  return name.length > 0 && name.length <= 253 && name.split('.').every((l) => LABEL.test(l));
}

export function nameMatches(entry: Destination, name: string): boolean {
  if (entry.kind === 'name') return entry.name === name;
  if (entry.kind === 'suffix') return name.endsWith(`.${entry.domain}`);
  return false;
}

export class EgressPolicy {
  readonly config: EgressPolicyConfig;
  readonly #special: { reason: EgressReason; list: BlockList }[];
  readonly #host: Set<string>;
  /** The posture passes what no deny entry names (config/postures.ts), not only the allowed. */
  readonly #passesAll: boolean;

  constructor(config: EgressPolicyConfig) {
    this.config = config;
    this.#passesAll = POSTURES[config.mode].passes === 'all-but-denied';
    this.#special = SPECIAL.map(([reason, address, prefix]) => {
      const list = new BlockList();
      list.addSubnet(address, prefix, family(address));
      return { reason, list };
    });
    this.#host = new Set(config.hostAddresses.map(canonicalAddress));
  }

  /** May this name be resolved at all? (The filtering resolver's question.) */
  decideName(rawName: string, port?: number): EgressDecision {
    const name = foldName(rawName);
    if (!isHostName(name)) return { allowed: false, reason: 'invalid-name' };
    const deny = this.config.deny.find(
      (d) => nameMatches(d, name) && (port === undefined || portMatches(d, port)),
    );
    if (deny) return { allowed: false, reason: 'denylisted', rule: deny.text };
    if (this.#passesAll) return { allowed: true, reason: 'open' };
    return this.#allowByName(name, port) ?? { allowed: false, reason: 'dns-refused' };
  }

  /**
   * May a connection go to `address:port`, reached by `name` if the client gave one (Host
   * header, TLS server name, CONNECT, DNS)? The address is the one the gateway will connect
   * to. With a name, `resolvedForName` says whether the gateway resolved that address for
   * that name during the run (its resolver's answers or its own lookup): a name entry
   * allows no other address, else a client could pair an allowed name with any address.
   */
  decideConnection(
    request:
      | { name?: undefined; address: string; port: number }
      | { name: string; address: string; port: number; resolvedForName: boolean },
  ): EgressDecision {
    const forms = addressForms(request.address);
    const name = request.name === undefined ? undefined : foldName(request.name);
    const resolvedForName = request.name !== undefined && request.resolvedForName;
    if (name !== undefined && !isHostName(name)) return { allowed: false, reason: 'invalid-name' };
    const spellings = forms.judged ? forms.spellings : [forms.canonical];
    const address = spellings[0] ?? request.address;
    // Every spelling meets the deny list: a 6to4 or Teredo address reaches its IPv4 too.
    const deny = this.config.deny.find(
      (d) =>
        portMatches(d, request.port) &&
        ((name !== undefined && nameMatches(d, name)) ||
          (d.kind === 'cidr' && spellings.some((s) => cidrContains(d, s)))),
    );
    if (deny) return { allowed: false, reason: 'denylisted', rule: deny.text };
    const explicit = this.listedAddress(address, request.port);
    // Where the embedded address is cannot be known: only an entry listing it passes it.
    if (!forms.judged && explicit === undefined)
      return { allowed: false, reason: 'unjudgeable-address' };
    // Each spelling that is special must be listed by itself, or a listed 6to4 address
    // would launder the loopback or metadata address it carries.
    for (const s of spellings) {
      const special = this.#classify(s);
      if (special !== undefined && this.listedAddress(s, request.port) === undefined)
        return { allowed: false, reason: special };
    }
    if (this.#passesAll)
      return explicit
        ? { allowed: true, reason: 'allowlisted', rule: explicit.text }
        : { allowed: true, reason: 'open' };
    if (name !== undefined) {
      const byName = this.#allowByName(name, request.port);
      // A name was given and is not allowed: an allowed address does not launder it.
      if (byName === undefined) return { allowed: false, reason: 'not-allowlisted' };
      if (!byName.allowed) return byName;
      // The name is allowed; the address must be its own (or listed in its own right).
      if (!resolvedForName && explicit === undefined)
        return {
          allowed: false,
          reason: 'address-not-resolved-for-name',
          ...(byName.rule === undefined ? {} : { rule: byName.rule }),
        };
      return byName;
    }
    return explicit
      ? { allowed: true, reason: 'allowlisted', rule: explicit.text }
      : { allowed: false, reason: 'not-allowlisted' };
  }

  /** The allow entry that lists `address` (on `port`) by address, if any. */
  listedAddress(address: string, port: number): Destination | undefined {
    const canonical = canonicalAddress(address);
    return this.config.allow.find(
      (a) => a.kind === 'cidr' && portMatches(a, port) && cidrContains(a, canonical),
    );
  }

  /**
   * The allow entry for `name` (on `port` when given): an exact name first, else the
   * `*.domain` entry closest to the name, whose bounds the name must keep. Undefined: none.
   */
  #allowByName(name: string, port: number | undefined): EgressDecision | undefined {
    const matching = this.config.allow.filter(
      (a) => nameMatches(a, name) && (port === undefined || portMatches(a, port)),
    );
    const exact = matching.find((a) => a.kind === 'name');
    if (exact) return { allowed: true, reason: 'allowlisted', rule: exact.text };
    const suffix = matching
      .filter((a): a is Extract<Destination, { kind: 'suffix' }> => a.kind === 'suffix')
      .sort((a, b) => b.domain.length - a.domain.length)[0];
    if (suffix === undefined) return undefined;
    const below = name.slice(0, name.length - suffix.domain.length - 1);
    if (below.split('.').length > MAX_LABELS_BELOW_SUFFIX)
      return { allowed: false, reason: 'name-too-deep', rule: suffix.text };
    if (below.length > MAX_CHARS_BELOW_SUFFIX)
      return { allowed: false, reason: 'name-too-long', rule: suffix.text };
    return { allowed: true, reason: 'allowlisted', rule: suffix.text, bySuffix: true };
  }

  #classify(address: string): EgressReason | undefined {
    const fam = family(address);
    const special = this.#special.find((s) => s.list.check(address, fam))?.reason;
    // The metadata address keeps its name even when this host also holds it.
    if (special === 'metadata-address') return special;
    return this.#host.has(address) ? 'host-address' : special;
  }
}
