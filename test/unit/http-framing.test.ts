// Request framing for the gateway's plain-HTTP relay: what may reach an allowed
// upstream on one connection. Every request must state the first one's host; framing an
// upstream could read another way is refused; bodies pass whatever they contain.
import { describe, expect, it } from 'vitest';
import { hostName, RequestFraming, type Fed } from '../../src/network/http-framing.js';

const get = (path: string, host: string, extra = ''): string =>
  `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;

/** Feeds `input` whole, or byte by byte; returns what went upstream and the refusal. */
function feed(input: string, byByte = false): { sent: string; fed: Fed; framing: RequestFraming } {
  const framing = new RequestFraming();
  const bytes = Buffer.from(input, 'latin1');
  const out: Buffer[] = [];
  let fed: Fed = { forward: [] };
  const chunks = byByte ? [...bytes].map((b) => Buffer.from([b])) : [bytes];
  for (const chunk of chunks) {
    fed = framing.push(chunk);
    out.push(...fed.forward);
    if (fed.refusal !== undefined) break;
  }
  return { sent: Buffer.concat(out).toString('latin1'), fed, framing };
}

describe('RequestFraming', () => {
  it.each([false, true])('passes requests for one host, whole or byte by byte (%s)', (byByte) => {
    const body = get('/inner', 'inner.test');
    const input =
      get('/1', 'a.test:8080') +
      `POST /2 HTTP/1.1\r\nHost: A.test\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
      `POST /3 HTTP/1.1\r\nHost: a.test.\r\nTransfer-Encoding: chunked\r\n\r\n` +
      `${body.length.toString(16)};ext=1\r\n${body}\r\n0\r\nX-Trailer: t\r\n\r\n` +
      get('/4', 'a.test');
    const { sent, fed, framing } = feed(input, byByte);
    expect(fed.refusal).toBeUndefined();
    expect(sent).toBe(input);
    expect(framing.requests).toBe(4);
    expect(framing.host).toBe('a.test');
  });

  it.each<[string, string, string, string | undefined]>([
    ['a pipelined request for another host', get('/2', 'b.test'), 'conflicting-host', 'b.test'],
    ['a second request without Host', 'GET /2 HTTP/1.1\r\n\r\n', 'conflicting-host', undefined],
    [
      'a later absolute-form target',
      'GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n',
      'conflicting-host',
      'b.test',
    ],
    [
      'a duplicate Host',
      'GET /2 HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n',
      'conflicting-host',
      'b.test',
    ],
    [
      'CL and TE together',
      'POST /2 HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n',
      'bad-request',
      undefined,
    ],
    [
      'two Content-Lengths',
      'POST /2 HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n',
      'bad-request',
      undefined,
    ],
    [
      'a coding other than chunked',
      'POST /2 HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n',
      'bad-request',
      undefined,
    ],
    [
      'a signed Content-Length',
      'POST /2 HTTP/1.1\r\nHost: a.test\r\nContent-Length: +5\r\n\r\n',
      'bad-request',
      undefined,
    ],
    [
      'obs-fold',
      'GET /2 HTTP/1.1\r\nHost: a.test\r\nX: 1\r\n Host: b.test\r\n\r\n',
      'bad-request',
      undefined,
    ],
    ['a bare LF', 'GET /2 HTTP/1.1\nHost: b.test\n\n', 'bad-request', undefined],
    ['a lowercase method', 'get /2 HTTP/1.1\r\nHost: a.test\r\n\r\n', 'bad-request', undefined],
    [
      'a space before the colon',
      'GET /2 HTTP/1.1\r\nHost : b.test\r\n\r\n',
      'bad-request',
      undefined,
    ],
    [
      'a control byte in a value',
      'GET /2 HTTP/1.1\r\nHost: a.test\r\nX: a\x00b\r\n\r\n',
      'bad-request',
      undefined,
    ],
    ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'bad-request', undefined],
    [
      'userinfo in an absolute target',
      'GET http://a.test@b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n',
      'bad-request',
      undefined,
    ],
    [
      'an Upgrade after the first request',
      get('/2', 'a.test', 'Upgrade: websocket\r\n'),
      'bad-request',
      'a.test',
    ],
  ])('refuses %s after the first, forwarding only the first', (_label, second, reason, name) => {
    const first = get('/1', 'a.test');
    for (const byByte of [false, true]) {
      const { sent, fed } = feed(first + second, byByte);
      expect(fed.refusal).toMatchObject({ reason, ...(name === undefined ? {} : { name }) });
      expect(sent).toBe(first);
    }
  });

  it('refuses a first request whose target and Host disagree, or with two Hosts', () => {
    expect(feed('GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n').fed.refusal).toMatchObject({
      reason: 'conflicting-host',
      name: 'b.test',
    });
    expect(
      feed('GET / HTTP/1.1\r\nHost: a.test\r\nhost: a.test\r\n\r\n').fed.refusal,
    ).toMatchObject({ reason: 'conflicting-host' });
    expect(feed('GET / HTTP/1.1\r\nHost: a.test\r\n\r\n').framing.host).toBe('a.test');
    expect(
      feed('GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n').fed.refusal,
    ).toBeUndefined();
  });

  it('refuses chunked framing it cannot read the way every upstream would', () => {
    const head = 'POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n';
    for (const body of ['5\r\nabcdeXX', 'zz\r\n', '5\nabcde\r\n', '0\r\nX: a\r\n b\r\n\r\n'])
      expect(feed(head + body).fed.refusal, JSON.stringify(body)).toMatchObject({
        reason: 'bad-request',
      });
    expect(feed(head).fed.refusal).toBeUndefined();
  });

  it('bounds a head that never ends', () => {
    const { fed, sent } = feed(`GET / HTTP/1.1\r\nHost: a.test\r\nX: ${'a'.repeat(17 * 1024)}`);
    expect(fed.refusal).toMatchObject({ reason: 'bad-request' });
    expect(sent).toBe('');
  });

  it('turns opaque after 101 to an Upgrade, holding the client until then', () => {
    const framing = new RequestFraming();
    const upgrade = get('/ws', 'a.test', 'Connection: Upgrade\r\nUpgrade: websocket\r\n');
    expect(framing.push(Buffer.from(upgrade)).forward.map(String)).toEqual([upgrade]);
    expect(framing.switchPending).toBe(true);
    expect(
      framing.push(Buffer.from('frame GET / HTTP/1.1\r\nHost: b.test\r\n\r\n')).forward,
    ).toEqual([]);
    const released = framing.upstream(Buffer.from('HTTP/1.1 101 Switching Protocols\r\n\r\n'));
    expect(released.forward.map(String)).toEqual(['frame GET / HTTP/1.1\r\nHost: b.test\r\n\r\n']);
    expect(framing.switchPending).toBe(false);
    expect(framing.push(Buffer.from('anything')).forward.map(String)).toEqual(['anything']);
  });

  it('keeps framing when the upstream declines the Upgrade, refusing what it held', () => {
    const framing = new RequestFraming();
    framing.push(Buffer.from(get('/ws', 'a.test', 'Upgrade: websocket\r\n')));
    framing.push(Buffer.from(get('/2', 'b.test')));
    // The status line may arrive in pieces.
    expect(framing.upstream(Buffer.from('HTTP/1.1 20')).forward).toEqual([]);
    const after = framing.upstream(Buffer.from('0 OK\r\nContent-Length: 0\r\n\r\n'));
    expect(after.refusal).toMatchObject({ reason: 'conflicting-host', name: 'b.test' });
  });

  it('refuses an upgrade to h2c, whose streams would name hosts unframed', () => {
    for (const value of ['h2c', 'websocket, h2c', 'HTTP/2.0'])
      expect(
        feed(get('/', 'a.test', `Connection: Upgrade, HTTP2-Settings\r\nUpgrade: ${value}\r\n`)).fed
          .refusal,
        value,
      ).toMatchObject({ reason: 'bad-request' });
  });

  it('refuses CONNECT: an upstream answering 2xx to anything would take the rest unframed', () => {
    for (const connect of [
      'CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n',
      'CONNECT b.test:443 HTTP/1.1\r\nHost: a.test\r\n\r\n',
    ]) {
      const framing = new RequestFraming();
      const fed = framing.push(
        Buffer.from(`${connect}GET /smuggled HTTP/1.1\r\nHost: smuggled.test\r\n\r\n`),
      );
      expect(fed.refusal).toMatchObject({ reason: 'bad-request' });
      expect(fed.forward).toEqual([]);
      // Even a 2xx from the upstream opens nothing.
      expect(framing.upstream(Buffer.from('HTTP/1.1 200 OK\r\n\r\n')).forward).toEqual([]);
    }
  });

  it('reads host names as names, or not at all', () => {
    expect(hostName('A.Test.:8080')).toBe('a.test');
    expect(hostName('[2001:DB8::1]:443')).toBe('2001:db8::1');
    expect(hostName('192.0.2.1')).toBe('192.0.2.1');
    for (const bad of ['', 'a test', 'a.test:x', 'a.test/b', '2001:db8::1', '[zz]'])
      expect(hostName(bad), bad).toBeUndefined();
  });
});
