// One plain-HTTP connection, one name (AH-CONT-4). The gateway decides a
// connection on its first request's Host; every later request on it is framed
// (Content-Length, chunked) and must state the same name, so a second pipelined request, a
// duplicate Host, an absolute-form target naming another host, or framing an upstream
// could read differently (CL and TE together, obs-fold, bare LF) never reaches the
// allowed upstream with a name nobody allowed. An Upgrade switches the connection to
// opaque only once the upstream answers 101. Each refusal is an `egress` event.
//
// Local servers only: lenient raw HTTP upstreams on 0.0.0.0 (reached as the host's docker0
// address, listed) that record every byte that reaches them; a DNS server on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dockerBridgeAddress,
  startDnsServer,
  startRawHttpTarget,
  type DnsServer,
  type RawHttpTarget,
} from './local-servers.js';
import {
  engineRuntimes,
  marker,
  RUNSC_HOST_MISSING,
  useNetHarness,
  type NetRun,
} from './network-harness.js';

let hostIp: string;
let raw: RawHttpTarget;
let up: RawHttpTarget;
let dns: DnsServer;
let runtimes: string[] = [];
const net = useNetHarness('net-http', () => ({
  CFH_EGRESS_RESOLVER: `${dns.address}:${dns.port}`,
}));

beforeAll(async () => {
  hostIp = dockerBridgeAddress();
  raw = await startRawHttpTarget('raw', { upgrade: false });
  up = await startRawHttpTarget('up', { upgrade: true });
  dns = await startDnsServer({ 'api.cfh.test': hostIp });
  runtimes = await engineRuntimes();
});

afterAll(async () => {
  await Promise.all([raw.close(), up.close(), dns.close()]);
});

const get = (path: string, host: string, extra = ''): string =>
  `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;

/** name → [payload files in order, target]; one connection each. */
function cases(): Record<string, { files: string[]; target: 'raw' | 'up' }> {
  const api = `api.cfh.test:${raw.port}`;
  const apiUp = `api.cfh.test:${up.port}`;
  const inner = get('/inner', 'inner.cfh.test');
  const lengthBody = get('/x', 'body.cfh.test');
  return {
    pipelined: { files: [get('/p1', api) + get('/p2', 'other.cfh.test')], target: 'raw' },
    keepalive: { files: [get('/k1', api), get('/k2', api)], target: 'raw' },
    duplicate: {
      files: [`GET /d HTTP/1.1\r\nHost: ${api}\r\nHost: dup.cfh.test\r\n\r\n`],
      target: 'raw',
    },
    absolute: {
      files: [`GET http://absolute.cfh.test/a HTTP/1.1\r\nHost: ${api}\r\n\r\n`],
      target: 'raw',
    },
    clte: {
      files: [
        `POST /s HTTP/1.1\r\nHost: ${api}\r\nContent-Length: 48\r\nTransfer-Encoding: chunked\r\n\r\n` +
          `0\r\n\r\n${get('/smuggled', 'smuggled.cfh.test')}`,
      ],
      target: 'raw',
    },
    fold: {
      files: [`GET /f HTTP/1.1\r\nHost: ${api}\r\nX-Pad: a\r\n Host: folded.cfh.test\r\n\r\n`],
      target: 'raw',
    },
    chunked: {
      files: [
        `POST /c HTTP/1.1\r\nHost: ${api}\r\nTransfer-Encoding: chunked\r\n\r\n` +
          `${inner.length.toString(16)}\r\n${inner}\r\n0\r\n\r\n` +
          get('/c2', 'afterchunk.cfh.test'),
      ],
      target: 'raw',
    },
    length: {
      files: [
        `POST /l HTTP/1.1\r\nHost: ${api}\r\nContent-Length: ${lengthBody.length}\r\n\r\n${lengthBody}`,
      ],
      target: 'raw',
    },
    barelf: {
      files: [get('/b1', api) + 'GET /b2 HTTP/1.1\nHost: barelf.cfh.test\n\n'],
      target: 'raw',
    },
    lowercase: { files: [get('/m1', api) + get('/m2', 'x').replace('GET', 'get')], target: 'raw' },
    upgraded: {
      files: [
        get('/u', apiUp, 'Connection: Upgrade\r\nUpgrade: cfh-test\r\n'),
        'opaque-after-101 Host: tunnel.cfh.test\r\n\r\n',
      ],
      target: 'up',
    },
    h2c: {
      files: [
        get('/h2c', apiUp, 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n'),
        'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
      ],
      target: 'up',
    },
    declined: {
      files: [
        get('/ud', api, 'Connection: Upgrade\r\nUpgrade: cfh-test\r\n'),
        get('/ud2', 'declined.cfh.test'),
      ],
      target: 'raw',
    },
  };
}

describe.each(['runc', 'runsc'] as const)('requests on one connection under %s', (runtime) => {
  let run: NetRun;
  let skip = '';
  let rawBefore = 0;
  let upBefore = 0;

  beforeAll(async () => {
    if (runtime === 'runsc' && !runtimes.includes('runsc-host')) {
      skip = RUNSC_HOST_MISSING;
      return;
    }
    rawBefore = raw.received.length;
    upBefore = up.received.length;
    const lines: string[] = [];
    for (const [label, c] of Object.entries(cases())) {
      const files: string[] = [];
      for (const [i, body] of c.files.entries())
        files.push(await net.payload(`${label}-${i}.http`, body));
      const port = c.target === 'raw' ? raw.port : up.port;
      lines.push(`py send ${label} api.cfh.test ${port} ${files.join(' ')}`);
    }
    // The same through the by-port listener (the run gateway's address, port intercepted
    // because an entry names it): the name, not a listed address, chose the upstream.
    const gwFile = await net.payload(
      'bygw.http',
      get('/g1', `api.cfh.test:${raw.port}`) + get('/g2', 'bygw.cfh.test'),
    );
    lines.push(`py send bygw $GW ${raw.port} ${gwFile}`);
    run = await net.run({
      mode: 'allowlist',
      runtime,
      allow: [
        `api.cfh.test:${raw.port}`,
        `api.cfh.test:${up.port}`,
        `${hostIp}:${raw.port}`,
        `${hostIp}:${up.port}`,
      ],
      script: [...lines, 'echo "@@ done"'].join('\n'),
    });
  });

  const guard = (ctx: { skip: (note?: string) => void }): void => {
    if (skip !== '') ctx.skip(skip);
  };
  const rawText = (): string => Buffer.concat(raw.received.slice(rawBefore)).toString('latin1');
  const upText = (): string => Buffer.concat(up.received.slice(upBefore)).toString('latin1');
  const refusals = (): Record<string, unknown>[] =>
    run.egress.filter((e) => e.protocol === 'http' && e.allowed === false);
  const refused = (reason: string, name?: string): void => {
    expect(refusals()).toContainEqual(
      expect.objectContaining({ reason, ...(name === undefined ? {} : { name }) }),
    );
  };

  it('runs every case to its end', (ctx) => {
    guard(ctx);
    expect(run.result.exitCode, run.result.stderr).toBe(0);
    expect(run.markers.has('done'), run.result.stdout).toBe(true);
  });

  it('serves several requests for the allowed name on one connection (control)', (ctx) => {
    guard(ctx);
    expect(marker(run, 'keepalive').statuses).toBe('200,200');
    expect(rawText()).toContain('GET /k2 HTTP/1.1');
  });

  it('refuses a pipelined request naming another host, after serving the first', (ctx) => {
    guard(ctx);
    for (const [label, name] of [
      ['pipelined', 'other.cfh.test'],
      ['bygw', 'bygw.cfh.test'],
    ] as const) {
      expect(marker(run, label).statuses, label).toBe('200');
      refused('conflicting-host', name);
      expect(rawText()).not.toContain(name);
    }
    expect(rawText()).toContain('GET /p1 ');
    expect(rawText()).toContain('GET /g1 ');
  });

  it('refuses a duplicate Host header and an absolute-form target naming another host', (ctx) => {
    guard(ctx);
    for (const [label, name] of [
      ['duplicate', 'dup.cfh.test'],
      ['absolute', 'absolute.cfh.test'],
    ] as const) {
      expect(marker(run, label).statuses, label).toBe('-');
      refused('conflicting-host', name);
      expect(rawText()).not.toContain(name);
    }
    expect(rawText()).not.toContain('GET /d ');
  });

  it('refuses framing an upstream could read another way: CL with TE, obs-fold, bare LF, a lowercase method', (ctx) => {
    guard(ctx);
    expect(marker(run, 'clte').statuses).toBe('-');
    expect(marker(run, 'fold').statuses).toBe('-');
    expect(marker(run, 'barelf').statuses).toBe('200');
    expect(marker(run, 'lowercase').statuses).toBe('200');
    const text = rawText();
    for (const never of ['smuggled.cfh.test', 'folded.cfh.test', 'barelf.cfh.test', 'get /m2'])
      expect(text, never).not.toContain(never);
    // Identical refusals within a second are one event with a count (egress-evidence.ts).
    const badRequests = refusals()
      .filter((e) => e.reason === 'bad-request')
      .reduce((n, e) => n + (typeof e.count === 'number' ? e.count : 1), 0);
    expect(badRequests).toBeGreaterThanOrEqual(5);
  });

  it('passes a body that looks like a request, and checks the request after it', (ctx) => {
    guard(ctx);
    expect(marker(run, 'length').statuses).toBe('200');
    expect(marker(run, 'chunked').statuses).toBe('200');
    const text = rawText();
    expect(text).toContain('Host: body.cfh.test');
    expect(text).toContain('Host: inner.cfh.test');
    expect(text).not.toContain('afterchunk.cfh.test');
    refused('conflicting-host', 'afterchunk.cfh.test');
    for (const name of ['body.cfh.test', 'inner.cfh.test'])
      expect(refusals().filter((e) => e.name === name)).toEqual([]);
  });

  it('an accepted Upgrade makes the connection opaque; a declined one keeps checking', (ctx) => {
    guard(ctx);
    expect(marker(run, 'upgraded').statuses).toBe('101');
    expect(upText()).toContain('opaque-after-101');
    // Not to h2c: HTTP/2 streams would each name a host, unframed.
    expect(marker(run, 'h2c').statuses).toBe('-');
    expect(upText()).not.toContain('/h2c');
    expect(marker(run, 'declined').statuses).toBe('200');
    refused('conflicting-host', 'declined.cfh.test');
    expect(rawText()).not.toContain('declined.cfh.test');
  });

  it('records the connection that carried the allowed requests, with its bytes', (ctx) => {
    guard(ctx);
    const allowed = run.egress.filter(
      (e) => e.protocol === 'http' && e.allowed === true && e.name === 'api.cfh.test',
    );
    // Identical attempts within a second are one event with a count (egress-evidence.ts).
    const attempts = allowed.reduce((n, e) => n + (typeof e.count === 'number' ? e.count : 1), 0);
    expect(attempts).toBeGreaterThanOrEqual(9);
    for (const e of allowed) expect(e.bytesOut).toBeGreaterThan(0);
  });
});
