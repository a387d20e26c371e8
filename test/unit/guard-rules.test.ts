// The guard's netfilter rules and command: everything leaves only towards the gateway, the
// engine's embedded resolver included; readiness is said only after both tables commit.
import { describe, expect, it } from 'vitest';
import { GUARD_READY, guardCommand, guardRules } from '../../src/network/guard-rules.js';

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

/** The rules of one table of iptables-restore input. */
function tableOf(input: string, name: string): string[] {
  const lines = input.split('\n');
  const start = lines.indexOf(`*${name}`);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = lines.indexOf('COMMIT', start);
  expect(end).toBeGreaterThan(start);
  return lines.slice(start + 1, end);
}

describe('guardRules', () => {
  const rules = guardRules(endpoints);
  const nat = tableOf(rules.ipv4, 'nat');
  const filter = tableOf(rules.ipv4, 'filter');

  it('sends DNS to the filtering resolver and TCP to the gateway, pinned before ports before catch-all', () => {
    expect(nat.filter((l) => l.startsWith('-A CFH_EGRESS'))).toEqual([
      '-A CFH_EGRESS -d 127.0.0.11 -p udp -j DNAT --to-destination 172.20.0.1:40053',
      '-A CFH_EGRESS -d 127.0.0.11 -p tcp -j DNAT --to-destination 172.20.0.1:40101',
      '-A CFH_EGRESS -d 127.0.0.0/8 -j RETURN',
      '-A CFH_EGRESS -p udp --dport 53 -j DNAT --to-destination 172.20.0.1:40053',
      '-A CFH_EGRESS -p tcp -d 198.51.100.7 --dport 8080 -j DNAT --to-destination 172.20.0.1:40200',
      '-A CFH_EGRESS -p tcp --dport 80 -j DNAT --to-destination 172.20.0.1:40080',
      '-A CFH_EGRESS -p tcp --dport 443 -j DNAT --to-destination 172.20.0.1:40443',
      '-A CFH_EGRESS -p tcp -j DNAT --to-destination 172.20.0.1:40101',
    ]);
  });

  it("takes the engine's embedded resolver out of loopback: redirected, masqueraded, else dropped", () => {
    // Before Docker's own DOCKER_OUTPUT jump: CFH_EGRESS is inserted first in OUTPUT.
    expect(nat[0]).toBe(':CFH_EGRESS - [0:0]');
    expect(nat).toContain('-I OUTPUT 1 -j CFH_EGRESS');
    expect(nat).toContain('-I POSTROUTING 1 -s 127.0.0.0/8 ! -o lo -j MASQUERADE');
    const appended = filter.filter((l) => l.startsWith('-A OUTPUT'));
    expect(appended[0]).toBe('-A OUTPUT -d 127.0.0.11 -j DROP');
    expect(appended[1]).toBe('-A OUTPUT -o lo -j ACCEPT');
  });

  it('drops everything else, IPv6 included, accepting only loopback and the gateway listeners', () => {
    // The policy is committed in the same transaction as the rules it guards.
    expect(filter[0]).toBe(':OUTPUT DROP [0:0]');
    expect(tableOf(rules.ipv6, 'filter')).toEqual([
      ':OUTPUT DROP [0:0]',
      '-A OUTPUT -o lo -j ACCEPT',
    ]);
    const accepted = filter.filter((l) => l.endsWith('-j ACCEPT'));
    for (const rule of accepted)
      expect(rule).toMatch(/-o lo -j ACCEPT$|-d 172\.20\.0\.1 -p (tcp|udp) --dport \d+ -j ACCEPT$/);
    expect(filter.filter((l) => l.endsWith('-j DROP'))).toEqual([
      '-A OUTPUT -d 127.0.0.11 -j DROP',
    ]);
    const ports = accepted
      .map((l) => /--dport (\d+)/.exec(l)?.[1])
      .filter(Boolean)
      .map(Number)
      .sort();
    expect(ports).toEqual([40053, 40080, 40100, 40101, 40200, 40443]);
  });
});

describe('guardCommand', () => {
  const argv = guardCommand(endpoints, 'print(1)');
  const script = argv[2] ?? '';
  const lines = script.split('\n');

  it('passes the rules and the reader as arguments, not through the script text', () => {
    expect(argv.slice(0, 2)).toEqual(['sh', '-c']);
    const rules = guardRules(endpoints);
    expect(argv.slice(3)).toEqual(['cfh-guard', rules.ipv4, rules.ipv6, 'print(1)']);
  });

  it('stops at the first failure and says ready only after both tables are committed', () => {
    expect(lines[0]).toBe('set -eu');
    const ready = lines.indexOf(`echo ${GUARD_READY}`);
    const v4 = lines.findIndex((l) => l.includes('| iptables-restore -w --noflush'));
    const v6 = lines.findIndex((l) => l.includes('| ip6tables-restore -w --noflush'));
    expect(v4).toBeGreaterThan(0);
    expect(v6).toBeGreaterThan(v4);
    expect(ready).toBeGreaterThan(v6);
    expect(lines.at(-1)).toBe('exec python3 -u -c "$3"');
  });
});
