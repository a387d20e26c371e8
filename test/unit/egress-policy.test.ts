// Issue 3: the DEST grammar and the one egress decision every enforcement point asks.
import { describe, expect, it } from 'vitest';
import { parseDestination, parseDestinations } from '../../src/network/destination.js';
import {
  EgressPolicy,
  canonicalAddress,
  isHostName,
  type EgressMode,
} from '../../src/network/egress-policy.js';
import { ConfigError } from '../../src/errors.js';

describe('parseDestination', () => {
  it.each([
    ['api.example.test', { kind: 'name', name: 'api.example.test' }],
    ['API.Example.Test.', { kind: 'name', name: 'api.example.test' }],
    ['api.example.test:8443', { kind: 'name', name: 'api.example.test', port: 8443 }],
    ['*.example.test', { kind: 'suffix', domain: 'example.test' }],
    ['*.example.test:443', { kind: 'suffix', domain: 'example.test', port: 443 }],
    ['192.0.2.7', { kind: 'cidr', address: '192.0.2.7', prefix: 32, family: 4 }],
    ['192.0.2.7:80', { kind: 'cidr', address: '192.0.2.7', prefix: 32, family: 4, port: 80 }],
    ['10.0.0.0/8', { kind: 'cidr', address: '10.0.0.0', prefix: 8, family: 4 }],
    ['10.0.0.0/8:443', { kind: 'cidr', address: '10.0.0.0', prefix: 8, family: 4, port: 443 }],
    ['2001:db8::1', { kind: 'cidr', address: '2001:db8::1', prefix: 128, family: 6 }],
    [
      '[2001:db8::1]:443',
      { kind: 'cidr', address: '2001:db8::1', prefix: 128, family: 6, port: 443 },
    ],
    ['2001:db8::/32', { kind: 'cidr', address: '2001:db8::', prefix: 32, family: 6 }],
    ['localhost', { kind: 'name', name: 'localhost' }],
  ])('%s', (text, expected) => {
    expect(parseDestination('network.allow[0]', text)).toEqual({ ...expected, text });
  });

  it.each([
    'bad host',
    'host:0',
    'host:65536',
    'host:http',
    '10.0.0.0/33',
    '10.0.0.0/x',
    '*.',
    '*example.test',
    'a..b',
    '-a.test',
    '[2001:db8::1',
    '[2001:db8::1]x',
    'name/8',
    '300.1.1.1',
  ])('refuses %j naming the field', (text) => {
    expect(() => parseDestination('network.allow[3]', text)).toThrow(ConfigError);
    expect(() => parseDestination('network.allow[3]', text)).toThrow(/^network\.allow\[3\]: /);
  });
});

function policy(
  mode: EgressMode,
  allow: string[],
  deny: string[] = [],
  hostAddresses: string[] = ['172.30.0.1'],
) {
  return new EgressPolicy({
    mode,
    allow: parseDestinations('allow', allow),
    deny: parseDestinations('deny', deny),
    hostAddresses,
  });
}

describe('EgressPolicy.decideName (the filtering resolver)', () => {
  it('answers allowed names and refuses the rest in allowlist mode', () => {
    const p = policy('allowlist', ['api.example.test', '*.svc.test']);
    expect(p.decideName('api.example.test')).toMatchObject({
      allowed: true,
      reason: 'allowlisted',
      rule: 'api.example.test',
    });
    expect(p.decideName('API.example.test.')).toMatchObject({ allowed: true });
    expect(p.decideName('a.svc.test')).toMatchObject({ allowed: true, rule: '*.svc.test' });
    expect(p.decideName('deep.a.svc.test')).toMatchObject({ allowed: true });
    // *.domain is subdomains only: the apex only when listed.
    expect(p.decideName('svc.test')).toEqual({ allowed: false, reason: 'dns-refused' });
    expect(p.decideName('evil-svc.test')).toEqual({ allowed: false, reason: 'dns-refused' });
    expect(p.decideName('other.test')).toEqual({ allowed: false, reason: 'dns-refused' });
  });

  it('bounds the names a *.domain entry allows below its domain, exact entries first', () => {
    const p = policy('allowlist', ['*.svc.test', '*.deep.svc.test', 'a.b.c.d.e.svc.test']);
    expect(p.decideName('a.b.c.d.svc.test')).toEqual({
      allowed: true,
      reason: 'allowlisted',
      rule: '*.svc.test',
      bySuffix: true,
    });
    expect(p.decideName('a.b.c.d.x.svc.test')).toEqual({
      allowed: false,
      reason: 'name-too-deep',
      rule: '*.svc.test',
    });
    // The closest entry decides the depth; an exact entry needs no bound and costs nothing.
    expect(p.decideName('a.b.c.d.deep.svc.test')).toMatchObject({
      allowed: true,
      rule: '*.deep.svc.test',
    });
    expect(p.decideName('a.b.c.d.e.svc.test')).toEqual({
      allowed: true,
      reason: 'allowlisted',
      rule: 'a.b.c.d.e.svc.test',
    });
    const longest = `${'x'.repeat(50)}.${'y'.repeat(49)}`;
    expect(p.decideName(`${longest}.svc.test`)).toMatchObject({ allowed: true });
    expect(p.decideName(`${longest}z.svc.test`)).toEqual({
      allowed: false,
      reason: 'name-too-long',
      rule: '*.svc.test',
    });
    // The same bound holds for a name reached by a connection (TLS server name, Host).
    expect(
      p.decideConnection({
        name: 'a.b.c.d.x.svc.test',
        address: '192.0.2.1',
        port: 443,
        resolvedForName: true,
      }),
    ).toMatchObject({ allowed: false, reason: 'name-too-deep' });
    // open mode forwards any name: there is nothing a tunnel would add to open egress.
    expect(policy('open', []).decideName('a.b.c.d.e.f.open.test')).toEqual({
      allowed: true,
      reason: 'open',
    });
  });

  it('lets deny win over allow, in both modes', () => {
    expect(
      policy('allowlist', ['*.svc.test'], ['bad.svc.test']).decideName('bad.svc.test'),
    ).toMatchObject({ allowed: false, reason: 'denylisted' });
    expect(policy('open', [], ['*.tracker.test']).decideName('x.tracker.test')).toMatchObject({
      allowed: false,
      reason: 'denylisted',
    });
    expect(policy('open', []).decideName('anything.test')).toEqual({
      allowed: true,
      reason: 'open',
    });
  });
});

describe('EgressPolicy.decideConnection', () => {
  it('allows a listed name at a public address, on a listed port only', () => {
    const p = policy('allowlist', ['api.example.test:443']);
    expect(
      p.decideConnection({
        name: 'api.example.test',
        address: '192.0.2.10',
        port: 443,
        resolvedForName: true,
      }),
    ).toMatchObject({ allowed: true, reason: 'allowlisted' });
    expect(
      p.decideConnection({
        name: 'api.example.test',
        address: '192.0.2.10',
        port: 80,
        resolvedForName: true,
      }),
    ).toMatchObject({ allowed: false, reason: 'not-allowlisted' });
  });

  it('refuses special addresses a name resolves to, unless the address itself is listed', () => {
    const p = policy('allowlist', ['internal.test']);
    const cases: [string, string][] = [
      ['10.1.2.3', 'private-address'],
      ['172.20.0.5', 'private-address'],
      ['192.168.1.1', 'private-address'],
      ['127.0.0.1', 'loopback-address'],
      ['::1', 'loopback-address'],
      ['169.254.169.254', 'metadata-address'],
      ['169.254.1.1', 'link-local-address'],
      ['fe80::1', 'link-local-address'],
      ['172.30.0.1', 'host-address'],
      ['::ffff:127.0.0.1', 'loopback-address'],
      ['0.0.0.0', 'unspecified-address'],
      ['224.0.0.1', 'multicast-address'],
      ['fd12::1', 'private-address'],
    ];
    for (const [address, reason] of cases) {
      expect(
        p.decideConnection({ name: 'internal.test', address, port: 80, resolvedForName: true }),
        address,
      ).toEqual({
        allowed: false,
        reason,
      });
    }
    const listed = policy('allowlist', ['internal.test', '172.20.0.0/16']);
    expect(
      listed.decideConnection({
        name: 'internal.test',
        address: '172.20.0.5',
        port: 80,
        resolvedForName: true,
      }),
    ).toMatchObject({ allowed: true, rule: 'internal.test' });
  });

  it('allows a name entry only at an address resolved for that name, unless the address is listed', () => {
    const p = policy('allowlist', ['good.test', '198.51.100.7:8080']);
    // The catch-all's case: the client chose the address and stated an allowed name.
    expect(
      p.decideConnection({
        name: 'good.test',
        address: '192.0.2.10',
        port: 8443,
        resolvedForName: false,
      }),
    ).toEqual({ allowed: false, reason: 'address-not-resolved-for-name', rule: 'good.test' });
    expect(
      p.decideConnection({
        name: 'good.test',
        address: '192.0.2.10',
        port: 8443,
        resolvedForName: true,
      }),
    ).toMatchObject({ allowed: true, rule: 'good.test' });
    // An address listed in its own right needs no resolution; a name not allowed still fails.
    expect(
      p.decideConnection({
        name: 'good.test',
        address: '198.51.100.7',
        port: 8080,
        resolvedForName: false,
      }),
    ).toMatchObject({ allowed: true, rule: 'good.test' });
    expect(
      p.decideConnection({
        name: 'other.test',
        address: '192.0.2.10',
        port: 8443,
        resolvedForName: true,
      }),
    ).toEqual({ allowed: false, reason: 'not-allowlisted' });
    // Special addresses keep their own reason, resolved or not.
    expect(
      p.decideConnection({
        name: 'good.test',
        address: '10.0.0.1',
        port: 80,
        resolvedForName: false,
      }),
    ).toEqual({ allowed: false, reason: 'private-address' });
  });

  it('allows a listed IP reached without a name, and refuses an unlisted raw IP', () => {
    const p = policy('allowlist', ['198.51.100.7:8080']);
    expect(p.decideConnection({ address: '198.51.100.7', port: 8080 })).toMatchObject({
      allowed: true,
      rule: '198.51.100.7:8080',
    });
    expect(p.decideConnection({ address: '198.51.100.8', port: 8080 })).toEqual({
      allowed: false,
      reason: 'not-allowlisted',
    });
    expect(p.decideConnection({ address: '198.51.100.7', port: 22 })).toEqual({
      allowed: false,
      reason: 'not-allowlisted',
    });
  });

  it('refuses an allowed address carrying a name that is not allowed (Host header or TLS server name)', () => {
    const p = policy('allowlist', ['198.51.100.7', 'good.test'], ['bad.test']);
    expect(
      p.decideConnection({
        name: 'bad.test',
        address: '198.51.100.7',
        port: 443,
        resolvedForName: true,
      }),
    ).toMatchObject({ allowed: false, reason: 'denylisted' });
    expect(
      p.decideConnection({
        name: 'unlisted.test',
        address: '198.51.100.7',
        port: 443,
        resolvedForName: true,
      }),
    ).toEqual({ allowed: false, reason: 'not-allowlisted' });
    expect(
      p.decideConnection({
        name: 'good.test',
        address: '198.51.100.7',
        port: 443,
        resolvedForName: true,
      }),
    ).toMatchObject({ allowed: true });
  });

  it('open mode allows public addresses and still refuses host, metadata and private ones', () => {
    const p = policy('open', [], ['203.0.113.0/24']);
    expect(
      p.decideConnection({
        name: 'x.test',
        address: '192.0.2.1',
        port: 443,
        resolvedForName: true,
      }),
    ).toEqual({
      allowed: true,
      reason: 'open',
    });
    expect(p.decideConnection({ address: '203.0.113.9', port: 443 })).toMatchObject({
      allowed: false,
      reason: 'denylisted',
    });
    expect(p.decideConnection({ address: '169.254.169.254', port: 80 })).toEqual({
      allowed: false,
      reason: 'metadata-address',
    });
    expect(p.decideConnection({ address: '172.30.0.1', port: 80 })).toEqual({
      allowed: false,
      reason: 'host-address',
    });
    expect(p.decideConnection({ address: '10.0.0.1', port: 80 })).toEqual({
      allowed: false,
      reason: 'private-address',
    });
    const listed = policy('open', ['172.30.0.1:8080']);
    expect(listed.decideConnection({ address: '172.30.0.1', port: 8080 })).toMatchObject({
      allowed: true,
      rule: '172.30.0.1:8080',
    });
    expect(listed.decideConnection({ address: '172.30.0.1', port: 8081 })).toEqual({
      allowed: false,
      reason: 'host-address',
    });
  });
});

describe('names and addresses the sandbox spells (adversarial)', () => {
  it('refuses a name that is not a host name before any rule sees it', () => {
    const p = policy('allowlist', ['*.ok.test', 'good.test']);
    for (const name of [
      'evil.test\u0000.ok.test',
      'evil.test\u0000',
      'a b.ok.test',
      'a\r\n.ok.test',
      'é.ok.test',
      '-a.ok.test',
      '..ok.test',
      `${'a'.repeat(64)}.ok.test`,
      '',
    ]) {
      expect(p.decideName(name), JSON.stringify(name)).toEqual({
        allowed: false,
        reason: 'invalid-name',
      });
      expect(
        p.decideConnection({ name, address: '198.51.100.7', port: 443, resolvedForName: true }),
        JSON.stringify(name),
      ).toEqual({ allowed: false, reason: 'invalid-name' });
    }
    // Under open too: no name of that shape is ever resolved.
    expect(policy('open', []).decideName('evil.test\u0000.ok.test').reason).toBe('invalid-name');
    expect(p.decideName('_srv.a.ok.test').allowed).toBe(true);
    expect(isHostName('a-b.c_d.test')).toBe(true);
  });

  it('judges every spelling of an IPv4-mapped address as the IPv4 address', () => {
    for (const spelling of [
      '::ffff:198.51.100.50',
      '::ffff:c633:6432',
      '::FFFF:C633:6432',
      '0:0:0:0:0:ffff:c633:6432',
    ])
      expect(canonicalAddress(spelling), spelling).toBe('198.51.100.50');
    expect(canonicalAddress('2001:DB8:0::1')).toBe('2001:db8::1');
    const p = policy('open', [], ['198.51.100.50'], ['172.30.0.1', '198.51.100.49']);
    expect(p.decideConnection({ address: '::ffff:c633:6432', port: 80 })).toMatchObject({
      allowed: false,
      reason: 'denylisted',
    });
    expect(p.decideConnection({ address: '::ffff:c633:6431', port: 80 })).toMatchObject({
      allowed: false,
      reason: 'host-address',
    });
    expect(p.decideConnection({ address: '::ffff:ac1e:1', port: 80 }).allowed).toBe(false);
  });
});

describe('host addresses', () => {
  it('reads local IPv4 addresses from the kernel table, up-without-carrier interfaces included', async () => {
    const { localIpv4FromFibTrie, ipv6FromIfInet6 } =
      await import('../../src/network/host-addresses.js');
    const trie = [
      'Local:',
      '  +-- 0.0.0.0/0 3 0 5',
      '     |-- 172.30.0.1',
      '        /32 host LOCAL',
      '     |-- 172.17.255.255',
      '        /32 link BROADCAST',
    ].join('\n');
    expect(localIpv4FromFibTrie(trie)).toEqual(['172.30.0.1']);
    expect(ipv6FromIfInet6('00000000000000000000000000000001 01 80 10 80       lo\n')).toEqual([
      '0:0:0:0:0:0:0:1',
    ]);
  });

  it('matches IPv6 host addresses whatever their spelling', () => {
    const p = policy('open', [], [], ['0:0:0:0:0:0:0:1', 'FD00:0:0:0:0:0:0:2']);
    expect(p.decideConnection({ address: 'fd00::2', port: 80 })).toEqual({
      allowed: false,
      reason: 'host-address',
    });
  });

  it('keeps the metadata name for 169.254.169.254 even when the host holds it', () => {
    const p = policy('open', [], [], ['169.254.169.254']);
    expect(p.decideConnection({ address: '169.254.169.254', port: 80 })).toEqual({
      allowed: false,
      reason: 'metadata-address',
    });
  });
});
