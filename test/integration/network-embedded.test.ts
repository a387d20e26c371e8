// The class: an address whose bytes reach an IPv4 destination but is judged as IPv6
// (AH-CONT-4). An allowed name whose only answers are AAAA records, each an embedded-IPv4
// form (SIIT, IPv4-compatible, NAT64, 6to4, Teredo server and client, ISATAP) of a denied
// address with a listener this file started, or of the metadata address, is refused with
// the embedded address's reason in the evidence; a local-use NAT64 answer (whose embedded
// address cannot be located) is refused as unjudgeable-address. The listener gets nothing.
//
// Local servers only: the far namespace this file creates (198.51.100.0/24 on a veth) and a
// DNS server on loopback. The forms' IPv6 spellings route off this machine, so the run is
// made only after the policy has refused every one of them in-process: a regression fails
// the check below and dials nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDestinations } from '../../src/network/destination.js';
import { EgressPolicy } from '../../src/network/egress-policy.js';
import {
  startDnsServer,
  startFarNamespace,
  type DnsServer,
  type FarNamespace,
} from './local-servers.js';
import {
  engineRuntimes,
  failed,
  farRunSkip,
  marker,
  useNetHarness,
  type NetRun,
} from './network-harness.js';

const METADATA = '169.254.169.254';

/** Each embedding form of `v4`, by a label usable as a DNS label. */
function forms(v4: string): [string, string][] {
  const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
  const hi = ((a << 8) | b).toString(16);
  const lo = ((c << 8) | d).toString(16);
  const x = (n: number): string => (0xffff ^ n).toString(16);
  return [
    ['siit', `::ffff:0:${v4}`],
    ['compat', `::${v4}`],
    ['nat64', `64:ff9b::${v4}`],
    ['sixtofour', `2002:${hi}:${lo}::1`],
    ['teredo-server', `2001:0:${hi}:${lo}:8000:f227:bec0:1111`],
    ['teredo-client', `2001:0:4136:e378:8000:f227:${x((a << 8) | b)}:${x((c << 8) | d)}`],
    ['isatap', `2001:db8:1:2:0:5efe:${hi}:${lo}`],
  ];
}

let far: FarNamespace | undefined;
let farSkip = '';
let dns: DnsServer;
let runtimes: string[] = [];
const net = useNetHarness('net-embed', () => ({
  CFH_EGRESS_RESOLVER: `${dns.address}:${dns.port}`,
}));

describe('IPv4 hidden in IPv6 spellings of a DNS answer (runc)', () => {
  let run: NetRun;
  let skip = '';
  let farBefore = 0;
  const names = new Map<string, { address: string; reason: string }>();

  beforeAll(async () => {
    const made = await startFarNamespace();
    if ('skip' in made) farSkip = made.skip;
    else far = made;
    runtimes = await engineRuntimes();
    skip = farRunSkip('runc', farSkip, runtimes);
    const near = far?.addresses[0] ?? '198.51.100.2';
    for (const [label, address] of forms(near))
      names.set(`${label}-denied.ok.test`, { address, reason: 'denylisted' });
    for (const [label, address] of forms(METADATA))
      names.set(`${label}-metadata.ok.test`, { address, reason: 'metadata-address' });
    names.set('local-nat64.ok.test', {
      address: `64:ff9b:1::${near}`,
      reason: 'unjudgeable-address',
    });
    dns = await startDnsServer(
      Object.fromEntries([...names].map(([name, { address }]) => [name, [address]])),
    );
    if (far === undefined || skip !== '') return;
    const port = far.port;
    const allow = [`*.ok.test:${port}`];
    const deny = [near];
    // The safety check: every answer is refused in-process before any sandbox asks for it.
    const policy = new EgressPolicy({
      mode: 'allowlist',
      allow: parseDestinations('allow', allow),
      deny: parseDestinations('deny', deny),
      hostAddresses: [],
    });
    for (const [name, { address }] of names) {
      const d = policy.decideConnection({ name, address, port, resolvedForName: true });
      if (d.allowed) throw new Error(`${name} -> ${address} would be dialled: not running`);
    }
    farBefore = far.connections.length;
    run = await net.run({
      mode: 'allowlist',
      runtime: 'runc',
      allow,
      deny,
      script: [
        ...[...names.keys()].map(
          (name) => `probe ${name} -H 'Host: ${name}:${port}' http://$GW:${port}/`,
        ),
        'echo "@@ done"',
      ].join('\n'),
    });
  }, 180_000);

  afterAll(async () => {
    await dns.close();
    await far?.close();
  });

  it('each form is refused with the embedded address reason, and the listener gets nothing', (ctx) => {
    if (skip !== '') ctx.skip(skip);
    expect(run.result.exitCode, run.result.stderr).toBe(0);
    marker(run, 'done');
    for (const [name, { reason }] of names) {
      expect(failed(marker(run, name)), name).toBe(true);
      const events = run.egress.filter((e) => e.name === name && e.protocol === 'http');
      expect(events.length, name).toBeGreaterThan(0);
      for (const e of events) expect(e, name).toMatchObject({ allowed: false, reason });
    }
    expect(far?.connections.slice(farBefore)).toEqual([]);
  });
});
