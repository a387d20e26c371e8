// Every DNS query from the sandbox reaches cfh's filtering resolver and is recorded with
// its decision (AH-CONT-4), and `*.domain` entries are no open channel out:
//
// - The engine's embedded resolver (127.0.0.11 on cfh's per-run networks, behind Docker's
//   DOCKER_OUTPUT DNAT, on random ports) never answers: UDP to 127.0.0.11 goes to the
//   filtering resolver, TCP to the gateway's catch-all, which refuses it as loopback. It
//   would otherwise answer container names and PTRs naming the guard (and so the run id).
// - Every query has an `egress` event: other types than A/AAAA, malformed packets too.
// - A name under a `*.domain` entry is forwarded upstream only within bounds: at most
//   MAX_LABELS_BELOW_SUFFIX labels and MAX_CHARS_BELOW_SUFFIX characters below the suffix,
//   and a budget of distinct names per run (a burst, then a slow refill), whichever path
//   the name came by (a query, or a TLS server name the gateway would resolve).
//
// Local servers only: a DNS server on 127.0.0.1 (the gateway's upstream) that records
// every name it is asked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerBridgeAddress, startDnsServer, type DnsServer } from './local-servers.js';
import {
  engineRuntimes,
  marker,
  RUNSC_HOST_MISSING,
  useNetHarness,
  type NetRun,
} from './network-harness.js';

const EMBEDDED = '127.0.0.11';
/** More distinct names than the budget's burst (64), asked as fast as the sandbox can. */
const FLOOD = 90;

let hostIp: string;
let dns: DnsServer;
let runtimes: string[] = [];
const net = useNetHarness('net-dns', () => ({
  CFH_EGRESS_RESOLVER: `${dns.address}:${dns.port}`,
}));

beforeAll(async () => {
  hostIp = dockerBridgeAddress();
  dns = await startDnsServer({ 'api.cfh.test': hostIp, 'a.svc.cfh.test': hostIp });
  runtimes = await engineRuntimes();
});

afterAll(async () => {
  await dns.close();
});

const long = (n: number, c: string): string => c.repeat(n);
const DEEP = 'a.b.c.d.e.svc.cfh.test';
const LONG = `${long(60, 'x')}.${long(60, 'y')}.svc.cfh.test`;
const SNI_LONG = `${long(60, 's')}.${long(60, 't')}.svc.cfh.test`;

describe.each(['runc', 'runsc'] as const)('the filtering resolver under %s', (runtime) => {
  let run: NetRun;
  let skip = '';
  let queriesBefore = 0;

  beforeAll(async () => {
    if (runtime === 'runsc' && !runtimes.includes('runsc-host')) {
      skip = RUNSC_HOST_MISSING;
      return;
    }
    queriesBefore = dns.queries.length;
    run = await net.run({
      mode: 'allowlist',
      runtime,
      allow: ['*.svc.cfh.test', 'api.cfh.test'],
      script: [
        // The engine's embedded resolver, by its published port and by the ones it listens on.
        `py dns embedded-host ${EMBEDDED} 53 "$(hostname)" A`,
        `py ptr-self embedded-ptr ${EMBEDDED} 53 "$GW"`,
        `py dns embedded-tcp ${EMBEDDED} 53 "$(hostname)" A tcp`,
        `py dns embedded-api ${EMBEDDED} 53 api.cfh.test A`,
        'py loopback-probe embedded-ports "$(hostname)"',
        'echo "@@ hostname name=$(hostname)"',
        // Every query is recorded, whatever its type or shape.
        'py dns txt "$GW" 53 a.svc.cfh.test TXT',
        'py dns any "$GW" 53 api.cfh.test ANY',
        'py dnsraw garbage "$GW" 53 00010203',
        // Bounds on names under *.svc.cfh.test.
        `py dns deep "$GW" 53 ${DEEP} A`,
        `py dns long "$GW" 53 ${LONG} A`,
        `py tls sni-long "$GW" 443 ${SNI_LONG}`,
        `py flood flood "$GW" 53 f svc.cfh.test ${FLOOD}`,
        'echo "@@ done"',
      ].join('\n'),
    });
  });

  const guard = (ctx: { skip: (note?: string) => void }): void => {
    if (skip !== '') ctx.skip(skip);
  };
  const dnsEvents = (): Record<string, unknown>[] => run.egress.filter((e) => e.protocol === 'dns');
  const asked = (): string[] => dns.queries.slice(queriesBefore);

  it('runs the probe command to its end', (ctx) => {
    guard(ctx);
    expect(run.result.exitCode, run.result.stderr).toBe(0);
    expect(run.markers.has('done'), run.result.stdout).toBe(true);
  });

  it("the engine's embedded resolver never answers: the filtering resolver does, and records it", (ctx) => {
    guard(ctx);
    const host = marker(run, 'embedded-host');
    // Refused by the filtering resolver (NXDOMAIN), not the engine's answer for the hostname.
    expect(host).toMatchObject({ reply: 'ok', rcode: '3', count: '0' });
    const ptr = marker(run, 'embedded-ptr');
    expect(ptr).toMatchObject({ reply: 'ok', rcode: '3', names: '-' });
    expect(run.result.stdout).not.toContain(run.runId);
    // An allowed name asked at 127.0.0.11 is answered as the filtering resolver answers it.
    expect(marker(run, 'embedded-api')).toMatchObject({ rcode: '0', addrs: hostIp });
    const hostname = marker(run, 'hostname').name ?? '';
    expect(dnsEvents()).toContainEqual(
      expect.objectContaining({ name: hostname, allowed: false, reason: 'dns-refused' }),
    );
    expect(dnsEvents()).toContainEqual(
      expect.objectContaining({ name: 'api.cfh.test', allowed: true, address: hostIp }),
    );
    expect(
      dnsEvents().filter(
        (e) => typeof e.name === 'string' && e.name.endsWith('.in-addr.arpa') && !e.allowed,
      ),
    ).toHaveLength(1);
    // The ports the engine's resolver really listens on (visible under runc): no answer.
    const ports = marker(run, 'embedded-ports');
    if (runtime === 'runc') expect(Number(ports.ports)).toBeGreaterThanOrEqual(2);
    for (const [key, outcome] of Object.entries(ports)) {
      if (key === 'ports') continue;
      expect(outcome, key).not.toMatch(/^rcode0\/[1-9]/);
      if (key.startsWith('udp')) expect(outcome, key).toBe('rcode3/0');
    }
  });

  it('DNS over TCP to 127.0.0.11 reaches the catch-all, refused as loopback', (ctx) => {
    guard(ctx);
    expect(marker(run, 'embedded-tcp').reply).not.toBe('ok');
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'tcp',
        address: EMBEDDED,
        port: 53,
        allowed: false,
        reason: 'loopback-address',
      }),
    );
  });

  it('records queries of other types and malformed packets, none forwarded', (ctx) => {
    guard(ctx);
    expect(marker(run, 'txt')).toMatchObject({ reply: 'ok', rcode: '0', count: '0' });
    expect(dnsEvents()).toContainEqual(
      expect.objectContaining({
        name: 'a.svc.cfh.test',
        queryType: 'TXT',
        allowed: false,
        reason: 'query-type-refused',
      }),
    );
    expect(dnsEvents()).toContainEqual(
      expect.objectContaining({ name: 'api.cfh.test', queryType: 'ANY', allowed: false }),
    );
    expect(dnsEvents()).toContainEqual(
      expect.objectContaining({ allowed: false, reason: 'bad-request' }),
    );
  });

  it('refuses a name too deep or too long below its *.domain entry, never asking upstream', (ctx) => {
    guard(ctx);
    expect(marker(run, 'deep')).toMatchObject({ rcode: '3' });
    expect(marker(run, 'long')).toMatchObject({ rcode: '3' });
    expect(marker(run, 'sni-long').handshake).not.toBe('ok');
    expect(dnsEvents()).toContainEqual(
      expect.objectContaining({ name: DEEP, allowed: false, reason: 'name-too-deep' }),
    );
    expect(dnsEvents()).toContainEqual(
      expect.objectContaining({ name: LONG, allowed: false, reason: 'name-too-long' }),
    );
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'tls',
        name: SNI_LONG,
        allowed: false,
        reason: 'name-too-long',
      }),
    );
    for (const name of [DEEP, LONG, SNI_LONG]) expect(asked()).not.toContain(name);
  });

  it('bounds the distinct names forwarded, and records every query of the flood', (ctx) => {
    guard(ctx);
    const flood = dnsEvents().filter(
      (e) => typeof e.name === 'string' && /^f\d+\.svc\.cfh\.test$/.test(e.name),
    );
    expect(flood).toHaveLength(FLOOD);
    const limited = flood.filter((e) => e.reason === 'name-rate-exceeded');
    expect(limited.length).toBeGreaterThan(0);
    for (const e of limited) expect(e.allowed).toBe(false);
    const forwarded = new Set(asked().filter((q) => /^f\d+\.svc\.cfh\.test$/.test(q)));
    expect(forwarded.size).toBe(FLOOD - limited.length);
    for (const e of limited) expect(forwarded.has(String(e.name))).toBe(false);
    // The udp probe saw the refusals as NXDOMAIN; none went unanswered.
    expect(Number(marker(run, 'flood').rcode3 ?? 0)).toBeGreaterThanOrEqual(limited.length);
  });
});
