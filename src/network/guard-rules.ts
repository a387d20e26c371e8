// The netfilter rules the guard installs in a sandbox's network namespace before the
// workload joins it (issue 3). Every TCP connection and DNS query leaves only towards the
// egress gateway on the host side of the sandbox's own internal network; everything else,
// UDP (QUIC included) and IPv6 too, is dropped. The workload never holds NET_ADMIN, so it
// cannot change them. Pure: endpoints in, a shell script out (the guard image has iptables).
import type { GatewayEndpoints } from './egress-gateway.js';

export function guardRules(endpoints: GatewayEndpoints): string {
  const gw = endpoints.address;
  const to = (port: number): string => `-j DNAT --to-destination ${gw}:${port}`;
  const nat = [
    '-N CFH_EGRESS',
    '-I OUTPUT 1 -j CFH_EGRESS',
    // Loopback stays loopback (the engine's embedded resolver answers only for this network).
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
  ];
  const listenPorts = [
    endpoints.catchAll,
    endpoints.proxy,
    ...endpoints.byPort.values(),
    ...endpoints.pinned.map((p) => p.listen),
  ];
  const filter = [
    '-A OUTPUT -o lo -j ACCEPT',
    ...listenPorts.map((port) => `-A OUTPUT -d ${gw} -p tcp --dport ${port} -j ACCEPT`),
    `-A OUTPUT -d ${gw} -p udp --dport ${endpoints.dns} -j ACCEPT`,
    '-P OUTPUT DROP',
  ];
  return [
    'set -eu',
    ...nat.map((r) => `iptables -w -t nat ${r}`),
    ...filter.map((r) => `iptables -w ${r}`),
    'ip6tables -w -A OUTPUT -o lo -j ACCEPT',
    'ip6tables -w -P OUTPUT DROP',
    'echo cfh-guard-ready',
  ].join('\n');
}
