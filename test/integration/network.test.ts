// Network postures against the real engine: `disabled`, `allowlist` and `open`,
// enforced below the application, with every egress decision in the run's evidence.
//
// Local servers only: every destination is a server this file starts on this machine (an
// HTTP server, raw TCP listeners and a UDP recorder on the host's docker0 address or on
// 0.0.0.0, a DNS server on 127.0.0.1 that the egress gateway asks through
// CFH_EGRESS_RESOLVER, and a listener on 169.254.169.254 held by a dummy interface the
// test creates and removes). No other address is ever contacted or named. Names live
// under `.test`. Several checks share one sandbox command that prints `@@ label k=v` lines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { lstat, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  cfh,
  containersOfRun,
  docker,
  readEvents,
  readJson,
  runIdOf,
  startCfh,
  waitForEvent,
} from './helpers.js';
import {
  dockerBridgeAddress,
  startDnsServer,
  startHttpTarget,
  startTcpTarget,
  startUdpRecorder,
  type Closable,
  type DnsServer,
  type HttpTarget,
  type TcpTarget,
  type UdpRecorder,
} from './local-servers.js';
import {
  egressConfigDirs,
  engineRuntimes,
  failed,
  hostsSeen,
  marker,
  networksOfRun,
  RAW_PAYLOAD,
  useNetHarness,
  type NetRun,
} from './network-harness.js';

const META_IF = 'cfhtestmeta0';
const META_ADDR = '169.254.169.254';

/** The host's docker0 address: a host address, refused unless a run lists it. */
let hostIp: string;
let web: HttpTarget;
let other: HttpTarget;
let rawDenied: TcpTarget;
let rawAllowed: TcpTarget;
let tlsUpstream: TcpTarget;
let dns: DnsServer;
let rogue53: UdpRecorder | undefined;
let rogue53Skip = '';
let rogueHigh: UdpRecorder;
const servers: Closable[] = [];
let runtimes: string[] = [];

const cfhEnv = (): Record<string, string> => ({
  CFH_EGRESS_RESOLVER: `${dns.address}:${dns.port}`,
});
const net = useNetHarness('net', cfhEnv);

beforeAll(async () => {
  hostIp = dockerBridgeAddress();
  web = await startHttpTarget('web');
  other = await startHttpTarget('other');
  rawDenied = await startTcpTarget();
  rawAllowed = await startTcpTarget();
  tlsUpstream = await startTcpTarget();
  dns = await startDnsServer({
    'api.cfh.test': hostIp,
    'a.svc.cfh.test': hostIp,
    'svc.cfh.test': hostIp,
    'denied.cfh.test': hostIp,
  });
  rogueHigh = await startUdpRecorder('0.0.0.0');
  servers.push(web, other, rawDenied, rawAllowed, tlsUpstream, dns, rogueHigh);
  try {
    // The guard redirects UDP to port 53 only: a rogue resolver must listen there.
    rogue53 = await startUdpRecorder(hostIp, 53);
    servers.push(rogue53);
  } catch (error) {
    rogue53Skip = `cannot bind ${hostIp}:53 (${String(error)})`;
    console.log(`rogue resolver on port 53 skipped: ${rogue53Skip}`);
  }
  runtimes = await engineRuntimes();
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** The allow and deny cases, in one sandbox command per runtime. */
describe.each(['runc', 'runsc'] as const)('allowlist under %s', (runtime) => {
  let run: NetRun;
  let skip = '';
  let webBefore = 0;
  let otherBefore = 0;
  let tlsBefore = 0;

  beforeAll(async () => {
    if (runtime === 'runsc' && !runtimes.includes('runsc-host')) {
      skip = 'the engine has no runsc-host runtime (runsc with --network=host)';
      console.log(`allowlist under runsc skipped: ${skip}`);
      return;
    }
    webBefore = web.requests.length;
    otherBefore = other.connections;
    tlsBefore = tlsUpstream.connections.length;
    const proxy = `http://${hostIp}:${web.port}`;
    run = await net.run({
      mode: 'allowlist',
      runtime,
      allow: [
        `${hostIp}:${web.port}`,
        `api.cfh.test:${web.port}`,
        '*.svc.cfh.test',
        `${hostIp}:${rawAllowed.port}`,
        `${hostIp}:${tlsUpstream.port}`,
      ],
      deny: ['denied.cfh.test'],
      script: [
        `probe byip http://${hostIp}:${web.port}/`,
        // Names through a single-threaded client (python) and through curl, whose resolver
        // runs in a thread of its own.
        `py http byname api.cfh.test ${web.port}`,
        `py http wildcard a.svc.cfh.test ${web.port}`,
        `probe byname-curl http://api.cfh.test:${web.port}/`,
        `probe otherport http://${hostIp}:${other.port}/`,
        `probe unlisted80 --resolve nolist.cfh.test:80:${hostIp} http://nolist.cfh.test/`,
        `(export HTTP_PROXY=${proxy} http_proxy=${proxy} HTTPS_PROXY=${proxy} ALL_PROXY=${proxy};`,
        ` probe noproxy --noproxy '*' http://${hostIp}:${other.port}/)`,
        `py tcp rawdenied ${hostIp} ${rawDenied.port}`,
        `py tcp rawallowed ${hostIp} ${rawAllowed.port}`,
        'getent hosts other.cfh.test; echo "@@ getent-other rc=$?"',
        'getent hosts svc.cfh.test; echo "@@ getent-apex rc=$?"',
        `py udp dns53-allowed ${hostIp} 53 api.cfh.test`,
        `py udp dns53-other ${hostIp} 53 other.cfh.test`,
        `py udp udp-high ${hostIp} ${rogueHigh.port} api.cfh.test`,
        `probe apex --resolve svc.cfh.test:${web.port}:${hostIp} http://svc.cfh.test:${web.port}/`,
        `probe hostdenied -H 'Host: denied.cfh.test' http://${hostIp}:${web.port}/`,
        `probe hostunlisted -H 'Host: other.cfh.test' http://${hostIp}:${web.port}/`,
        `py tls sni-allowed ${hostIp} ${tlsUpstream.port} a.svc.cfh.test`,
        `py tls sni-denied ${hostIp} ${tlsUpstream.port} denied.cfh.test`,
        `py tls sni-unlisted ${hostIp} ${tlsUpstream.port} other.cfh.test`,
        `probe gw-other http://$GW:${other.port}/`,
        `probe gw-web http://$GW:${web.port}/`,
        'echo "@@ done"',
      ].join('\n'),
    });
  });

  const guard = (ctx: { skip: (note?: string) => void }): void => {
    if (skip !== '') ctx.skip(skip);
  };

  it('runs the probe command to its end', (ctx) => {
    guard(ctx);
    expect(run.result.exitCode, run.result.stderr).toBe(0);
    expect(run.markers.has('done'), run.result.stdout).toBe(true);
  });

  it('reaches an allowed destination by listed IP, recorded with its rule and bytes', (ctx) => {
    guard(ctx);
    expect(marker(run, 'byip')).toMatchObject({ rc: '0', code: '200', body: 'hello_from_web_' });
    const e = run.egress.find(
      (x) => x.protocol === 'http' && x.name === undefined && x.port === web.port && x.allowed,
    );
    expect(e).toMatchObject({
      via: 'transparent',
      address: hostIp,
      allowed: true,
      reason: 'allowlisted',
      rule: `${hostIp}:${web.port}`,
    });
    expect(e?.bytesOut).toBeGreaterThan(0);
    expect(e?.bytesIn).toBeGreaterThan(0);
    expect(typeof e?.durationMs).toBe('number');
    expect(hostsSeen(web).slice(webBefore)).toContain(`${hostIp}:${web.port}`);
  });

  it('reaches an allowed destination by name, resolved by the filtering resolver', (ctx) => {
    guard(ctx);
    expect(marker(run, 'byname')).toMatchObject({ status: '200', body: 'hello_from_web_' });
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'dns',
        via: 'resolver',
        name: 'api.cfh.test',
        address: hostIp,
        allowed: true,
        reason: 'allowlisted',
        rule: `api.cfh.test:${web.port}`,
      }),
    );
    const e = run.egress.find((x) => x.protocol === 'http' && x.name === 'api.cfh.test');
    expect(e).toMatchObject({
      address: hostIp,
      port: web.port,
      allowed: true,
      reason: 'allowlisted',
      rule: `api.cfh.test:${web.port}`,
    });
    expect(e?.bytesIn).toBeGreaterThan(0);
    expect(dns.queries).toContain('api.cfh.test');
    expect(hostsSeen(web).slice(webBefore)).toContain(`api.cfh.test:${web.port}`);
  });

  it('curl, whose resolver runs in a thread, reaches it by name too', (ctx) => {
    guard(ctx);
    // Under runsc this fails if the sandbox cannot start threads (curl reports rc 6 with
    // "getaddrinfo() thread failed to start"): not a network fault, but it denies names to
    // most clients.
    expect(marker(run, 'byname-curl')).toMatchObject({
      rc: '0',
      code: '200',
      body: 'hello_from_web_',
    });
  });

  it('refuses a port nobody listed, with the reason in the evidence, and the server sees nothing', (ctx) => {
    guard(ctx);
    expect(failed(marker(run, 'otherport'))).toBe(true);
    expect(run.egress).toContainEqual(
      // The destination is this host's docker0 address at a port nobody listed: refused
      // as a host address (the gateway learns the address and port from the guard).
      expect.objectContaining({
        protocol: 'http',
        address: hostIp,
        allowed: false,
        reason: 'host-address',
      }),
    );
    // A name nobody listed, on an intercepted port, is refused before any connection.
    expect(failed(marker(run, 'unlisted80'))).toBe(true);
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'http',
        name: 'nolist.cfh.test',
        port: 80,
        allowed: false,
        reason: 'not-allowlisted',
      }),
    );
    expect(other.connections).toBe(otherBefore);
  });

  it('records where a refused connection to an unlisted port was going (address and port)', (ctx) => {
    guard(ctx);
    // Every attempt carries its destination, the ones the gateway's
    // catch-all refuses included: HTTP to an unlisted port, and raw TCP.
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'http',
        address: hostIp,
        port: other.port,
        allowed: false,
        reason: 'host-address',
      }),
    );
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'tcp',
        address: hostIp,
        port: rawDenied.port,
        allowed: false,
        reason: 'host-address',
      }),
    );
  });

  it('a client that ignores proxy variables (curl --noproxy) cannot bypass', (ctx) => {
    guard(ctx);
    expect(failed(marker(run, 'noproxy'))).toBe(true);
    expect(other.connections).toBe(otherBefore);
    // Neither did the request arrive at the "proxy" (an allowed server) in absolute form.
    expect(web.requests.slice(webBefore).map((r) => r.url)).not.toContainEqual(
      expect.stringContaining(String(other.port)),
    );
  });

  it('a raw-IP TCP connection to a non-listed address:port reaches nothing', (ctx) => {
    guard(ctx);
    const m = marker(run, 'rawdenied');
    // The gateway's catch-all accepts and closes: nothing comes back.
    expect(m.connect === 'ok' ? m.recv : 'refused').toMatch(/^(0|err:104|refused)$/);
    expect(rawDenied.connections).toEqual([]);
    expect(run.egress).toContainEqual(
      expect.objectContaining({ protocol: 'tcp', allowed: false, reason: 'host-address' }),
    );
  });

  it('a listed ip:port carries raw TCP (control for the refusal above)', (ctx) => {
    guard(ctx);
    expect(marker(run, 'rawallowed')).toMatchObject({ connect: 'ok' });
    expect(rawAllowed.connections.map((c) => c.toString())).toContain(`${RAW_PAYLOAD}\n`);
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'tcp',
        address: hostIp,
        port: rawAllowed.port,
        allowed: true,
        rule: `${hostIp}:${rawAllowed.port}`,
      }),
    );
  });

  it('a DNS query for a non-listed name gets NXDOMAIN and never leaves the gateway', (ctx) => {
    guard(ctx);
    expect(marker(run, 'getent-other').rc).not.toBe('0');
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'dns',
        name: 'other.cfh.test',
        allowed: false,
        reason: 'dns-refused',
      }),
    );
    expect(dns.queries).not.toContain('other.cfh.test');
  });

  it('a DNS query sent straight to another resolver is answered by the filtering resolver', (ctx) => {
    guard(ctx);
    if (rogue53 === undefined) ctx.skip(rogue53Skip);
    // Answered as the filtering resolver answers (the rogue never replies), or dropped.
    expect(marker(run, 'dns53-allowed').reply).toMatch(/^(rcode:0,addrs:[\d.+]+|err:\w+)$/);
    expect(marker(run, 'dns53-other').reply).toMatch(/^(rcode:3,addrs:-|err:\w+)$/);
    expect(rogue53?.packets).toEqual([]);
    expect(dns.queries).not.toContain('other.cfh.test');
  });

  it('UDP other than DNS is dropped at the sender (EPERM) and never arrives', (ctx) => {
    guard(ctx);
    expect(marker(run, 'udp-high').send).toBe('err:1');
    expect(rogueHigh.packets).toEqual([]);
  });

  it('*.domain allows a subdomain and not the apex', (ctx) => {
    guard(ctx);
    expect(marker(run, 'wildcard')).toMatchObject({ status: '200', body: 'hello_from_web_' });
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'http',
        name: 'a.svc.cfh.test',
        allowed: true,
        rule: '*.svc.cfh.test',
      }),
    );
    expect(marker(run, 'getent-apex').rc).not.toBe('0');
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'dns',
        name: 'svc.cfh.test',
        allowed: false,
        reason: 'dns-refused',
      }),
    );
    // Even with the address supplied by the client, the apex is refused by name.
    expect(failed(marker(run, 'apex'))).toBe(true);
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'http',
        name: 'svc.cfh.test',
        allowed: false,
        reason: 'not-allowlisted',
      }),
    );
    expect(hostsSeen(web).slice(webBefore)).not.toContain(`svc.cfh.test:${web.port}`);
  });

  it('an allowed address carrying a denied or unlisted Host header is refused', (ctx) => {
    guard(ctx);
    expect(failed(marker(run, 'hostdenied'))).toBe(true);
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'http',
        name: 'denied.cfh.test',
        port: web.port,
        allowed: false,
        reason: 'denylisted',
        rule: 'denied.cfh.test',
      }),
    );
    expect(failed(marker(run, 'hostunlisted'))).toBe(true);
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'http',
        name: 'other.cfh.test',
        port: web.port,
        allowed: false,
        reason: 'not-allowlisted',
      }),
    );
    const seen = hostsSeen(web).slice(webBefore);
    expect(seen).not.toContain('denied.cfh.test');
    expect(seen).not.toContain('other.cfh.test');
  });

  it('an allowed address carrying a denied or unlisted TLS server name is refused', (ctx) => {
    guard(ctx);
    // The upstream is a plain TCP listener: the handshake itself fails after the decision.
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'tls',
        name: 'a.svc.cfh.test',
        address: hostIp,
        port: tlsUpstream.port,
        allowed: true,
        rule: '*.svc.cfh.test',
      }),
    );
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'tls',
        name: 'denied.cfh.test',
        allowed: false,
        reason: 'denylisted',
        rule: 'denied.cfh.test',
      }),
    );
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        protocol: 'tls',
        name: 'other.cfh.test',
        allowed: false,
        reason: 'not-allowlisted',
      }),
    );
    expect(marker(run, 'sni-denied').handshake).not.toBe('ok');
    expect(marker(run, 'sni-unlisted').handshake).not.toBe('ok');
    // Exactly one ClientHello reached the upstream: the allowed one.
    const hellos = tlsUpstream.connections.slice(tlsBefore);
    expect(hellos).toHaveLength(1);
    expect(hellos[0]?.includes('a.svc.cfh.test')).toBe(true);
  });

  it("the run network's own gateway address does not reach host listeners", (ctx) => {
    guard(ctx);
    const gw = marker(run, 'gw').addr ?? '';
    expect(gw).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(failed(marker(run, 'gw-other'))).toBe(true);
    expect(failed(marker(run, 'gw-web'))).toBe(true);
    expect(run.egress).toContainEqual(
      expect.objectContaining({
        address: gw,
        port: web.port,
        allowed: false,
        reason: 'host-address',
      }),
    );
    expect(other.connections).toBe(otherBefore);
    expect(hostsSeen(web).slice(webBefore)).not.toContain(`${gw}:${web.port}`);
  });

  it('leaves no container or network, and records posture, enforcement and lifecycle', async (ctx) => {
    guard(ctx);
    expect(await containersOfRun(run.runId)).toEqual([]);
    expect(await networksOfRun(run.runId)).toEqual([]);
    expect(await egressConfigDirs(run.runId)).toEqual([]);
    const snapshot = await readJson<Record<string, any>>(path.join(run.dir, 'snapshot.json'));
    expect(snapshot.network).toMatchObject({
      mode: 'allowlist',
      allow: expect.arrayContaining([`${hostIp}:${web.port}`, '*.svc.cfh.test']),
      deny: ['denied.cfh.test'],
      enforcement: {
        kind: 'egress-gateway',
        gateway: { kind: 'in-process' },
        guard: { name: `cfh-guard-${run.runId}`, imageId: expect.stringMatching(/^sha256:/) },
        network: { name: `cfh-net-${run.runId}`, internal: true },
      },
    });
    if (runtime === 'runsc') expect(snapshot.runtime.engineRuntime).toBe('runsc-host');
    const types = run.events.map((e) => e.type);
    expect(types).toContain('egress_ready');
    expect(types).toContain('egress_closed');
    expect(types.indexOf('egress_ready')).toBeLessThan(types.indexOf('container_started'));
    expect(types.indexOf('container_removed')).toBeLessThan(types.indexOf('egress_closed'));
    expect(types.at(-1)).toBe('run_finished');
    const ready = run.events.find((e) => e.type === 'egress_ready')?.data;
    expect(ready).toMatchObject({ mode: 'allowlist', guardId: expect.any(String) });
    for (const e of run.egress) {
      expect(e).toMatchObject({
        protocol: expect.any(String),
        via: expect.any(String),
        allowed: expect.any(Boolean),
        reason: expect.any(String),
        bytesOut: expect.any(Number),
        bytesIn: expect.any(Number),
        durationMs: expect.any(Number),
      });
    }
    const show = await cfh(['runs', 'show', run.runId, '--artifact-root', path.dirname(run.dir)]);
    expect(show.exitCode, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/evidence\s+verified/);
    expect(show.stdout).toMatch(/^egress\s+\d+ attempt\(s\): \d+ allowed, \d+ denied$/m);
  });
});

describe('host listeners are unreachable in every mode', () => {
  let metaSkip = '';
  let meta: HttpTarget | undefined;
  let metaCreated = false;

  beforeAll(async () => {
    if (process.getuid?.() !== 0) {
      metaSkip = 'not root: cannot add 169.254.169.254 to a dummy interface';
      console.log(`metadata listener skipped: ${metaSkip}`);
      return;
    }
    try {
      // A dummy interface where the kernel has the module; else an empty bridge, which
      // holds a local address just the same.
      const dummy = await execa('ip', ['link', 'add', META_IF, 'type', 'dummy'], { reject: false });
      if (dummy.exitCode !== 0) {
        console.log(`no dummy interfaces here (${dummy.stderr.trim()}); using a bridge`);
        await execa('ip', ['link', 'add', META_IF, 'type', 'bridge']);
      }
      metaCreated = true;
      await execa('ip', ['addr', 'add', `${META_ADDR}/32`, 'dev', META_IF]);
      await execa('ip', ['link', 'set', META_IF, 'up']);
      meta = await startHttpTarget('metadata', META_ADDR, 80);
    } catch (error) {
      metaSkip = `cannot set up ${META_ADDR}: ${String(error)}`;
      console.log(`metadata listener skipped: ${metaSkip}`);
    }
  });

  afterAll(async () => {
    await meta?.close();
    if (metaCreated) await execa('ip', ['link', 'del', META_IF], { reject: false });
  });

  it('disabled: no interface but lo, and the host listener is unreachable', async () => {
    const before = other.connections;
    const run = await net.run({
      mode: 'disabled',
      script: [
        `probe host http://${hostIp}:${other.port}/`,
        'echo "@@ ifaces list=$(ls /sys/class/net | tr "\\n" ",")"',
      ].join('\n'),
    });
    expect(run.result.exitCode, run.result.stderr).toBe(0);
    expect(failed(marker(run, 'host'))).toBe(true);
    expect(marker(run, 'ifaces').list).toBe('lo,');
    expect(other.connections).toBe(before);
    expect(run.events.map((e) => e.type)).not.toContain('egress_ready');
    const snapshot = await readJson<Record<string, any>>(path.join(run.dir, 'snapshot.json'));
    expect(snapshot.network).toMatchObject({
      mode: 'disabled',
      enforcement: { kind: 'no-interface', loopback: true },
    });
  });

  describe.each(['runc', 'runsc'] as const)('open under %s', (runtime) => {
    let run: NetRun;
    let skip = '';
    let otherBefore = 0;

    beforeAll(async () => {
      if (runtime === 'runsc' && !runtimes.includes('runsc-host')) {
        skip = 'the engine has no runsc-host runtime (runsc with --network=host)';
        console.log(`open under runsc skipped: ${skip}`);
        return;
      }
      otherBefore = other.connections;
      run = await net.run({
        mode: 'open',
        runtime,
        allow: [`${hostIp}:${web.port}`],
        script: [
          `probe listed http://${hostIp}:${web.port}/`,
          `probe host http://${hostIp}:${other.port}/`,
          `probe host80 http://${hostIp}/`,
          `probe gw-other http://$GW:${other.port}/`,
          'probe gw-80 http://$GW/',
          `probe meta http://${META_ADDR}/`,
          'echo "@@ done"',
        ].join('\n'),
      });
    });

    const guard = (ctx: { skip: (note?: string) => void }): void => {
      if (skip !== '') ctx.skip(skip);
    };

    it('reaches a host address the profile lists', (ctx) => {
      guard(ctx);
      expect(run.result.exitCode, run.result.stderr).toBe(0);
      expect(marker(run, 'listed')).toMatchObject({ code: '200', body: 'hello_from_web_' });
      expect(run.egress).toContainEqual(
        expect.objectContaining({
          address: hostIp,
          port: web.port,
          allowed: true,
          rule: `${hostIp}:${web.port}`,
        }),
      );
    });

    it('a host listener on 0.0.0.0 is unreachable, by docker0 and by the run gateway', (ctx) => {
      guard(ctx);
      for (const label of ['host', 'host80', 'gw-other', 'gw-80'])
        expect(failed(marker(run, label)), label).toBe(true);
      expect(other.connections).toBe(otherBefore);
      const gw = marker(run, 'gw').addr ?? '';
      const refused = run.egress.filter((e) => !e.allowed).map((e) => e.address);
      expect(refused.filter((a) => a === hostIp)).toHaveLength(2);
      expect(refused.filter((a) => a === gw)).toHaveLength(2);
    });

    it("records the run gateway's address as host-address", (ctx) => {
      guard(ctx);
      const gw = marker(run, 'gw').addr ?? '';
      expect(run.egress).toContainEqual(
        expect.objectContaining({ address: gw, port: 80, allowed: false, reason: 'host-address' }),
      );
    });

    it("records the host's docker0 address as host-address", (ctx) => {
      guard(ctx);
      expect(run.egress).toContainEqual(
        expect.objectContaining({
          address: hostIp,
          port: 80,
          allowed: false,
          reason: 'host-address',
        }),
      );
    });

    it('records a host listener on an unlisted port as host-address, with its port', (ctx) => {
      guard(ctx);
      // `open` is general egress: the refusal is because the address is the host's, not
      // because nobody listed the port.
      const gw = marker(run, 'gw').addr ?? '';
      for (const address of [hostIp, gw])
        expect(run.egress).toContainEqual(
          expect.objectContaining({
            address,
            port: other.port,
            allowed: false,
            reason: 'host-address',
          }),
        );
    });

    it('a listener on 169.254.169.254 is unreachable', (ctx) => {
      guard(ctx);
      if (meta === undefined) ctx.skip(metaSkip);
      expect(failed(marker(run, 'meta'))).toBe(true);
      expect(meta?.connections).toBe(0);
      expect(run.egress).toContainEqual(
        expect.objectContaining({ address: META_ADDR, port: 80, allowed: false }),
      );
    });

    it('records the metadata address as metadata-address', (ctx) => {
      guard(ctx);
      if (meta === undefined) ctx.skip(metaSkip);
      // The address is the metadata service's whatever else it is (here also a local
      // address, on the interface this test created): the evidence must say so.
      expect(run.egress).toContainEqual(
        expect.objectContaining({
          address: META_ADDR,
          port: 80,
          allowed: false,
          reason: 'metadata-address',
        }),
      );
    });
  });
});

describe('destinations listed by address without a port', () => {
  it.each(['allowlist', 'open'] as const)(
    '%s: an address listed without a port is reachable on any of its ports',
    async (mode) => {
      const before = web.requests.length;
      const run = await net.run({
        mode,
        allow: [hostIp],
        script: `probe any http://${hostIp}:${web.port}/`,
      });
      expect(run.result.exitCode, run.result.stderr).toBe(0);
      expect(marker(run, 'any')).toMatchObject({ code: '200', body: 'hello_from_web_' });
      expect(web.requests.length).toBe(before + 1);
      expect(run.egress).toContainEqual(
        expect.objectContaining({
          address: hostIp,
          port: web.port,
          allowed: true,
          reason: 'allowlisted',
          rule: hostIp,
        }),
      );
    },
  );
});

interface ExecResult {
  readonly exitCode: number;
  readonly output: string;
}

async function execIn(containerId: string, cmd: string[]): Promise<ExecResult> {
  const container = docker.getContainer(containerId);
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  const sink = {
    write: (c: Buffer) => {
      chunks.push(c);
      return true;
    },
  } as unknown as NodeJS.WritableStream;
  docker.modem.demuxStream(stream, sink, sink);
  await new Promise<void>((resolve, reject) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', reject);
  });
  const info = await exec.inspect();
  return { exitCode: info.ExitCode ?? -1, output: Buffer.concat(chunks).toString() };
}

describe('fail closed, cancellation and reaping', () => {
  it('killing cfh (and its gateway) stops the sandbox (its tether) and sends nothing more; reap removes everything', async () => {
    const root = net.newRoot();
    const child = startCfh(
      [
        ...net.baseArgs(root, { mode: 'allowlist', allow: [`${hostIp}:${web.port}`] }),
        '--',
        'sleep',
        '60',
      ],
      { env: cfhEnv() },
    );
    try {
      const dir = await waitForEvent(root, 'container_started');
      const runId = runIdOf(dir);
      const curl = ['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '5'];
      const url = `http://${hostIp}:${web.port}/`;
      // Control: while cfh lives, the allowed destination answers.
      const alive = await execIn(`cfh-${runId}`, [...curl, url]);
      expect(alive).toMatchObject({ exitCode: 0, output: '200' });

      child.kill('SIGKILL');
      await child;
      const before = web.requests.length;
      // The command dies with cfh (its tether, engine/command/command-tether.ts): the sandbox stops; the
      // guard and the network are left for reap.
      const deadline = Date.now() + 15_000;
      let containers = await containersOfRun(runId);
      const sandboxOf = () => containers.find((c) => c.Names[0] === `/cfh-${runId}`);
      while (sandboxOf()?.State === 'running' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        containers = await containersOfRun(runId);
      }
      expect(containers.map((c) => c.Names[0]).sort()).toEqual(
        [`/cfh-${runId}`, `/cfh-guard-${runId}`].sort(),
      );
      expect(sandboxOf()?.State).not.toBe('running');
      expect(await networksOfRun(runId)).toHaveLength(1);

      // Nothing is left to send: no process of the sandbox outlived cfh, and nothing reached
      // the destination after it died.
      await new Promise((r) => setTimeout(r, 1000));
      expect(web.requests.length).toBe(before);

      // The resolv.conf the sandbox mounts lives in a private directory whose name nobody
      // can predict from the run id (another local user could have pre-created that one).
      // (Unless another cfh's start-up sweep already removed the owner-gone run's.)
      const configDirs = await egressConfigDirs(runId);
      expect(configDirs.length).toBeLessThanOrEqual(1);
      for (const configDir of configDirs) {
        expect(path.basename(configDir)).toMatch(new RegExp(`^cfh-egress-${runId}-[0-9a-f]{32}$`));
        expect((await lstat(configDir)).mode & 0o777).toBe(0o700);
      }

      const reap = await cfh(['reap', '--json', '--run', runId]);
      expect(reap.exitCode, reap.stderr).toBe(0);
      // Another cfh on this engine (a test file beside this one) sweeps an owner-gone run's
      // objects at its start: what reap finds it removes, and together nothing is left.
      const entries = (JSON.parse(reap.stdout) as Record<string, unknown>[]).filter(
        (e) => e.runId === runId,
      );
      for (const e of entries) expect(e, JSON.stringify(e)).toMatchObject({ action: 'removed' });
      expect(await containersOfRun(runId)).toEqual([]);
      expect(await networksOfRun(runId)).toEqual([]);
      expect(await egressConfigDirs(runId)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      await child;
    }
  });

  it('a cancelled allowlist run (SIGINT) leaves no container or network, with full evidence', async () => {
    const root = net.newRoot();
    const child = startCfh(
      [
        ...net.baseArgs(root, { mode: 'allowlist', allow: [`api.cfh.test:${web.port}`] }),
        '--',
        'sleep',
        '60',
      ],
      { env: cfhEnv() },
    );
    const dir = await waitForEvent(root, 'container_started');
    const runId = runIdOf(dir);
    expect(await networksOfRun(runId)).toHaveLength(1);
    child.kill('SIGINT');
    const result = await child;
    expect(result.exitCode).toBe(130);
    expect(await containersOfRun(runId)).toEqual([]);
    expect(await networksOfRun(runId)).toEqual([]);
    expect(await egressConfigDirs(runId)).toEqual([]);
    const state = await readJson(path.join(dir, 'state.json'));
    expect(state).toMatchObject({ state: 'cancelled' });
    const types = (await readEvents(dir)).map((e) => e.type);
    expect(types).toEqual(
      expect.arrayContaining(['egress_ready', 'egress_closed', 'cancelled', 'run_finished']),
    );
    expect(types.at(-1)).toBe('run_finished');
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.network).toMatchObject({
      mode: 'allowlist',
      allow: [`api.cfh.test:${web.port}`],
      deny: [],
      enforcement: { kind: 'egress-gateway', guard: { name: `cfh-guard-${runId}` } },
    });
    const show = await cfh(['runs', 'show', runId, '--artifact-root', root]);
    expect(show.exitCode, show.stderr).toBe(0);
    expect(await readFile(path.join(dir, 'events.jsonl'), 'utf8')).toContain('egress_closed');
  });
});
