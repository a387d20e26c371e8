// The DEST grammar of network allow and deny lists: `host`, `host:port`,
// `*.domain` (subdomains only), `ip`, `ip/prefix`, each optionally with `:port`
// (`[v6]:port` for IPv6). Parsed once, at validation, into typed entries.
import { isIP } from 'node:net';
import { ConfigError } from '../errors.js';
import { canonicalRange } from './address-forms.js';

export type Destination =
  | { readonly kind: 'name'; readonly name: string; readonly port?: number; readonly text: string }
  | {
      readonly kind: 'suffix';
      readonly domain: string;
      readonly port?: number;
      readonly text: string;
    }
  | {
      readonly kind: 'cidr';
      readonly address: string;
      readonly prefix: number;
      readonly family: 4 | 6;
      readonly port?: number;
      readonly text: string;
    };

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** One spelling per name: lower case, without the root's trailing dot. */
export function foldName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

export function normalizeName(name: string): string | undefined {
  const n = foldName(name);
  if (n.length === 0 || n.length > 253) return undefined;
  return n.split('.').every((l) => LABEL.test(l)) ? n : undefined;
}

function parsePort(field: string, text: string, port: string): number {
  const n = Number(port);
  if (!/^\d{1,5}$/.test(port) || n < 1 || n > 65535) {
    throw new ConfigError(
      'invalid_destination',
      `${field}: '${text}' has an invalid port '${port}'`,
      { field, value: text },
    );
  }
  return n;
}

export function parseDestination(field: string, text: string): Destination {
  const bad = (why: string): ConfigError =>
    new ConfigError('invalid_destination', `${field}: '${text}' ${why}`, { field, value: text });
  let host = text.trim();
  let port: number | undefined;
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end < 0) throw bad('has an unclosed [');
    const rest = host.slice(end + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) throw bad('has text after ]');
      port = parsePort(field, text, rest.slice(1));
    }
    host = host.slice(1, end);
  } else if ((host.match(/:/g) ?? []).length === 1) {
    const i = host.lastIndexOf(':');
    port = parsePort(field, text, host.slice(i + 1));
    host = host.slice(0, i);
  }
  const withPort = <T extends object>(d: T): T & { port?: number } =>
    port === undefined ? d : { ...d, port };

  const slash = host.indexOf('/');
  const addressPart = slash >= 0 ? host.slice(0, slash) : host;
  const family = isIP(addressPart);
  if (family === 4 || family === 6) {
    const max = family === 4 ? 32 : 128;
    const prefix = slash >= 0 ? Number(host.slice(slash + 1)) : max;
    if (
      !Number.isInteger(prefix) ||
      prefix < 0 ||
      prefix > max ||
      (slash >= 0 && !/^\d+$/.test(host.slice(slash + 1)))
    ) {
      throw bad(`has an invalid prefix length (0-${max})`);
    }
    // In its canonical family: `::ffff:198.51.100.0/120` is the IPv4 range it spells.
    return withPort({ kind: 'cidr' as const, ...canonicalRange(addressPart, prefix), text });
  }
  if (slash >= 0) throw bad('is not an address/prefix');
  if (host.startsWith('*.')) {
    const domain = normalizeName(host.slice(2));
    if (domain === undefined) throw bad('is not a valid *.domain');
    return withPort({ kind: 'suffix' as const, domain, text });
  }
  const name = normalizeName(host);
  if (name === undefined || /^\d+$/.test(name.split('.').at(-1) ?? ''))
    throw bad('is not a host name, *.domain, ip or ip/prefix');
  return withPort({ kind: 'name' as const, name, text });
}

export function parseDestinations(field: string, texts: readonly string[]): Destination[] {
  return texts.map((t, i) => parseDestination(`${field}[${i}]`, t));
}
