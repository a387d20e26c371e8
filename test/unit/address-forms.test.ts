// The class: an address whose bytes reach an IPv4 destination but is judged as IPv6
// (AH-CONT-4). Every embedded-IPv4 form is judged as the IPv4 address it reaches (the deny
// list, metadata, loopback, private and host ranges), a deny written in such a form covers
// the IPv4 address, and a form whose embedded address cannot be located is refused.
import { describe, expect, it } from 'vitest';
import { DeniedNameAddresses } from '../../src/network/denied-addresses.js';
import { parseDestinations } from '../../src/network/destination.js';
import { EgressPolicy, type EgressMode } from '../../src/network/egress-policy.js';

function policy(mode: EgressMode, allow: string[], deny: string[], host: string[] = []) {
  return new EgressPolicy({
    mode,
    allow: parseDestinations('network.allow', allow),
    deny: parseDestinations('network.deny', deny),
    hostAddresses: host,
  });
}

/** Each form, spelled around one IPv4 address (RFC 6052, 3056, 4380, 5214, 6145, 4291). */
function forms(v4: string): [string, string][] {
  const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
  const hi = ((a << 8) | b).toString(16);
  const lo = ((c << 8) | d).toString(16);
  const x = (n: number): string => (0xffff ^ n).toString(16);
  return [
    ['mapped', `::ffff:${v4}`],
    ['mapped (hex)', `::ffff:${hi}:${lo}`],
    ['SIIT ::ffff:0:0:0/96', `::ffff:0:${v4}`],
    ['SIIT (hex, long)', `0:0:0:0:ffff:0:${hi}:${lo}`],
    ['IPv4-compatible ::/96', `::${v4}`],
    ['IPv4-compatible (hex)', `::${hi}:${lo}`],
    ['NAT64 64:ff9b::/96', `64:ff9b::${v4}`],
    ['NAT64 (hex, upper case)', `64:FF9B::${hi.toUpperCase()}:${lo}`],
    ['6to4 2002::/16', `2002:${hi}:${lo}::1`],
    ['6to4 (other host bits)', `2002:${hi}:${lo}:ab:cd::ef`],
    ['Teredo server', `2001:0:${hi}:${lo}:8000:f227:bec0:1111`],
    [
      'Teredo client (obfuscated)',
      `2001:0:4136:e378:8000:f227:${x((a << 8) | b)}:${x((c << 8) | d)}`,
    ],
    ['ISATAP 0:5efe', `2001:db8:1:2:0:5efe:${v4}`],
    ['ISATAP 200:5efe (universal bit)', `fd00:1::200:5efe:${hi}:${lo}`],
  ];
}

describe('an IPv4 address hidden in an IPv6 spelling is judged as that IPv4 address', () => {
  const denied = policy('open', [], ['198.51.100.50'], ['172.30.0.1']);
  const targets: [string, string, string][] = [
    ['198.51.100.50', 'denylisted', 'a denied address'],
    ['169.254.169.254', 'metadata-address', 'the metadata address'],
    ['127.0.0.1', 'loopback-address', 'loopback'],
    ['10.1.2.3', 'private-address', 'a private address'],
    ['172.30.0.1', 'host-address', "the host's own address"],
  ];
  for (const [v4, reason, what] of targets) {
    it.each(forms(v4))(
      `%s embedding ${what} (${v4}) is refused as ${reason}`,
      (_form, spelling) => {
        const d = denied.decideConnection({ address: spelling, port: 80 });
        // ISATAP under fd00::/8 is private by itself: either reason refuses.
        if (spelling.startsWith('fd00:')) expect(d.allowed).toBe(false);
        else expect(d).toMatchObject({ allowed: false, reason });
        // With a name the gateway resolved to it, too (an AAAA answer).
        const named = policy('allowlist', ['ok.test'], ['198.51.100.50'], ['172.30.0.1']);
        expect(
          named.decideConnection({
            name: 'ok.test',
            address: spelling,
            port: 80,
            resolvedForName: true,
          }).allowed,
          spelling,
        ).toBe(false);
      },
    );
  }

  it('a public IPv4 address in each form is judged as public (not over-refused)', () => {
    for (const [form, spelling] of forms('192.0.2.10'))
      expect(denied.decideConnection({ address: spelling, port: 80 }), form).toMatchObject(
        spelling.startsWith('fd00:') ? { allowed: false } : { allowed: true, reason: 'open' },
      );
    expect(denied.decideConnection({ address: '2001:db8::1', port: 80 }).allowed).toBe(true);
  });

  it('Teredo: the server and the client are both judged; either denied refuses', () => {
    const teredo = forms('198.51.100.50').filter(([f]) => f.startsWith('Teredo'));
    expect(teredo).toHaveLength(2);
    for (const [, spelling] of teredo)
      expect(denied.decideConnection({ address: spelling, port: 80 }).reason).toBe('denylisted');
  });

  it('the local-use NAT64 prefix 64:ff9b:1::/48 cannot be judged: refused', () => {
    const open = policy('open', [], []);
    for (const spelling of ['64:ff9b:1::c633:6432', '64:ff9b:1:c633:64:3200::', '64:ff9b:1::1'])
      expect(open.decideConnection({ address: spelling, port: 80 }), spelling).toEqual({
        allowed: false,
        reason: 'unjudgeable-address',
      });
    // An operator who lists their own local-use prefix may use it.
    const listed = policy('open', ['64:ff9b:1::/48'], []);
    expect(listed.decideConnection({ address: '64:ff9b:1::c633:6432', port: 80 }).allowed).toBe(
      true,
    );
  });

  it('a deny or allow written in an embedding form is the IPv4 range it spells', () => {
    for (const rule of ['::ffff:198.51.100.0/120', '64:ff9b::198.51.100.0/120', '::ffff:c633:6432'])
      expect(
        policy('open', [], [rule]).decideConnection({ address: '198.51.100.50', port: 80 }),
        rule,
      ).toMatchObject({ allowed: false, reason: 'denylisted', rule });
    // A 6to4 address of a denied IPv4 is denied by the IPv4 entry and by its own.
    const six = policy('open', [], ['2002:c633:6432::/48']);
    expect(six.decideConnection({ address: '2002:c633:6432::9', port: 80 }).reason).toBe(
      'denylisted',
    );
    const allowed = policy('allowlist', ['::ffff:198.51.100.50'], []);
    expect(allowed.decideConnection({ address: '198.51.100.50', port: 80 }).allowed).toBe(true);
  });

  it('listing a tunnel address does not launder the special address it carries', () => {
    const listed = policy('allowlist', ['2002::/16'], []);
    expect(listed.decideConnection({ address: '2002:a9fe:a9fe::1', port: 80 })).toEqual({
      allowed: false,
      reason: 'metadata-address',
    });
    expect(listed.decideConnection({ address: '2002:c000:20a::1', port: 80 }).allowed).toBe(true);
  });

  it("a denied name's IPv4 address is refused in any embedding form", async () => {
    const p = policy('open', [], ['blocked.test']);
    const names = new DeniedNameAddresses((n) =>
      Promise.resolve(n === 'blocked.test' ? ['198.51.100.50'] : []),
    );
    for (const [form, spelling] of forms('198.51.100.50'))
      expect(await names.denying(p, spelling, 80), form).toBe('blocked.test');
    // And an answer in a tunnel form denies the IPv4 address it reaches.
    const six = new DeniedNameAddresses(() => Promise.resolve(['2002:c633:6432::1']));
    expect(await six.denying(p, '198.51.100.50', 80)).toBe('blocked.test');
  });
});
