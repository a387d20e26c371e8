// The netfilter rules the guard installs in a sandbox's network namespace before the
// workload joins it. Every TCP connection and DNS query leaves only towards the
// egress gateway on the host side of the sandbox's own internal network; everything else,
// UDP (QUIC included) and IPv6 too, is dropped. The workload never holds NET_ADMIN, so it
// cannot change them. Pure: endpoints in, the guard's command out (its image has
// iptables-restore and python3).
//
// The engine's embedded resolver. On a user-defined network Docker serves DNS at
// 127.0.0.11 in the namespace (its DOCKER_OUTPUT chain DNATs 127.0.0.11:53 to random ports
// dockerd listens on there). It answers container names and PTRs naming the guard, so the
// run id, and cfh's filter never sees it. Loopback is otherwise the sandbox's own, so
// these rules take 127.0.0.11 alone, first, whatever the port: UDP goes to the filtering
// resolver, which answers and records it; TCP to the catch-all, which records a refused
// loopback destination (the conntrack reader still sees 127.0.0.11 as the original
// destination). Measured under runc and runsc-host (passthrough): a DNAT from a loopback
// source needs route_localnet in the namespace (GUARD_SYSCTLS, set at the guard's creation)
// and a masquerade to the guard's address on the way out. Dropping instead (or flushing
// Docker's chains) would also silence it, but leave no record of the attempt. A last DROP
// for 127.0.0.11 catches any protocol the DNATs do not.
import type { GatewayEndpoints } from './egress-gateway.js';

export const ENGINE_RESOLVER = '127.0.0.11';

/** The rules as iptables-restore input (`--noflush`: Docker's own chains stay): IPv4, IPv6. */
export function guardRules(endpoints: GatewayEndpoints): {
  readonly ipv4: string;
  readonly ipv6: string;
} {
  const gw = endpoints.address;
  const to = (port: number): string => `-j DNAT --to-destination ${gw}:${port}`;
  const nat = [
    ':CFH_EGRESS - [0:0]',
    '-I OUTPUT 1 -j CFH_EGRESS',
    `-A CFH_EGRESS -d ${ENGINE_RESOLVER} -p udp ${to(endpoints.dns)}`,
    `-A CFH_EGRESS -d ${ENGINE_RESOLVER} -p tcp ${to(endpoints.catchAll)}`,
    // The rest of loopback stays the sandbox's own.
    '-A CFH_EGRESS -d 127.0.0.0/8 -j RETURN',
    // Every DNS query, to whatever resolver, reaches the filtering resolver.
    `-A CFH_EGRESS -p udp --dport 53 ${to(endpoints.dns)}`,
    ...endpoints.pinned.map(
      (p) => `-A CFH_EGRESS -p tcp -d ${p.address} --dport ${p.port} ${to(p.listen)}`,
    ),
    ...[...endpoints.byPort].map(
      ([port, listen]) => `-A CFH_EGRESS -p tcp --dport ${port} ${to(listen)}`,
    ),
    `-A CFH_EGRESS -p tcp ${to(endpoints.catchAll)}`,
    // A loopback source redirected off loopback leaves as the guard's own address.
    '-I POSTROUTING 1 -s 127.0.0.0/8 ! -o lo -j MASQUERADE',
  ];
  const listenPorts = [
    endpoints.catchAll,
    endpoints.proxy,
    ...endpoints.byPort.values(),
    ...endpoints.pinned.map((p) => p.listen),
  ];
  const filter = [
    // The policy and the rules are committed together (one transaction per table).
    ':OUTPUT DROP [0:0]',
    `-A OUTPUT -d ${ENGINE_RESOLVER} -j DROP`,
    '-A OUTPUT -o lo -j ACCEPT',
    ...listenPorts.map((port) => `-A OUTPUT -d ${gw} -p tcp --dport ${port} -j ACCEPT`),
    `-A OUTPUT -d ${gw} -p udp --dport ${endpoints.dns} -j ACCEPT`,
  ];
  const table = (name: string, rules: readonly string[]): string =>
    [`*${name}`, ...rules, 'COMMIT'].join('\n');
  return {
    ipv4: `${table('nat', nat)}\n${table('filter', filter)}\n`,
    ipv6: `${table('filter', [':OUTPUT DROP [0:0]', '-A OUTPUT -o lo -j ACCEPT'])}\n`,
  };
}

export const GUARD_READY = 'cfh-guard-ready';

/**
 * The guard's own process: installs the rules, says GUARD_READY only once both tables are
 * committed (a failure exits before it, and the guard with it: nothing can join a stopped
 * namespace), then serves original-destination lookups on its stdin (original-destination.ts).
 * One container start, no exec: the rules are in force by the time the line is read.
 */
export function guardCommand(endpoints: GatewayEndpoints, reader: string): string[] {
  const rules = guardRules(endpoints);
  const script = [
    'set -eu',
    `printf '%s' "$1" | iptables-restore -w --noflush 2>&1`,
    `printf '%s' "$2" | ip6tables-restore -w --noflush 2>&1`,
    `echo ${GUARD_READY}`,
    'exec python3 -u -c "$3"',
  ].join('\n');
  return ['sh', '-c', script, 'cfh-guard', rules.ipv4, rules.ipv6, reader];
}
