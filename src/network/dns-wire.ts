// Just enough of the DNS wire format (RFC 1035) for a filtering resolver: read one
// question, answer it with A/AAAA records, NXDOMAIN or REFUSED. Nothing here decides.
import { ipv6Bytes } from './address-forms.js';

export interface DnsQuestion {
  readonly id: number;
  readonly flags: number;
  readonly name: string;
  readonly type: number;
  readonly class: number;
  /** Bytes of the question section, echoed in the answer. */
  readonly questionBytes: Buffer;
}

export const DNS_TYPE_A = 1;
export const DNS_TYPE_AAAA = 28;
const TYPE_NAMES: Readonly<Record<number, string>> = {
  1: 'A',
  2: 'NS',
  5: 'CNAME',
  6: 'SOA',
  12: 'PTR',
  15: 'MX',
  16: 'TXT',
  28: 'AAAA',
  33: 'SRV',
  64: 'SVCB',
  65: 'HTTPS',
  255: 'ANY',
};

/** A question type as the evidence names it: `A`, `TXT`, ... or `TYPE<n>`. */
export function typeName(type: number): string {
  return TYPE_NAMES[type] ?? `TYPE${type}`;
}

export const RCODE_NOERROR = 0;
export const RCODE_SERVFAIL = 2;
export const RCODE_NXDOMAIN = 3;
export const RCODE_REFUSED = 5;

export function parseQuery(msg: Buffer): DnsQuestion | undefined {
  if (msg.length < 12) return undefined;
  const id = msg.readUInt16BE(0);
  const flags = msg.readUInt16BE(2);
  const qdcount = msg.readUInt16BE(4);
  if (qdcount !== 1 || (flags & 0x8000) !== 0) return undefined;
  const labels: string[] = [];
  let offset = 12;
  for (;;) {
    const len = msg[offset];
    if (len === undefined || len > 63) return undefined;
    offset += 1;
    if (len === 0) break;
    if (offset + len > msg.length) return undefined;
    labels.push(msg.subarray(offset, offset + len).toString('latin1'));
    offset += len;
  }
  if (offset + 4 > msg.length) return undefined;
  const type = msg.readUInt16BE(offset);
  const cls = msg.readUInt16BE(offset + 2);
  return {
    id,
    flags,
    name: labels.join('.').toLowerCase(),
    type,
    class: cls,
    questionBytes: msg.subarray(12, offset + 4),
  };
}

export function buildResponse(
  q: DnsQuestion,
  rcode: number,
  addresses: readonly string[] = [],
  ttl = 30,
): Buffer {
  const answers = addresses
    .map((a) => answerRecord(q.type, a, ttl))
    .filter((b): b is Buffer => b !== undefined);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(q.id, 0);
  // QR=1, opcode copied, RD copied, RA=1, rcode.
  header.writeUInt16BE(0x8000 | (q.flags & 0x7900) | 0x0080 | (rcode & 0xf), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  return Buffer.concat([header, q.questionBytes, ...answers]);
}

function answerRecord(type: number, address: string, ttl: number): Buffer | undefined {
  const isV6 = address.includes(':');
  if ((type === DNS_TYPE_A && isV6) || (type === DNS_TYPE_AAAA && !isV6)) return undefined;
  const rdata = isV6
    ? Buffer.from(ipv6Bytes(address))
    : Buffer.from(address.split('.').map(Number));
  const head = Buffer.alloc(12);
  head.writeUInt16BE(0xc00c, 0); // pointer to the question name
  head.writeUInt16BE(type, 2);
  head.writeUInt16BE(1, 4);
  head.writeUInt32BE(ttl, 6);
  head.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([head, rdata]);
}

/** A query for `name` (tests and the bench use it to talk to a resolver). */
export function buildQuery(id: number, name: string, type = DNS_TYPE_A): Buffer {
  const parts = name.split('.').filter((l) => l !== '');
  const qname = Buffer.concat([
    ...parts.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(0x0100, 2);
  header.writeUInt16BE(1, 4);
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(type, 0);
  tail.writeUInt16BE(1, 2);
  return Buffer.concat([header, qname, tail]);
}

/** Reads rcode and A/AAAA answers of a response. */
export function parseResponse(msg: Buffer): { id: number; rcode: number; addresses: string[] } {
  const id = msg.readUInt16BE(0);
  const rcode = msg.readUInt16BE(2) & 0xf;
  const ancount = msg.readUInt16BE(6);
  let offset = 12;
  while (msg[offset] !== 0 && offset < msg.length) offset += (msg[offset] ?? 0) + 1;
  offset += 5;
  const addresses: string[] = [];
  for (let i = 0; i < ancount && offset + 12 <= msg.length; i += 1) {
    const type = msg.readUInt16BE(offset + 2);
    const len = msg.readUInt16BE(offset + 10);
    const rdata = msg.subarray(offset + 12, offset + 12 + len);
    if (type === DNS_TYPE_A && len === 4) addresses.push([...rdata].join('.'));
    if (type === DNS_TYPE_AAAA && len === 16) {
      const groups: string[] = [];
      for (let g = 0; g < 8; g += 1) groups.push(rdata.readUInt16BE(g * 2).toString(16));
      addresses.push(groups.join(':'));
    }
    offset += 12 + len;
  }
  return { id, rcode, addresses };
}
