// A name entry allows a name, not whatever address a client pairs with it (AH-CONT-4).
// With `--allow bind.cfh.test` (no port) a connection on a port nobody
// intercepts reaches the catch-all, which learns the address the client targeted from
// conntrack and the name from the Host header or TLS server name. It may go on only to an
// address the gateway itself resolved for that name during the run (its filtering
// resolver's answers to the sandbox, or its own lookup), never to one the client chose.
//
// Local servers only: the "far" addresses are held by a network namespace this file
// creates (a veth pair, 198.51.100.0/24 TEST-NET-2, routed on-link over the veth), so they
// are on this machine but neither private nor the host's; the DNS server is on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startDnsServer,
  startFarNamespace,
  type DnsServer,
  type FarNamespace,
} from './local-servers.js';
import {
  engineRuntimes,
  failed,
  marker,
  farRunSkip,
  useNetHarness,
  type NetRun,
} from './network-harness.js';

let far: FarNamespace | undefined;
let farSkip = '';
let dns: DnsServer;
let runtimes: string[] = [];
const net = useNetHarness('net-names', () => ({
  CFH_EGRESS_RESOLVER: `${dns.address}:${dns.port}`,
}));

beforeAll(async () => {
  const made = await startFarNamespace();
  if ('skip' in made) {
    farSkip = made.skip;
    console.log(`far namespace skipped: ${farSkip}`);
  } else far = made;
  const [resolved = '', unresolved = ''] = far?.addresses ?? [];
  // bind.cfh.test resolves to the first far address; twin.cfh.test, also allowed, to the
  // second: an address resolved for one allowed name does not serve another.
  // blocked.cfh.test (denied under `open`) and shared.cfh.test share the first address.
  dns = await startDnsServer({
    'bind.cfh.test': resolved,
    'twin.cfh.test': unresolved,
    'blocked.cfh.test': resolved,
    'shared.cfh.test': resolved,
  });
  runtimes = await engineRuntimes();
});

afterAll(async () => {
  await dns.close();
  await far?.close();
});

describe.each(['runc', 'runsc'] as const)('a name entry under %s', (runtime) => {
  let run: NetRun;
  let skip = '';
  let resolved = '';
  let unresolved = '';
  let port = 0;
  let farBefore = 0;

  beforeAll(async () => {
    skip = farRunSkip(runtime, farSkip, runtimes);
    if (far === undefined || skip !== '') return;
    [resolved, unresolved] = far.addresses;
    port = far.port;
    farBefore = far.connections.length;
    const url = (address: string): string => `http://${address}:${port}/`;
    run = await net.run({
      mode: 'allowlist',
      runtime,
      allow: ['bind.cfh.test', 'twin.cfh.test'],
      script: [
        // The sandbox asks the filtering resolver: it answers the first far address.
        'getent hosts bind.cfh.test; echo "@@ getent-bind rc=$?"',
        `probe resolved -H 'Host: bind.cfh.test' ${url(resolved)}`,
        `probe unresolved -H 'Host: bind.cfh.test' ${url(unresolved)}`,
        `py tls sni-unresolved ${unresolved} ${port} bind.cfh.test`,
        // Never asked by the sandbox: the gateway resolves twin.cfh.test itself.
        `probe gateway-resolved -H 'Host: twin.cfh.test' ${url(unresolved)}`,
        // The second address now stands for twin.cfh.test, not for bind.cfh.test.
        `probe crossname -H 'Host: bind.cfh.test:${port}' ${url(unresolved)}`,
        'echo "@@ done"',
      ].join('\n'),
    });
  });

  const guard = (ctx: { skip: (note?: string) => void }): void => {
    if (skip !== '') ctx.skip(skip);
  };
  const farHeads = (address: string): string[] =>
    (far?.connections ?? [])
      .slice(farBefore)
      .filter((c) => c.local === address)
      .map((c) => c.head);

  it('reaches the address the gateway resolved for the name (control)', (ctx) => {
    guard(ctx);
    expect(run.result.exitCode, run.result.stderr).toBe(0);
    expect(marker(run, 'getent-bind').rc).toBe('0');
    expect(marker(run, 'resolved')).toMatchObject({ code: '200' });
    expect(marker(run, 'resolved').body).toContain(`hello_from_far_${resolved}`);
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'http',
        name: 'bind.cfh.test',
        address: resolved,
        port,
        allowed: true,
        reason: 'allowlisted',
        rule: 'bind.cfh.test',
      }),
    );
  });

  it('refuses an address the client paired with an allowed Host header, with the reason', (ctx) => {
    guard(ctx);
    expect(failed(marker(run, 'unresolved'))).toBe(true);
    expect(failed(marker(run, 'crossname'))).toBe(true);
    const refused = run.egress.filter(
      (e) =>
        e.protocol === 'http' &&
        e.name === 'bind.cfh.test' &&
        e.address === unresolved &&
        e.port === port,
    );
    expect(refused).toHaveLength(2);
    for (const e of refused)
      expect(e).toMatchObject({
        allowed: false,
        reason: 'address-not-resolved-for-name',
        rule: 'bind.cfh.test',
      });
    expect(farHeads(unresolved).filter((h) => /host: bind\.cfh\.test/i.test(h))).toEqual([]);
  });

  it('refuses an address the client paired with an allowed TLS server name', (ctx) => {
    guard(ctx);
    expect(marker(run, 'sni-unresolved').handshake).not.toBe('ok');
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'tls',
        name: 'bind.cfh.test',
        address: unresolved,
        port,
        allowed: false,
        reason: 'address-not-resolved-for-name',
      }),
    );
    expect(farHeads(unresolved).filter((h) => h.includes('bind.cfh.test'))).toEqual([]);
  });

  it("accepts an address found by the gateway's own lookup of the name", (ctx) => {
    guard(ctx);
    expect(marker(run, 'gateway-resolved')).toMatchObject({ code: '200' });
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'http',
        name: 'twin.cfh.test',
        address: unresolved,
        allowed: true,
        rule: 'twin.cfh.test',
      }),
    );
    expect(farHeads(unresolved).filter((h) => /host: twin\.cfh\.test/i.test(h))).toHaveLength(1);
  });
});

// Under `open` any name goes and nothing ties a name to an address, so a name deny that held
// for names only would stop just the clients that announce themselves. It holds for the
// addresses the gateway resolves for the denied name as well: dialled bare, or behind a
// made-up Host or server name, they are refused with the deny entry as the rule. A name the
// gateway did resolve to the same address (a shared front) still passes.
describe.each(['runc', 'runsc'] as const)('a name deny under open, %s', (runtime) => {
  let run: NetRun;
  let skip = '';
  let blocked = '';
  let elsewhere = '';
  let port = 0;
  let farBefore = 0;

  beforeAll(async () => {
    skip = farRunSkip(runtime, farSkip, runtimes);
    if (far === undefined || skip !== '') return;
    [blocked, elsewhere] = far.addresses;
    port = far.port;
    farBefore = far.connections.length;
    const url = (address: string): string => `http://${address}:${port}/`;
    run = await net.run({
      mode: 'open',
      runtime,
      deny: ['blocked.cfh.test'],
      script: [
        `probe bare ${url(blocked)}`,
        `probe madeup -H 'Host: madeup.cfh.test' ${url(blocked)}`,
        `py tls sni-madeup ${blocked} ${port} madeup.cfh.test`,
        `probe byname http://blocked.cfh.test:${port}/`,
        'getent hosts shared.cfh.test; echo "@@ getent-shared rc=$?"',
        `probe shared http://shared.cfh.test:${port}/`,
        `probe elsewhere ${url(elsewhere)}`,
        'echo "@@ done"',
      ].join('\n'),
    });
  });

  const guard = (ctx: { skip: (note?: string) => void }): void => {
    if (skip !== '') ctx.skip(skip);
  };
  const heads = (address: string): string[] =>
    (far?.connections ?? [])
      .slice(farBefore)
      .filter((c) => c.local === address)
      .map((c) => c.head);

  it("refuses the denied name's address, bare or behind another name, with the deny as rule", (ctx) => {
    guard(ctx);
    expect(run.result.exitCode, run.result.stderr).toBe(0);
    for (const label of ['bare', 'madeup', 'byname'])
      expect(failed(marker(run, label)), label).toBe(true);
    expect(marker(run, 'sni-madeup').handshake).not.toBe('ok');
    const refused = run.egress.filter((e) => e.address === blocked && !e.allowed);
    expect(refused.map((e) => e.protocol).sort()).toEqual(['http', 'http', 'tls']);
    for (const e of refused)
      expect(e).toMatchObject({ port, reason: 'denylisted', rule: 'blocked.cfh.test' });
    // The name itself is refused where it is asked, at the resolver.
    expect(run.egress).toContainEqual(
      expect.objectContaining({ name: 'blocked.cfh.test', allowed: false, reason: 'denylisted' }),
    );
    // Only the shared name's request reached the blocked address.
    const reached = heads(blocked);
    expect(reached).toHaveLength(1);
    expect(reached[0]).toMatch(/host: shared\.cfh\.test/i);
  });

  it('lets a name the gateway resolved to the same address through, and other addresses', (ctx) => {
    guard(ctx);
    expect(marker(run, 'getent-shared').rc).toBe('0');
    expect(marker(run, 'shared')).toMatchObject({ code: '200' });
    expect(marker(run, 'elsewhere')).toMatchObject({ code: '200' });
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        name: 'shared.cfh.test',
        address: blocked,
        port,
        allowed: true,
        reason: 'open',
      }),
    );
    expect(run.egress).toContainEqual(
      expect.objectContaining({ address: elsewhere, port, allowed: true, reason: 'open' }),
    );
  });
});
