// Every spelling an address has, so each address judgement (DNS answers, CONNECT targets,
// Host headers, transparent original destinations, the allow and deny entries themselves)
// judges where the bytes go, not how the address was written (AH-CONT-4). An IPv6 address
// can carry an IPv4 address that a translator, a tunnel or the kernel's own dual stack
// delivers to: a deny of that IPv4 address, and the metadata, loopback, private and host
// ranges, must hold against every such form.
//
// - One-to-one forms (the IPv6 address IS the IPv4 address, in the low 32 bits): IPv4-mapped
//   ::ffff:0:0/96 (the kernel sends to the IPv4 address), SIIT ::ffff:0:0:0/96 (RFC 6145),
//   IPv4-compatible ::/96 but :: and ::1 (RFC 4291, deprecated; still tunnelled by sit),
//   NAT64 well-known prefix 64:ff9b::/96 (RFC 6052). Their one spelling is the IPv4 address.
// - Tunnel forms (an IPv6 address of its own that also reaches an IPv4 address): 6to4
//   2002::/16 (RFC 3056: the relay in bits 16-47), Teredo 2001::/32 (RFC 4380: the server
//   in bits 32-63 and the client, obfuscated, in bits 96-127: both), ISATAP interface ids
//   [0-3]00:5efe:a.b.c.d (RFC 5214). Judged as the IPv6 address and as each IPv4 one.
// - Forms that cannot be judged: the local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215),
//   whose embedded address sits where the operator's prefix length (/48../96, RFC 6052)
//   puts it, which nothing here knows. Refused.
import { isIP } from 'node:net';

export type AddressForms =
  /** `spellings[0]` is the address's own canonical spelling; the rest are IPv4 it reaches. */
  | { readonly judged: true; readonly spellings: readonly string[] }
  | { readonly judged: false; readonly canonical: string; readonly form: string };

/** The 16 bytes of an IPv6 address (`isIP(a) === 6`; a zone id is dropped). */
export function ipv6Bytes(address: string): Uint8Array {
  const text = address.replace(/%.*$/, '').toLowerCase();
  const bytes = new Uint8Array(16);
  let head = text;
  let tail = '';
  const gap = text.indexOf('::');
  if (gap >= 0) {
    head = text.slice(0, gap);
    tail = text.slice(gap + 2);
  }
  const groups = (part: string): number[] => {
    if (part === '') return [];
    const out: number[] = [];
    for (const g of part.split(':')) {
      if (g.includes('.')) {
        const [a = 0, b = 0, c = 0, d = 0] = g.split('.').map(Number);
        out.push((a << 8) | b, (c << 8) | d);
      } else out.push(parseInt(g, 16));
    }
    return out;
  };
  const h = groups(head);
  const t = groups(tail);
  const all = gap >= 0 ? [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t] : h;
  all.forEach((g, i) => {
    bytes[i * 2] = (g >> 8) & 0xff;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}

function ipv6Text(bytes: Uint8Array): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2)
    groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  // RFC 5952's compression, as the URL parser does it.
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}

function v4At(bytes: Uint8Array, offset: number, xor = 0): string {
  return [0, 1, 2, 3].map((i) => ((bytes[offset + i] ?? 0) ^ xor) & 0xff).join('.');
}

function zeros(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}

function word(bytes: Uint8Array, offset: number): number {
  return ((bytes[offset] ?? 0) << 8) | (bytes[offset + 1] ?? 0);
}

/** The one IPv4 address a one-to-one form is, or undefined. */
function oneToOne(b: Uint8Array): string | undefined {
  const low = (): string => v4At(b, 12);
  // ::ffff:a.b.c.d (mapped)
  if (zeros(b, 0, 10) && word(b, 10) === 0xffff) return low();
  // ::ffff:0:a.b.c.d (SIIT, IPv4-translated)
  if (zeros(b, 0, 8) && word(b, 8) === 0xffff && word(b, 10) === 0) return low();
  // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
  if (word(b, 0) === 0x64 && word(b, 2) === 0xff9b && zeros(b, 4, 12)) return low();
  // ::a.b.c.d (IPv4-compatible), but :: and ::1, which are IPv6's own
  if (zeros(b, 0, 12) && !(zeros(b, 12, 15) && (b[15] ?? 0) <= 1)) return low();
  return undefined;
}

/** Every spelling `address` is judged by, or why it cannot be judged. */
export function addressForms(address: string): AddressForms {
  if (isIP(address) !== 6) return { judged: true, spellings: [address] };
  const b = ipv6Bytes(address);
  const v4 = oneToOne(b);
  if (v4 !== undefined) return { judged: true, spellings: [v4] };
  const canonical = ipv6Text(b);
  if (word(b, 0) === 0x64 && word(b, 2) === 0xff9b && word(b, 4) === 0x0001)
    return { judged: false, canonical, form: 'local-use NAT64 prefix 64:ff9b:1::/48' };
  const reached: string[] = [];
  if (word(b, 0) === 0x2002) reached.push(v4At(b, 2));
  if (word(b, 0) === 0x2001 && word(b, 2) === 0x0000) reached.push(v4At(b, 4), v4At(b, 12, 0xff));
  // ISATAP: the interface id's high word is 0000, 0100, 0200 or 0300 (u/g bits), then 5efe.
  if ((word(b, 8) & 0xfcff) === 0 && word(b, 10) === 0x5efe) reached.push(v4At(b, 12));
  return { judged: true, spellings: [canonical, ...new Set(reached)] };
}

/**
 * One spelling per address, so set lookups and ranges agree: a one-to-one form is the IPv4
 * address it carries; any other IPv6 address compressed and in lower case.
 */
export function canonicalAddress(address: string): string {
  const forms = addressForms(address);
  return forms.judged ? (forms.spellings[0] ?? address) : forms.canonical;
}

/**
 * An address/prefix entry in its canonical family: a range wholly inside a one-to-one form
 * (`::ffff:198.51.100.0/120`, `64:ff9b::10.0.0.0/104`) is the IPv4 range it spells, so a
 * deny or allow written either way covers the same destinations.
 */
export function canonicalRange(
  address: string,
  prefix: number,
): { address: string; prefix: number; family: 4 | 6 } {
  if (isIP(address) !== 6) return { address, prefix, family: 4 };
  const b = ipv6Bytes(address);
  if (prefix >= 96) {
    // ::/96 holds :: and ::1 too: those two alone stay IPv6's own; a wider range of it is
    // IPv4-compatible space, which is IPv4.
    const compat = zeros(b, 0, 12) && (prefix < 128 || oneToOne(b) !== undefined);
    if (oneToOne(b) !== undefined || compat)
      return { address: v4At(b, 12), prefix: prefix - 96, family: 4 };
  }
  return { address: ipv6Text(b), prefix, family: 6 };
}
