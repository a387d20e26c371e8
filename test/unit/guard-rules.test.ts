// The guard's netfilter script: everything leaves only towards the gateway, the
// engine's embedded resolver included.
import { describe, expect, it } from 'vitest';
import { guardRules } from '../../src/network/guard-rules.js';

const endpoints = {
  address: '172.20.0.1',
  dns: 40053,
  proxy: 40100,
  catchAll: 40101,
  byPort: new Map([
    [80, 40080],
    [443, 40443],
  ]),
  pinned: [{ address: '198.51.100.7', port: 8080, listen: 40200 }],
};

describe('guardRules', () => {
  const script = guardRules(endpoints);
  const lines = script.split('\n');

  it('fails on the first error and reports readiness last', () => {
    expect(lines[0]).toBe('set -eu');
    expect(lines.at(-1)).toBe('echo cfh-guard-ready');
  });

  it('sends DNS to the filtering resolver and TCP to the gateway, pinned before ports before catch-all', () => {
    const nat = lines.filter((l) => l.includes('-t nat -A CFH_EGRESS'));
    expect(nat).toEqual([
      'iptables -w -t nat -A CFH_EGRESS -d 127.0.0.11 -p udp -j DNAT --to-destination 172.20.0.1:40053',
      'iptables -w -t nat -A CFH_EGRESS -d 127.0.0.11 -p tcp -j DNAT --to-destination 172.20.0.1:40101',
      'iptables -w -t nat -A CFH_EGRESS -d 127.0.0.0/8 -j RETURN',
      'iptables -w -t nat -A CFH_EGRESS -p udp --dport 53 -j DNAT --to-destination 172.20.0.1:40053',
      'iptables -w -t nat -A CFH_EGRESS -p tcp -d 198.51.100.7 --dport 8080 -j DNAT --to-destination 172.20.0.1:40200',
      'iptables -w -t nat -A CFH_EGRESS -p tcp --dport 80 -j DNAT --to-destination 172.20.0.1:40080',
      'iptables -w -t nat -A CFH_EGRESS -p tcp --dport 443 -j DNAT --to-destination 172.20.0.1:40443',
      'iptables -w -t nat -A CFH_EGRESS -p tcp -j DNAT --to-destination 172.20.0.1:40101',
    ]);
  });

  it("takes the engine's embedded resolver out of loopback: redirected, masqueraded, else dropped", () => {
    // Before Docker's own DOCKER_OUTPUT jump: CFH_EGRESS is inserted first in OUTPUT.
    expect(lines).toContain('iptables -w -t nat -I OUTPUT 1 -j CFH_EGRESS');
    expect(lines).toContain(
      'iptables -w -t nat -I POSTROUTING 1 -s 127.0.0.0/8 ! -o lo -j MASQUERADE',
    );
    const filter = lines.filter((l) => /^iptables -w -A OUTPUT/.test(l));
    expect(filter[0]).toBe('iptables -w -A OUTPUT -d 127.0.0.11 -j DROP');
    expect(filter[1]).toBe('iptables -w -A OUTPUT -o lo -j ACCEPT');
  });

  it('drops everything else, IPv6 included, accepting only loopback and the gateway listeners', () => {
    const filter = lines.filter((l) => /^ip6?tables -w (-A|-P) OUTPUT/.test(l));
    expect(filter).toContain('iptables -w -P OUTPUT DROP');
    expect(filter).toContain('ip6tables -w -P OUTPUT DROP');
    const accepted = filter.filter((l) => l.endsWith('-j ACCEPT'));
    for (const rule of accepted)
      expect(rule).toMatch(/-o lo -j ACCEPT$|-d 172\.20\.0\.1 -p (tcp|udp) --dport \d+ -j ACCEPT$/);
    expect(filter.filter((l) => l.endsWith('-j DROP'))).toEqual([
      'iptables -w -A OUTPUT -d 127.0.0.11 -j DROP',
    ]);
    const ports = accepted
      .map((l) => /--dport (\d+)/.exec(l)?.[1])
      .filter(Boolean)
      .map(Number)
      .sort();
    expect(ports).toEqual([40053, 40080, 40100, 40101, 40200, 40443]);
  });
});
