// A unix-socket proxy to the real engine that records what cfh asks it: every HTTP request
// with a JSON body and the JSON the engine answered, on each connection until it is
// hijacked (exec start, attach) or becomes a stream. Bytes are forwarded unchanged. Tests
// point cfh at it with DOCKER_HOST=unix://FILE to check the engine's side of a claim (the
// containers cfh created and the execs it ran in them), not cfh's own account of it.
import { createConnection, createServer, type Socket } from 'node:net';

export interface EngineExchange {
  readonly method: string;
  /** Without the API version prefix: `/containers/create?name=...`. */
  readonly path: string;
  readonly request: unknown;
  /** The engine's JSON answer; undefined for a stream, a hijack or a body that is not JSON. */
  response?: unknown;
}

export interface EngineRecorder {
  readonly socket: string;
  readonly exchanges: readonly EngineExchange[];
  close(): Promise<void>;
}

interface Message {
  readonly head: string;
  readonly body: Buffer;
}

// One HTTP/1.1 message from the front of `buf`: its head and body (Content-Length or
// chunked), or undefined while incomplete. `noBody`: a request without either has none.
function takeMessage(buf: Buffer): { message: Message; rest: Buffer } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = buf.subarray(0, end).toString('latin1');
  let at = end + 4;
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length !== null) {
    const n = Number(length[1]);
    if (buf.length < at + n) return undefined;
    return { message: { head, body: buf.subarray(at, at + n) }, rest: buf.subarray(at + n) };
  }
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head))
    return { message: { head, body: Buffer.alloc(0) }, rest: buf.subarray(at) };
  const parts: Buffer[] = [];
  for (;;) {
    const line = buf.indexOf('\r\n', at);
    if (line < 0) return undefined;
    const size = parseInt(buf.subarray(at, line).toString('latin1'), 16);
    if (buf.length < line + 2 + size + 2) return undefined;
    if (size === 0)
      return { message: { head, body: Buffer.concat(parts) }, rest: buf.subarray(line + 4) };
    parts.push(buf.subarray(line + 2, line + 2 + size));
    at = line + 2 + size + 2;
  }
}

const json = (body: Buffer): unknown => {
  try {
    return body.length === 0 ? undefined : (JSON.parse(body.toString('utf8')) as unknown);
  } catch {
    return undefined;
  }
};

// Requests after which the connection carries a stream, not messages.
const STREAMING = /\/(exec\/[^/]+\/start|attach|events|logs|stats)\b|\/wait\b/;

function record(client: Socket, upstream: Socket, exchanges: EngineExchange[]): void {
  let up: Buffer = Buffer.alloc(0);
  let down: Buffer = Buffer.alloc(0);
  let parsing = true;
  const waiting: EngineExchange[] = [];
  client.on('data', (chunk: Buffer) => {
    upstream.write(chunk);
    if (!parsing) return;
    up = Buffer.concat([up, chunk]);
    for (let m = takeMessage(up); m !== undefined && parsing; m = takeMessage(up)) {
      up = m.rest;
      const [method = '', target = ''] = m.message.head.split(' ');
      const exchange: EngineExchange = {
        method,
        path: target.replace(/^\/v\d+\.\d+/, ''),
        request: json(m.message.body),
      };
      exchanges.push(exchange);
      waiting.push(exchange);
      if (STREAMING.test(exchange.path) || /\r\nupgrade:/i.test(m.message.head)) parsing = false;
    }
  });
  upstream.on('data', (chunk: Buffer) => {
    client.write(chunk);
    down = Buffer.concat([down, chunk]);
    for (let m = takeMessage(down); m !== undefined; m = takeMessage(down)) {
      down = m.rest;
      const exchange = waiting.shift();
      if (exchange === undefined || !parsing) {
        down = Buffer.alloc(0);
        return;
      }
      exchange.response = json(m.message.body);
    }
  });
}

export async function startEngineRecorder(
  file: string,
  engine = '/var/run/docker.sock',
): Promise<EngineRecorder> {
  const exchanges: EngineExchange[] = [];
  const sockets: Socket[] = [];
  // Half-open both ways: an attach ends its stdin (a FIN) and still reads the output.
  const server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = createConnection({ path: engine, allowHalfOpen: true });
    sockets.push(client, upstream);
    record(client, upstream, exchanges);
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(file, resolve));
  return {
    socket: file,
    exchanges,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
