// The parsers the egress gateway applies to untrusted bytes: DNS questions, TLS
// ClientHello server names, whether the first bytes open an HTTP request (http-framing.test.ts
// reads its Host).
import { describe, expect, it } from 'vitest';
import { connect as tlsConnect } from 'node:tls';
import { createServer } from 'node:net';
import {
  buildQuery,
  buildResponse,
  parseQuery,
  parseResponse,
  RCODE_NOERROR,
  RCODE_NXDOMAIN,
  DNS_TYPE_AAAA,
} from '../../src/network/dns-wire.js';
import { inspectFirstBytes, splitHostPort } from '../../src/network/client-hello.js';

/** The first bytes a real TLS client sends for `servername`, captured on loopback. */
async function clientHello(servername: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const server = createServer((s) => {
      s.once('data', (d: Buffer) => {
        resolve(d);
        s.destroy();
        server.close();
      });
    });
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        reject(new Error('no port'));
        return;
      }
      const c = tlsConnect({
        host: '127.0.0.1',
        port: address.port,
        servername,
        rejectUnauthorized: false,
      });
      c.on('error', () => undefined);
    });
  });
}

describe('dns-wire', () => {
  it('round-trips a query and an A answer', () => {
    const q = parseQuery(buildQuery(4242, 'API.cfh.test'));
    expect(q).toMatchObject({ id: 4242, name: 'api.cfh.test', type: 1, class: 1 });
    if (q === undefined) return;
    expect(parseResponse(buildResponse(q, RCODE_NOERROR, ['192.0.2.1', '2001:db8::1']))).toEqual({
      id: 4242,
      rcode: RCODE_NOERROR,
      addresses: ['192.0.2.1'],
    });
    expect(parseResponse(buildResponse(q, RCODE_NXDOMAIN))).toEqual({
      id: 4242,
      rcode: RCODE_NXDOMAIN,
      addresses: [],
    });
  });

  it('answers AAAA with IPv6 addresses only', () => {
    const q = parseQuery(buildQuery(7, 'v6.cfh.test', DNS_TYPE_AAAA));
    if (q === undefined) throw new Error('no query');
    expect(
      parseResponse(buildResponse(q, RCODE_NOERROR, ['192.0.2.1', '2001:db8::1'])).addresses,
    ).toEqual(['2001:db8:0:0:0:0:0:1']);
  });

  it.each([
    ['too short', Buffer.alloc(5)],
    [
      'a response, not a query',
      Buffer.from(buildQuery(1, 'a.test').map((b, i) => (i === 2 ? b | 0x80 : b))),
    ],
    [
      'a label running past the end',
      Buffer.concat([buildQuery(1, 'a.test').subarray(0, 12), Buffer.from([60, 97])]),
    ],
    ['two questions', Buffer.from(buildQuery(1, 'a.test').map((b, i) => (i === 5 ? 2 : b)))],
  ])('ignores %s', (_name, msg) => {
    expect(parseQuery(msg)).toBeUndefined();
  });
});

describe('first bytes', () => {
  it('reads the server name of a real TLS ClientHello', async () => {
    const hello = await clientHello('api.cfh.test');
    expect(inspectFirstBytes(hello)).toEqual({ protocol: 'tls', name: 'api.cfh.test' });
  });

  it('survives a truncated ClientHello', async () => {
    const hello = await clientHello('api.cfh.test');
    for (const len of [6, 20, 50, 100]) {
      expect(inspectFirstBytes(hello.subarray(0, len)).protocol).toBe('tls');
    }
  });

  it('calls an HTTP/1 request line http, odd spellings too (framing then refuses them)', () => {
    for (const head of [
      'GET / HTTP/1.1\r\nHost: api.cfh.test:8080\r\n\r\n',
      'POST /x HTTP/1.0\r\nhost: [2001:db8::1]\r\n\r\n',
      'get / HTTP/1.1\r\n\r\n',
      'GET / HTTP/1.1\nHost: a.test\n\n',
    ])
      expect(inspectFirstBytes(Buffer.from(head)), head).toEqual({ protocol: 'http' });
  });

  it('calls anything else other', () => {
    expect(inspectFirstBytes(Buffer.from('SSH-2.0-OpenSSH_9.2\r\n'))).toEqual({
      protocol: 'other',
    });
    expect(inspectFirstBytes(Buffer.alloc(0))).toEqual({ protocol: 'other' });
  });

  it('splits host and port', () => {
    expect(splitHostPort('a.test:443')).toEqual({ name: 'a.test', port: 443 });
    expect(splitHostPort('a.test')).toEqual({ name: 'a.test', port: undefined });
    expect(splitHostPort('[::1]:80')).toEqual({ name: '::1', port: 80 });
    expect(splitHostPort('2001:db8::1')).toEqual({ name: '2001:db8::1', port: undefined });
  });
});
