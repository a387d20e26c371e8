// Every address of this host, for the egress policy's "never the host" rule. The kernel's
// local routing table lists addresses of interfaces that are up without carrier too (an
// idle docker0), which os.networkInterfaces() leaves out; both are read and merged.
import { readFileSync } from 'node:fs';
import os from 'node:os';

export function hostAddresses(extra: readonly string[] = []): string[] {
  const found = new Set<string>(extra);
  for (const list of Object.values(os.networkInterfaces())) {
    for (const i of list ?? []) found.add(i.address.toLowerCase());
  }
  for (const a of localIpv4FromFibTrie(readOr('/proc/net/fib_trie'))) found.add(a);
  for (const a of ipv6FromIfInet6(readOr('/proc/net/if_inet6'))) found.add(a);
  return [...found].sort();
}

function readOr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * The IPv4 addresses the kernel holds on interface `name` (docker0, say). An idle docker0
 * is down for os.networkInterfaces(), so the interface's subnets are read from the routing
 * table (/proc/net/route) and its addresses from the local table (/proc/net/fib_trie).
 * Never the engine's record of the network: that can lack its gateway.
 */
export function interfaceIpv4(name: string): string[] {
  const listed = (os.networkInterfaces()[name] ?? [])
    .filter((i) => i.family === 'IPv4')
    .map((i) => i.address);
  if (listed.length > 0) return listed;
  return ipv4OfInterface(name, readOr('/proc/net/route'), readOr('/proc/net/fib_trie'));
}

/** The local addresses (fib_trie) inside the subnets that /proc/net/route gives `name`. */
export function ipv4OfInterface(name: string, routeText: string, fibTrieText: string): string[] {
  const subnets = routeText
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[0] === name && f[1] !== undefined && f[7] !== undefined)
    .map((f) => ({ network: hexLe(f[1] ?? ''), mask: hexLe(f[7] ?? '') }))
    .filter((s) => s.mask !== 0);
  const locals = localIpv4FromFibTrie(fibTrieText);
  return locals.filter((a) => {
    const n = ipv4Number(a);
    return subnets.some((s) => (n & s.mask) >>> 0 === s.network);
  });
}

/** /proc/net/route writes addresses as little-endian hex words. */
function hexLe(hex: string): number {
  if (!/^[0-9A-Fa-f]{8}$/.test(hex)) return 0;
  const b = Buffer.from(hex, 'hex');
  return b.readUInt32LE(0);
}

function ipv4Number(address: string): number {
  return address.split('.').reduce((n, part) => ((n << 8) | Number(part)) >>> 0, 0);
}

/** Lines `|-- A.B.C.D` followed by `/32 host LOCAL` name a local address. */
export function localIpv4FromFibTrie(text: string): string[] {
  const out = new Set<string>();
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const m = /\|-- (\d+\.\d+\.\d+\.\d+)\s*$/.exec(line);
    if (m?.[1] !== undefined && /\/32 host LOCAL/.test(lines[i + 1] ?? '')) out.add(m[1]);
  });
  return [...out];
}

/** /proc/net/if_inet6: 32 hex digits per address, first column. */
export function ipv6FromIfInet6(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter((h) => /^[0-9a-f]{32}$/.test(h))
    .map((h) => (h.match(/.{4}/g) ?? []).map((g) => parseInt(g, 16).toString(16)).join(':'));
}
