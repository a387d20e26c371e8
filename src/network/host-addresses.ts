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
