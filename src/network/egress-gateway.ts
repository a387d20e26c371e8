// The egress gateway: the only way out of a sandbox whose posture is `allowlist` or
// `open` (issue 3). It runs in cfh's process, listening on the sandbox network's host-side
// address; the sandbox's netfilter rules send it every TCP connection and DNS query. For
// each it learns the destination (TLS server name, HTTP Host, CONNECT target, or the
// listed address a dedicated listener stands for), asks EgressPolicy, resolves names
// itself, connects to the address it checked, and reports one event per attempt.
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, isIP, Socket, type Server } from 'node:net';
import { inspectFirstBytes, splitHostPort } from './client-hello.js';
import {
  buildResponse,
  DNS_TYPE_A,
  DNS_TYPE_AAAA,
  parseQuery,
  RCODE_NOERROR,
  RCODE_NXDOMAIN,
  RCODE_SERVFAIL,
} from './dns-wire.js';
import type { EgressDecision, EgressPolicy, EgressReason } from './egress-policy.js';
import type { OriginalDestinationLookup } from './original-destination.js';

export interface EgressEvent {
  readonly protocol: 'dns' | 'http' | 'tls' | 'tcp';
  readonly via: 'resolver' | 'transparent' | 'proxy';
  readonly name?: string | undefined;
  readonly address?: string | undefined;
  readonly port?: number | undefined;
  readonly allowed: boolean;
  readonly reason: EgressReason | 'resolve-failed' | 'connect-failed' | 'bad-request';
  readonly rule?: string | undefined;
  readonly bytesOut: number;
  readonly bytesIn: number;
  readonly startedAt: string;
  readonly durationMs: number;
}

export type Resolve = (name: string) => Promise<string[]>;

export interface GatewayOptions {
  readonly policy: EgressPolicy;
  readonly bindAddress: string;
  /** Destination ports intercepted by name (Host header / TLS server name). */
  readonly interceptPorts: readonly number[];
  /** Listed address:port pairs, each with a listener of its own (any TCP protocol). */
  readonly pinned: readonly { readonly address: string; readonly port: number }[];
  readonly resolve: Resolve;
  readonly onEvent: (event: EgressEvent) => void;
  /** Where a connection caught by the catch-all was going (the guard's conntrack table). */
  readonly originalDestination?: OriginalDestinationLookup | undefined;
}

export interface GatewayEndpoints {
  readonly address: string;
  readonly dns: number;
  readonly proxy: number;
  readonly catchAll: number;
  readonly byPort: ReadonlyMap<number, number>;
  readonly pinned: readonly {
    readonly address: string;
    readonly port: number;
    readonly listen: number;
  }[];
}

const FIRST_BYTES_MS = 3000;
const PINNED_FIRST_BYTES_MS = 300;
const CONNECT_TIMEOUT_MS = 10_000;
const MAX_HEAD_BYTES = 16 * 1024;
/** Larger stream buffers mean fewer backpressure round trips on big transfers. */
const RELAY_BUFFER_BYTES = 1024 * 1024;

interface Target {
  readonly port?: number | undefined;
  readonly pinnedAddress?: string | undefined;
}

export class EgressGateway implements AsyncDisposable {
  readonly endpoints: GatewayEndpoints;
  readonly #servers: Server[];
  readonly #udp: UdpSocket;
  readonly #sockets: Set<Socket>;
  #closed = false;

  private constructor(
    endpoints: GatewayEndpoints,
    servers: Server[],
    udp: UdpSocket,
    sockets: Set<Socket>,
  ) {
    this.endpoints = endpoints;
    this.#servers = servers;
    this.#udp = udp;
    this.#sockets = sockets;
  }

  static async start(options: GatewayOptions): Promise<EgressGateway> {
    const servers: Server[] = [];
    const sockets = new Set<Socket>();
    const track = (s: Socket): void => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    };
    const listen = async (handler: (s: Socket) => void): Promise<number> => {
      const server = createServer(
        { pauseOnConnect: false, highWaterMark: RELAY_BUFFER_BYTES },
        (s) => {
          track(s);
          s.on('error', () => undefined);
          handler(s);
        },
      );
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, options.bindAddress, () => {
          resolve();
        });
      });
      const addr = server.address();
      if (addr === null || typeof addr === 'string')
        throw new Error('gateway listener has no port');
      return addr.port;
    };
    try {
      const byPort = new Map<number, number>();
      for (const port of [...new Set(options.interceptPorts)].sort((a, b) => a - b)) {
        byPort.set(port, await listen((s) => void transparent(s, { port }, options, track)));
      }
      const pinned: { address: string; port: number; listen: number }[] = [];
      for (const p of options.pinned) {
        pinned.push({
          ...p,
          listen: await listen(
            (s) => void transparent(s, { port: p.port, pinnedAddress: p.address }, options, track),
          ),
        });
      }
      const catchAll = await listen((s) => void transparent(s, {}, options, track));
      const proxy = await listen((s) => void explicitProxy(s, options, track));
      const udp = createSocket(isIP(options.bindAddress) === 6 ? 'udp6' : 'udp4');
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(0, options.bindAddress, () => {
          resolve();
        });
      });
      udp.on('message', (msg, rinfo) => {
        void answerDns(msg, options).then((reply) => {
          if (reply !== undefined) udp.send(reply, rinfo.port, rinfo.address);
        });
      });
      const gateway = new EgressGateway(
        { address: options.bindAddress, dns: udp.address().port, proxy, catchAll, byPort, pinned },
        servers,
        udp,
        sockets,
      );
      return gateway;
    } catch (error) {
      await Promise.all(servers.map((s) => closeServer(s)));
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#udp.close();
    // Open connections end with the gateway: the sandbox keeps no egress (fail closed).
    for (const s of this.#sockets) s.destroy();
    await Promise.all(this.#servers.map((s) => closeServer(s)));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => {
      resolve();
    });
  });
}

/** Waits for the client's first bytes, or for `ms` of silence (a server-speaks-first protocol). */
function firstBytes(socket: Socket, ms: number): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const done = (): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', done);
      socket.off('close', done);
      socket.pause();
      resolve(Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      const all = Buffer.concat(chunks);
      // A whole TLS record, or an HTTP head, or enough to give up looking.
      const tlsLen = all[0] === 0x16 && all.length >= 5 ? all.readUInt16BE(3) + 5 : 0;
      if (
        (tlsLen > 0 && all.length >= tlsLen) ||
        all.includes('\r\n\r\n') ||
        all.length >= MAX_HEAD_BYTES
      )
        done();
    };
    const timer = setTimeout(done, ms);
    socket.on('data', onData);
    socket.once('end', done);
    socket.once('close', done);
  });
}

async function transparent(
  socket: Socket,
  target: Target,
  options: GatewayOptions,
  track: (s: Socket) => void,
): Promise<void> {
  const started = Date.now();
  const head = await firstBytes(
    socket,
    target.pinnedAddress === undefined ? FIRST_BYTES_MS : PINNED_FIRST_BYTES_MS,
  );
  const seen = inspectFirstBytes(head);
  const protocol = seen.protocol === 'other' ? 'tcp' : seen.protocol;
  let name = seen.protocol === 'other' ? undefined : seen.name;
  let address = target.pinnedAddress;
  if (name !== undefined && isIP(name) !== 0) {
    address ??= name;
    name = undefined;
  }
  let port = target.port;
  if (port === undefined && options.originalDestination !== undefined) {
    const original = await options.originalDestination(
      socket.remoteAddress ?? '',
      socket.remotePort ?? 0,
    );
    if (original !== undefined) {
      // The address the client actually targeted: checked as such, never re-resolved.
      port = original.port;
      address = original.address;
    }
  }
  if (port === undefined || (name === undefined && address === undefined)) {
    // Caught by the catch-all: a port nobody listed, or no way to tell the destination.
    const reason: EgressReason = port === undefined ? 'not-allowlisted' : 'no-destination';
    options.onEvent(
      event(protocol, 'transparent', { name, address, port }, { allowed: false, reason }, started),
    );
    socket.destroy();
    return;
  }
  await forward(
    socket,
    head,
    { protocol, via: 'transparent', name, address, port },
    options,
    started,
    track,
  );
}

async function explicitProxy(
  socket: Socket,
  options: GatewayOptions,
  track: (s: Socket) => void,
): Promise<void> {
  const started = Date.now();
  const head = await firstBytes(socket, FIRST_BYTES_MS);
  const end = head.indexOf('\r\n\r\n');
  const line = head.subarray(0, Math.max(0, head.indexOf('\r\n'))).toString('latin1');
  const connectMatch = /^CONNECT (\S+) HTTP\/1\.[01]$/.exec(line);
  const absolute = /^[A-Z]+ http:\/\/([^/\s]+)\S* HTTP\/1\.[01]$/.exec(line);
  const hostPort = connectMatch?.[1] ?? absolute?.[1];
  if (end < 0 || hostPort === undefined) {
    options.onEvent(event('http', 'proxy', {}, { allowed: false, reason: 'bad-request' }, started));
    socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  const split = splitHostPort(hostPort);
  const port = split.port ?? (connectMatch ? 443 : 80);
  const literal = isIP(split.name) !== 0;
  const dest = {
    protocol: connectMatch ? ('tls' as const) : ('http' as const),
    via: 'proxy' as const,
    name: literal ? undefined : split.name.toLowerCase(),
    address: literal ? split.name : undefined,
    port,
  };
  if (connectMatch) {
    await forward(
      socket,
      head.subarray(end + 4),
      dest,
      options,
      started,
      track,
      () => 'HTTP/1.1 200 Connection Established\r\n\r\n',
    );
  } else {
    await forward(socket, head, dest, options, started, track);
  }
}

interface Destination {
  readonly protocol: EgressEvent['protocol'];
  readonly via: EgressEvent['via'];
  readonly name: string | undefined;
  readonly address: string | undefined;
  readonly port: number;
}

async function decide(
  dest: Destination,
  options: GatewayOptions,
): Promise<{
  decision: EgressDecision | { allowed: false; reason: 'resolve-failed' };
  address?: string | undefined;
}> {
  if (dest.name === undefined) {
    const address = dest.address ?? '';
    return { decision: options.policy.decideConnection({ address, port: dest.port }), address };
  }
  const byName = options.policy.decideName(dest.name, dest.port);
  if (!byName.allowed)
    return {
      decision: byName.reason === 'dns-refused' ? { ...byName, reason: 'not-allowlisted' } : byName,
    };
  let addresses: string[];
  if (dest.address !== undefined) {
    addresses = [dest.address];
  } else {
    try {
      addresses = await options.resolve(dest.name);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) return { decision: { allowed: false, reason: 'resolve-failed' } };
  }
  let first: EgressDecision | undefined;
  for (const address of addresses) {
    const d = options.policy.decideConnection({ name: dest.name, address, port: dest.port });
    if (d.allowed) return { decision: d, address };
    first ??= d;
  }
  return {
    decision: first ?? { allowed: false, reason: 'not-allowlisted' },
    address: addresses[0],
  };
}

async function forward(
  client: Socket,
  head: Buffer,
  dest: Destination,
  options: GatewayOptions,
  started: number,
  track: (s: Socket) => void,
  accepted?: () => string,
): Promise<void> {
  const { decision, address } = await decide(dest, options);
  const where = { name: dest.name, address, port: dest.port };
  if (!decision.allowed || address === undefined) {
    options.onEvent(event(dest.protocol, dest.via, where, decision, started));
    if (accepted) client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
    else client.destroy();
    return;
  }
  // Connect to the address that was checked: no second resolution, no rebinding window.
  const upstream = new Socket({ highWaterMark: RELAY_BUFFER_BYTES } as ConstructorParameters<
    typeof Socket
  >[0]);
  upstream.setTimeout(CONNECT_TIMEOUT_MS);
  upstream.connect({ host: address, port: dest.port });
  track(upstream);
  let connected = false;
  let reported = false;
  const report = (reason?: 'connect-failed'): void => {
    if (reported) return;
    reported = true;
    const outcome = reason === undefined ? decision : { allowed: false as const, reason };
    options.onEvent({
      ...event(dest.protocol, dest.via, where, outcome, started),
      // The sockets count for us: no per-chunk listener on the relay's hot path.
      bytesOut: connected ? upstream.bytesWritten : 0,
      bytesIn: upstream.bytesRead,
    });
  };
  upstream.once('connect', () => {
    connected = true;
    upstream.setTimeout(0);
    if (accepted) client.write(accepted());
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  });
  const fail = (): void => {
    if (!connected) {
      report('connect-failed');
      if (accepted) client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
      else client.destroy();
    }
    upstream.destroy();
  };
  upstream.once('timeout', fail);
  upstream.once('error', fail);
  await new Promise<void>((resolve) => {
    let open = 2;
    const closed = (): void => {
      open -= 1;
      if (open === 0) resolve();
    };
    client.once('close', () => {
      upstream.end();
      closed();
    });
    upstream.once('close', () => {
      client.end();
      closed();
    });
  });
  report();
}

async function answerDns(msg: Buffer, options: GatewayOptions): Promise<Buffer | undefined> {
  const started = Date.now();
  const q = parseQuery(msg);
  if (q === undefined) return undefined;
  const decision = options.policy.decideName(q.name);
  if (!decision.allowed) {
    options.onEvent(event('dns', 'resolver', { name: q.name, port: 53 }, decision, started));
    return buildResponse(q, RCODE_NXDOMAIN);
  }
  if (q.type !== DNS_TYPE_A && q.type !== DNS_TYPE_AAAA) return buildResponse(q, RCODE_NOERROR);
  try {
    const addresses = await options.resolve(q.name);
    options.onEvent(
      event(
        'dns',
        'resolver',
        { name: q.name, address: addresses.join(','), port: 53 },
        decision,
        started,
      ),
    );
    return buildResponse(q, addresses.length === 0 ? RCODE_NXDOMAIN : RCODE_NOERROR, addresses);
  } catch {
    options.onEvent(
      event(
        'dns',
        'resolver',
        { name: q.name, port: 53 },
        { allowed: false, reason: 'resolve-failed' },
        started,
      ),
    );
    return buildResponse(q, RCODE_SERVFAIL);
  }
}

function event(
  protocol: EgressEvent['protocol'],
  via: EgressEvent['via'],
  where: { name?: string | undefined; address?: string | undefined; port?: number | undefined },
  decision: { allowed: boolean; reason: EgressEvent['reason']; rule?: string | undefined },
  started: number,
): EgressEvent {
  return {
    protocol,
    via,
    name: where.name,
    address: where.address,
    port: where.port,
    allowed: decision.allowed,
    reason: decision.reason,
    rule: decision.rule,
    bytesOut: 0,
    bytesIn: 0,
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
  };
}
