// The egress gateway in this process, on loopback: the paths a sandbox's rules
// never route to (the CONNECT listener) and the resolver's bookkeeping, against real
// sockets. Every upstream is a listener this file starts on 127.0.0.1, listed by address;
// names resolve to 127.0.0.1 through a resolver this file supplies.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSocket } from 'node:dgram';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { parseDestinations } from '../../src/network/destination.js';
import { buildQuery, parseResponse } from '../../src/network/dns-wire.js';
import { EgressGateway, type EgressEvent } from '../../src/network/egress-gateway.js';
import { EgressPolicy } from '../../src/network/egress-policy.js';
import { RunResolutions } from '../../src/network/run-resolutions.js';

const LOOPBACK = '127.0.0.1';

interface Upstream {
  readonly port: number;
  readonly received: Buffer[];
  close(): Promise<void>;
}

/** Records what each connection sends; answers each request head with a 200. */
async function startUpstream(): Promise<Upstream> {
  const received: Buffer[] = [];
  const server: Server = createServer((s) => {
    const i = received.push(Buffer.alloc(0)) - 1;
    s.on('error', () => undefined);
    s.on('data', (c: Buffer) => {
      received[i] = Buffer.concat([received[i] ?? Buffer.alloc(0), c]);
      for (let n = c.toString('latin1').split('\r\n\r\n').length - 1; n > 0; n -= 1)
        s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
    setTimeout(() => s.end(), 400);
  });
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    received,
    close: () =>
      new Promise((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  };
}

let upstream: Upstream;
let gateway: EgressGateway;
let events: EgressEvent[];
let resolved: string[];

async function startGateway(burst = 64): Promise<void> {
  events = [];
  resolved = [];
  gateway = await EgressGateway.start({
    policy: new EgressPolicy({
      mode: 'allowlist',
      allow: parseDestinations('allow', [
        `${LOOPBACK}:${upstream.port}`,
        `good.test:${upstream.port}`,
        '*.svc.test',
      ]),
      deny: [],
      hostAddresses: [],
    }),
    bindAddress: LOOPBACK,
    interceptPorts: [],
    pinned: [],
    resolve: (name) => {
      resolved.push(name);
      return Promise.resolve([LOOPBACK]);
    },
    onEvent: (e) => events.push(e),
    resolutions: new RunResolutions({ burst }),
  });
}

beforeEach(async () => {
  upstream = await startUpstream();
  await startGateway();
});
afterEach(async () => {
  await gateway.close();
  await upstream.close();
});

/** Opens a CONNECT tunnel through the gateway's proxy listener; resolves once it answers. */
function tunnel(target: string): Promise<{ socket: Socket; answer: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: LOOPBACK, port: gateway.endpoints.proxy }, () => {
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    });
    socket.once('data', (d: Buffer) => {
      resolve({ socket, answer: d.toString('latin1') });
    });
    socket.once('error', reject);
  });
}

/** Everything the peer sends until it closes. */
function drain(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
  });
}

async function settle(predicate: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !predicate(); i += 1) await new Promise((r) => setTimeout(r, 20));
}

const text = (): string => Buffer.concat(upstream.received).toString('latin1');

describe('the CONNECT listener', () => {
  it('refuses a tunnel whose TLS server name is not the name it was opened for', async () => {
    const { socket, answer } = await tunnel(`good.test:${upstream.port}`);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    const tls = tlsConnect({ socket, servername: 'evil.test', rejectUnauthorized: false });
    tls.on('error', () => undefined);
    await new Promise((resolve) => socket.once('close', resolve));
    await settle(() => events.length > 0);
    expect(events).toContainEqual(
      expect.objectContaining({
        protocol: 'tls',
        via: 'proxy',
        name: 'evil.test',
        allowed: false,
        reason: 'conflicting-host',
      }),
    );
    expect(upstream.received).toEqual([]);
  });

  it('carries a tunnel whose server name is its own (control)', async () => {
    const { socket } = await tunnel(`good.test:${upstream.port}`);
    const tls = tlsConnect({ socket, servername: 'good.test', rejectUnauthorized: false });
    tls.on('error', () => undefined);
    await settle(() => upstream.received.length > 0 && (upstream.received[0]?.length ?? 0) > 0);
    expect(upstream.received[0]?.includes('good.test')).toBe(true);
    socket.destroy();
  });

  it('answers 403 to a target the policy refuses, before any tunnel', async () => {
    const { answer } = await tunnel('evil.test:443');
    expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    expect(events).toContainEqual(
      expect.objectContaining({ name: 'evil.test', allowed: false, reason: 'not-allowlisted' }),
    );
  });

  it('frames absolute-form requests: a second one for another host never arrives', async () => {
    const socket = connect({ host: LOOPBACK, port: gateway.endpoints.proxy });
    const got = drain(socket);
    const target = `good.test:${upstream.port}`;
    socket.write(
      `GET http://${target}/1 HTTP/1.1\r\nHost: ${target}\r\n\r\n` +
        `GET http://evil.test/2 HTTP/1.1\r\nHost: evil.test\r\n\r\n`,
    );
    expect(await got).toContain('HTTP/1.1 200 OK');
    await settle(() => events.length >= 2);
    expect(text()).toContain(`GET http://${target}/1 `);
    expect(text()).not.toContain('evil.test');
    expect(events).toContainEqual(
      expect.objectContaining({
        protocol: 'http',
        via: 'proxy',
        name: 'evil.test',
        allowed: false,
        reason: 'conflicting-host',
      }),
    );
  });
});

describe('the filtering resolver', () => {
  async function ask(msg: Buffer): Promise<Buffer | undefined> {
    const udp = createSocket('udp4');
    try {
      return await new Promise((resolve) => {
        const timer = setTimeout(() => {
          resolve(undefined);
        }, 300);
        udp.once('message', (m) => {
          clearTimeout(timer);
          resolve(m);
        });
        udp.send(msg, gateway.endpoints.dns, LOOPBACK);
      });
    } finally {
      udp.close();
    }
  }

  it('records every query: malformed, other types, and names past the budget', async () => {
    await gateway.close();
    await startGateway(2);
    expect(await ask(Buffer.from([1, 2, 3]))).toBeUndefined();
    const txt = await ask(buildQuery(1, 'a.svc.test', 16));
    expect(parseResponse(txt ?? Buffer.alloc(12))).toMatchObject({ rcode: 0, addresses: [] });
    const answers = [];
    for (const n of ['a', 'b', 'c', 'a'])
      answers.push(parseResponse((await ask(buildQuery(2, `${n}.svc.test`))) ?? Buffer.alloc(12)));
    expect(answers.map((a) => a.rcode)).toEqual([0, 0, 3, 0]);
    expect(resolved).toEqual(['a.svc.test', 'b.svc.test', 'a.svc.test']);
    expect(events.map((e) => [e.name, e.queryType, e.allowed, e.reason])).toEqual([
      [undefined, undefined, false, 'bad-request'],
      ['a.svc.test', 'TXT', false, 'query-type-refused'],
      ['a.svc.test', 'A', true, 'allowlisted'],
      ['b.svc.test', 'A', true, 'allowlisted'],
      ['c.svc.test', 'A', false, 'name-rate-exceeded'],
      ['a.svc.test', 'A', true, 'allowlisted'],
    ]);
  });

  it('charges names the gateway resolves for connections to the same budget', async () => {
    await gateway.close();
    await startGateway(1);
    await ask(buildQuery(3, 'a.svc.test'));
    const { socket, answer } = await tunnel(`b.svc.test:${upstream.port}`);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    const tls = tlsConnect({ socket, servername: 'b.svc.test', rejectUnauthorized: false });
    tls.on('error', () => undefined);
    await new Promise((resolve) => socket.once('close', resolve));
    await settle(() => events.some((e) => e.protocol === 'tls'));
    expect(events).toContainEqual(
      expect.objectContaining({
        protocol: 'tls',
        name: 'b.svc.test',
        allowed: false,
        reason: 'name-rate-exceeded',
      }),
    );
    expect(resolved).toEqual(['a.svc.test']);
  });

  it('an answer that arrives after close is dropped, not thrown', async () => {
    await gateway.close();
    let release: (v: string[]) => void = () => undefined;
    gateway = await EgressGateway.start({
      policy: new EgressPolicy({ mode: 'open', allow: [], deny: [], hostAddresses: [] }),
      bindAddress: LOOPBACK,
      interceptPorts: [],
      pinned: [],
      resolve: () =>
        new Promise((resolve) => {
          release = resolve;
        }),
      onEvent: () => undefined,
    });
    const udp = createSocket('udp4');
    udp.send(buildQuery(4, 'slow.test'), gateway.endpoints.dns, LOOPBACK);
    await new Promise((r) => setTimeout(r, 50));
    await gateway.close();
    release([LOOPBACK]);
    await new Promise((r) => setTimeout(r, 50));
    udp.close();
  });
});
