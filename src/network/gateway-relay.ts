// The gateway's TCP side: one connection from the sandbox, from its first bytes
// to the end of the relay. The listener it arrived on says what is known (a destination
// port, a listed address, a CONNECT target); the first bytes give the name (TLS server
// name, HTTP Host); the guard's conntrack table gives the address and port a catch-all
// connection was going to. The decision is the policy's; the gateway connects only to the
// address it checked, and plain HTTP goes through request framing so every request on the
// connection states the host the connection was allowed for.
import { isIP, Socket } from 'node:net';
import { inspectFirstBytes, splitHostPort } from './client-hello.js';
import { egressEvent, type EgressEvent, type Outcome, type Where } from './egress-event.js';
import type { GatewayContext } from './gateway-context.js';
import { decide, type Destination } from './gateway-decide.js';
import { RequestFraming, type Fed, type FramingRefusal } from './http-framing.js';
import type { OriginalDestinationLookup } from './original-destination.js';

export interface RelayContext extends GatewayContext {
  readonly track: (s: Socket) => void;
  /** Where a connection caught by the catch-all was going (the guard's conntrack table). */
  readonly originalDestination?: OriginalDestinationLookup | undefined;
}

/** What the listener a connection arrived on knows about its destination. */
export interface Arrival {
  readonly via: EgressEvent['via'];
  /** The destination port, when the listener stands for one. */
  readonly port?: number | undefined;
  /** A listed address (pinned listener), or a CONNECT target given as an address. */
  readonly address?: string | undefined;
  /** A CONNECT target given as a name: the tunnel's own bytes must not name another. */
  readonly name?: string | undefined;
  /** How long to wait for the client to speak first. */
  readonly firstBytesMs: number;
}

export const FIRST_BYTES_MS = 3000;
export const SHORT_FIRST_BYTES_MS = 300;
const CONNECT_TIMEOUT_MS = 10_000;
const MAX_FIRST_BYTES = 16 * 1024;
/** Larger stream buffers mean fewer backpressure round trips on big transfers. */
export const RELAY_BUFFER_BYTES = 1024 * 1024;
/** Each connection's read buffer for the answer's bytes (reused for every read). */
const RELAY_READ_BYTES = 256 * 1024;

/**
 * The answer's direction, upstream → client, without a Buffer per read: the upstream socket
 * reads into one buffer (`onread`), which is written to the client as it is. A write the
 * kernel took whole returns with nothing queued, and the buffer is free for the next read;
 * one that is queued still points into it, so reading pauses until that write is done.
 */
function answerInto(client: Socket): {
  onRead: (n: number, buf: Buffer) => boolean;
  watch: ((chunk: Buffer) => void) | undefined;
  resume: () => void;
} {
  const state = {
    watch: undefined as ((chunk: Buffer) => void) | undefined,
    resume: (): void => undefined,
    onRead: (n: number, buf: Buffer): boolean => {
      const chunk = buf.subarray(0, n);
      state.watch?.(chunk);
      if (client.destroyed) return true;
      client.write(chunk, () => {
        if (paused) {
          paused = false;
          state.resume();
        }
      });
      paused = client.writableLength > 0;
      return !paused;
    },
  };
  let paused = false;
  return state;
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
      // A whole TLS record, or an HTTP head (a bare-LF one too, to refuse it at once), or
      // enough to give up looking.
      const tlsLen = all[0] === 0x16 && all.length >= 5 ? all.readUInt16BE(3) + 5 : 0;
      if (
        (tlsLen > 0 && all.length >= tlsLen) ||
        all.includes('\r\n\r\n') ||
        all.includes('\n\n') ||
        all.length >= MAX_FIRST_BYTES
      )
        done();
    };
    const timer = setTimeout(done, ms);
    socket.on('data', onData);
    socket.once('end', done);
    socket.once('close', done);
  });
}

/** One connection, from its first bytes (`head`, when the caller read them) on. */
export async function relayConnection(
  socket: Socket,
  arrival: Arrival,
  ctx: RelayContext,
  head?: Buffer,
): Promise<void> {
  const started = Date.now();
  const bytes = head ?? (await firstBytes(socket, arrival.firstBytesMs));
  const seen = inspectFirstBytes(bytes);
  const protocol = seen.protocol === 'other' ? 'tcp' : seen.protocol;
  const refuse = (where: Where, outcome: Outcome): void => {
    ctx.onEvent(egressEvent(protocol, arrival.via, where, outcome, started));
    socket.destroy();
  };
  let framing: RequestFraming | undefined;
  let initial: Fed = { forward: bytes.length > 0 ? [bytes] : [] };
  let stated: string | undefined;
  if (seen.protocol === 'http') {
    framing = new RequestFraming();
    initial = framing.push(bytes);
    if (framing.requests === 0) {
      // The first request is the decision's basis: it must be whole and well-formed.
      const refusal = initial.refusal ?? {
        reason: 'bad-request' as const,
        detail: 'no whole request head in the first bytes',
      };
      refuse(
        { name: refusal.name, address: arrival.address, port: arrival.port },
        { allowed: false, reason: refusal.reason },
      );
      return;
    }
    stated = framing.host;
  } else if (seen.protocol === 'tls') {
    stated = seen.name;
  }
  let name = stated !== undefined && isIP(stated) === 0 ? stated : undefined;
  let address = arrival.address;
  if (arrival.name !== undefined) {
    // A CONNECT by name: the gateway resolves that name; the tunnel may not name another.
    if (name !== undefined && name !== arrival.name) {
      refuse({ name, port: arrival.port }, { allowed: false, reason: 'conflicting-host' });
      return;
    }
    name = arrival.name;
  } else if (stated !== undefined && name === undefined) {
    address ??= stated; // an address in Host or the server name, checked as such
  }
  let port = arrival.port;
  if (port === undefined && ctx.originalDestination !== undefined) {
    const original = await ctx.originalDestination(
      socket.remoteAddress ?? '',
      socket.remotePort ?? 0,
      socket.localPort ?? 0,
    );
    if (original !== undefined) {
      // The address the client actually targeted: checked as such, never re-resolved.
      port = original.port;
      address = original.address;
    }
  }
  if (port === undefined || (name === undefined && address === undefined)) {
    // Caught by the catch-all: a port nobody listed, or no way to tell the destination.
    refuse(
      { name, address, port },
      { allowed: false, reason: port === undefined ? 'not-allowlisted' : 'no-destination' },
    );
    return;
  }
  await forward(
    socket,
    initial,
    framing,
    { protocol, via: arrival.via, name, address, port },
    ctx,
    started,
  );
}

/**
 * The CONNECT listener: `CONNECT host:port` opens a tunnel whose own first bytes are then
 * judged like a transparent connection's; an absolute-form request (`GET http://host/`) is
 * relayed as plain HTTP to that host, framed like any other.
 */
export async function explicitProxy(socket: Socket, ctx: RelayContext): Promise<void> {
  const started = Date.now();
  const head = await firstBytes(socket, FIRST_BYTES_MS);
  const end = head.indexOf('\r\n\r\n');
  const line = head.subarray(0, Math.max(0, head.indexOf('\r\n'))).toString('latin1');
  const connectMatch = /^CONNECT (\S+) HTTP\/1\.[01]$/.exec(line);
  const absolute = /^[A-Z]+ http:\/\/([^/\s]+)\S* HTTP\/1\.[01]$/.exec(line);
  const hostPort = connectMatch?.[1] ?? absolute?.[1];
  const badRequest = (): void => {
    ctx.onEvent(
      egressEvent('http', 'proxy', {}, { allowed: false, reason: 'bad-request' }, started),
    );
    socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
  };
  if (end < 0 || hostPort === undefined) {
    badRequest();
    return;
  }
  const split = splitHostPort(hostPort);
  const port = split.port ?? (connectMatch ? 443 : 80);
  const literal = isIP(split.name) !== 0;
  const target = literal
    ? { address: split.name, name: undefined }
    : { address: undefined, name: split.name.toLowerCase() };
  if (connectMatch === null) {
    await relayConnection(socket, { via: 'proxy', port, ...target, firstBytesMs: 0 }, ctx, head);
    return;
  }
  // Refused targets get a 403 before any tunnel; allowed ones a 200, then the tunnel's
  // first bytes decide (a server-speaks-first protocol gets a short wait).
  const pre = literal
    ? ctx.policy.decideConnection({ address: split.name, port })
    : ctx.policy.decideName(split.name, port);
  if (!pre.allowed) {
    ctx.onEvent(
      egressEvent(
        'tls',
        'proxy',
        { ...target, port },
        pre.reason === 'dns-refused' ? { ...pre, reason: 'not-allowlisted' } : pre,
        started,
      ),
    );
    socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  const rest = head.subarray(end + 4);
  const tunnel = { via: 'proxy' as const, port, ...target, firstBytesMs: SHORT_FIRST_BYTES_MS };
  if (rest.length > 0) await relayConnection(socket, tunnel, ctx, rest);
  else {
    socket.resume();
    await relayConnection(socket, tunnel, ctx);
  }
}

async function forward(
  client: Socket,
  initial: Fed,
  framing: RequestFraming | undefined,
  dest: Destination,
  ctx: RelayContext,
  started: number,
): Promise<void> {
  const { decision, address } = await decide(dest, ctx);
  const where = { name: dest.name, address, port: dest.port };
  if (!decision.allowed || address === undefined) {
    ctx.onEvent(egressEvent(dest.protocol, dest.via, where, decision, started));
    client.destroy();
    return;
  }
  // Connect to the address that was checked: no second resolution, no rebinding window.
  // The answer's bytes are read into one buffer of the connection's (no allocation per
  // read) and written on from there: see answerInto.
  const answer = answerInto(client);
  const upstream = new Socket({
    highWaterMark: RELAY_BUFFER_BYTES,
    onread: { buffer: Buffer.allocUnsafe(RELAY_READ_BYTES), callback: answer.onRead },
  } as ConstructorParameters<typeof Socket>[0]);
  upstream.once('end', () => client.end());
  upstream.setTimeout(CONNECT_TIMEOUT_MS);
  upstream.connect({ host: address, port: dest.port });
  ctx.track(upstream);
  let connected = false;
  let reported = false;
  const report = (reason?: 'connect-failed'): void => {
    if (reported) return;
    reported = true;
    const outcome = reason === undefined ? decision : { allowed: false as const, reason };
    ctx.onEvent({
      ...egressEvent(dest.protocol, dest.via, where, outcome, started),
      // The sockets count for us: no per-chunk listener on the relay's hot path.
      bytesOut: connected ? upstream.bytesWritten : 0,
      bytesIn: upstream.bytesRead,
    });
  };
  // A request the framing refused: its own event; the requests before it keep their
  // answers (the upstream sees the end of the client's bytes), nothing after it is sent.
  const stop = (refusal: FramingRefusal): void => {
    ctx.onEvent(
      egressEvent(
        'http',
        dest.via,
        { name: refusal.name, address, port: dest.port },
        { allowed: false, reason: refusal.reason },
        Date.now(),
      ),
    );
    client.pause();
    client.removeAllListeners('data');
    upstream.end();
  };
  let draining = false;
  const send = (fed: Fed): void => {
    for (const b of fed.forward) {
      if (!upstream.write(b) && !draining) {
        draining = true;
        client.pause();
        upstream.once('drain', () => {
          draining = false;
          client.resume();
        });
      }
    }
    if (fed.refusal !== undefined) stop(fed.refusal);
  };
  upstream.once('connect', () => {
    connected = true;
    upstream.setTimeout(0);
    send(initial);
    answer.resume = () => upstream.resume();
    if (initial.refusal !== undefined) return;
    if (framing === undefined) {
      client.pipe(upstream);
    } else {
      client.on('data', (chunk: Buffer) => {
        send(framing.push(chunk));
      });
      client.once('end', () => upstream.end());
      if (framing.switchPending) {
        // Only the status line of the answer to a switch request is read.
        answer.watch = (chunk: Buffer): void => {
          // A copy: the read buffer is reused, and the framing may keep what it was given.
          send(framing.upstream(Buffer.from(chunk)));
          if (!framing.switchPending) answer.watch = undefined;
        };
      }
    }
    client.resume();
  });
  const fail = (): void => {
    if (!connected) {
      report('connect-failed');
      client.destroy();
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
