// Servers the network tests start on this machine, and nothing else: every destination a
// sandbox is pointed at is one of these. An HTTP server
// that names itself and records what reached it, a raw TCP listener that records
// connections, a lenient raw HTTP upstream that records every byte, a DNS server on
// 127.0.0.1 answering from a fixed map (the egress gateway's upstream, via
// CFH_EGRESS_RESOLVER), a UDP "rogue resolver" that records any packet, and a "far" network
// namespace the test creates (addresses on this machine that are neither private nor the
// host's). The host's docker0 address comes from the kernel.
import { execa } from 'execa';
import { randomBytes, randomInt } from 'node:crypto';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { createInterface } from 'node:readline';
import {
  buildResponse,
  DNS_TYPE_A,
  DNS_TYPE_AAAA,
  parseQuery,
  RCODE_NOERROR,
  RCODE_NXDOMAIN,
} from '../../src/network/dns-wire.js';
import { interfaceIpv4 } from '../../src/network/host-addresses.js';

/**
 * The host's docker0 address, from the kernel as the product reads host addresses (never
 * the engine's record of the default bridge, which a fresh engine leaves without a gateway).
 */
export function dockerBridgeAddress(): string {
  const address = interfaceIpv4('docker0')[0];
  if (address === undefined) throw new Error('the kernel shows no IPv4 address on docker0');
  return address;
}

export interface Closable {
  close(): Promise<void>;
}

function portOf(address: ReturnType<TcpServer['address']>): number {
  if (address === null || typeof address === 'string') throw new Error('listener has no port');
  return address.port;
}

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly host: string | undefined;
  /** Every Host header of the request, as sent (a duplicate shows here). */
  readonly hosts: readonly string[];
  readonly remote: string | undefined;
}

export interface HttpTarget extends Closable {
  readonly name: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Every TCP connection accepted, whether or not a request followed. */
  readonly connections: number;
}

function hostHeaders(raw: readonly string[]): string[] {
  const hosts: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2)
    if (raw[i]?.toLowerCase() === 'host') hosts.push(raw[i + 1] ?? '');
  return hosts;
}

/** Answers 200 `hello from <name>` to anything, recording each request and connection. */
export async function startHttpTarget(
  name: string,
  host = '0.0.0.0',
  port = 0,
): Promise<HttpTarget> {
  const requests: RecordedRequest[] = [];
  let connections = 0;
  const server: HttpServer = createHttpServer((req, res) => {
    requests.push({
      method: req.method ?? '',
      url: req.url ?? '',
      host: req.headers.host,
      hosts: hostHeaders(req.rawHeaders),
      remote: req.socket.remoteAddress,
    });
    const body = `hello from ${name}\n`;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
    res.end(body);
  });
  server.on('connection', () => {
    connections += 1;
  });
  server.keepAliveTimeout = 100;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      resolve();
    });
  });
  return {
    name,
    port: portOf(server.address()),
    requests,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

export interface TcpTarget extends Closable {
  readonly port: number;
  /** First bytes of each accepted connection (empty when the peer sent nothing). */
  readonly connections: Buffer[];
}

/** Accepts TCP, records what the peer sends within a moment, then closes. */
export async function startTcpTarget(host = '0.0.0.0'): Promise<TcpTarget> {
  const connections: Buffer[] = [];
  const server: TcpServer = createTcpServer((socket) => {
    const chunks: Buffer[] = [];
    const index = connections.push(Buffer.alloc(0)) - 1;
    socket.on('error', () => undefined);
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      connections[index] = Buffer.concat(chunks);
    });
    setTimeout(() => socket.destroy(), 500);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      resolve();
    });
  });
  return {
    port: portOf(server.address()),
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

export interface DnsServer extends Closable {
  readonly address: string;
  readonly port: number;
  /** Names asked, in order. */
  readonly queries: string[];
}

/** A's from `records`; a known name asked for another type gets an empty NOERROR. */
export async function startDnsServer(
  /** A name's addresses: A questions get its IPv4 ones, AAAA questions its IPv6 ones. */
  records: Readonly<Record<string, string | readonly string[]>>,
  host = '127.0.0.1',
): Promise<DnsServer> {
  const queries: string[] = [];
  const socket: UdpSocket = createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    const q = parseQuery(msg);
    if (q === undefined) return;
    queries.push(q.name);
    const address = records[q.name];
    const reply =
      address === undefined
        ? buildResponse(q, RCODE_NXDOMAIN)
        : buildResponse(
            q,
            RCODE_NOERROR,
            q.type === DNS_TYPE_A || q.type === DNS_TYPE_AAAA ? [address].flat() : [],
          );
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await bindUdp(socket, host, 0);
  return {
    address: host,
    port: socket.address().port,
    queries,
    close: () => closeUdp(socket),
  };
}

export interface UdpRecorder extends Closable {
  readonly address: string;
  readonly port: number;
  readonly packets: { from: string; bytes: number }[];
}

/** Records every datagram that reaches it and never answers. */
export async function startUdpRecorder(host: string, port = 0): Promise<UdpRecorder> {
  const packets: { from: string; bytes: number }[] = [];
  const socket: UdpSocket = createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    packets.push({ from: `${rinfo.address}:${rinfo.port}`, bytes: msg.length });
  });
  await bindUdp(socket, host, port);
  return {
    address: host,
    port: socket.address().port,
    packets,
    close: () => closeUdp(socket),
  };
}

function bindUdp(socket: UdpSocket, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
}

function closeUdp(socket: UdpSocket): Promise<void> {
  return new Promise((resolve) => {
    socket.close(() => {
      resolve();
    });
  });
}

export interface RawHttpTarget extends Closable {
  readonly port: number;
  /** Everything each accepted connection sent, as it arrived. */
  readonly received: Buffer[];
  /** All bytes of all connections (latin1), to look for what must never have arrived. */
  text(): string;
}

/**
 * A deliberately lenient HTTP/1.1 upstream: it answers every request head it finds with
 * 200 `hello from <name>` (skipping a Content-Length or chunked body crudely) and records
 * the raw bytes, so a test sees exactly what passed the gateway. With `upgrade`, a request
 * carrying an Upgrade header gets 101 and the connection is only recorded from then on.
 */
export async function startRawHttpTarget(
  name: string,
  options: { upgrade: boolean },
): Promise<RawHttpTarget> {
  const received: Buffer[] = [];
  const body = `hello from ${name}\n`;
  const ok = `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const server: TcpServer = createTcpServer((socket) => {
    const index = received.push(Buffer.alloc(0)) - 1;
    let pending = Buffer.alloc(0);
    let opaque = false;
    let idle = setTimeout(() => socket.end(), 800);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      clearTimeout(idle);
      idle = setTimeout(() => socket.end(), 800);
      received[index] = Buffer.concat([received[index] ?? Buffer.alloc(0), chunk]);
      if (opaque) return;
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = pending.subarray(0, end).toString('latin1');
        let rest = pending.subarray(end + 4);
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1];
        if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
          const last = rest.indexOf('0\r\n\r\n');
          if (last < 0) return;
          rest = rest.subarray(last + 5);
        } else if (length !== undefined) {
          if (rest.length < Number(length)) return;
          rest = rest.subarray(Number(length));
        }
        pending = rest;
        if (options.upgrade && /\r\nupgrade:/i.test(head)) {
          socket.write(
            'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: cfh-test\r\n\r\n',
          );
          opaque = true;
          return;
        }
        socket.write(ok);
      }
    });
    socket.on('close', () => {
      clearTimeout(idle);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '0.0.0.0', () => {
      resolve();
    });
  });
  return {
    port: portOf(server.address()),
    received,
    text: () => Buffer.concat(received).toString('latin1'),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

export interface FarNamespace extends Closable {
  /** Addresses held in the namespace: on this machine, but not the host's own. */
  readonly addresses: readonly [string, string];
  readonly port: number;
  /** Each connection the namespace's server accepted: the address it reached, its head. */
  readonly connections: readonly { readonly local: string; readonly head: string }[];
}

// The far server: a Node process inside the namespace (Node cannot listen in another
// namespace itself). It prints `listening PORT`, then one JSON line per connection, and
// answers an HTTP request with 200 `hello from far <address>`.
const FAR_SERVER = String.raw`
import { createServer } from 'node:net';
const server = createServer((s) => {
  let head = Buffer.alloc(0);
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    const text = head.toString('latin1');
    console.log(JSON.stringify({ local: s.localAddress, head: text.slice(0, 300) }));
    if (/^[A-Z]+ \S+ HTTP\/1\.[01]\r\n/.test(text)) {
      const body = 'hello from far ' + s.localAddress + '\n';
      s.end('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: ' + body.length + '\r\n\r\n' + body);
    } else s.destroy();
  };
  s.on('error', () => undefined);
  s.on('data', (c) => { head = Buffer.concat([head, c]); if (head.includes('\r\n\r\n') || head[0] === 0x16) finish(); });
  setTimeout(finish, 500);
});
server.listen(0, '0.0.0.0', () => console.log('listening ' + server.address().port));
`;

/**
 * A network namespace this test creates, joined to the host by a veth pair, holding two
 * addresses of a random /28 of 198.51.100.0/24 (TEST-NET-2): addresses that are on this
 * machine yet neither private nor the host's, which is what a destination "out there" is
 * to the egress policy. Traffic to them goes over the veth only (an on-link route, checked
 * before use). Needs root; `skip` says why when it cannot be made.
 */
export async function startFarNamespace(): Promise<FarNamespace | { skip: string }> {
  if (process.getuid?.() !== 0) return { skip: 'not root: cannot create a network namespace' };
  const id = randomBytes(3).toString('hex');
  const ns = `cfhfar-${id}`;
  const hostSide = `cfhf${id}a`;
  const farSide = `cfhf${id}b`;
  const base = 16 * randomInt(0, 16);
  const at = (n: number): string => `198.51.100.${base + n}`;
  const ip = (...args: string[]) => execa('ip', args, { reject: false });
  const teardown = async (): Promise<void> => {
    await ip('netns', 'del', ns);
    await ip('link', 'del', hostSide);
  };
  const steps = [
    ['netns', 'add', ns],
    ['link', 'add', hostSide, 'type', 'veth', 'peer', 'name', farSide],
    ['link', 'set', farSide, 'netns', ns],
    ['addr', 'add', `${at(1)}/28`, 'dev', hostSide],
    ['link', 'set', hostSide, 'up'],
    ['-n', ns, 'addr', 'add', `${at(2)}/28`, 'dev', farSide],
    ['-n', ns, 'addr', 'add', `${at(3)}/28`, 'dev', farSide],
    ['-n', ns, 'link', 'set', farSide, 'up'],
    ['-n', ns, 'link', 'set', 'lo', 'up'],
  ];
  for (const step of steps) {
    const r = await ip(...step);
    if (r.exitCode !== 0) {
      await teardown();
      return { skip: `ip ${step.join(' ')}: ${r.stderr.trim()}` };
    }
  }
  for (const n of [2, 3]) {
    const route = await ip('-o', 'route', 'get', at(n));
    if (!route.stdout.includes(`dev ${hostSide}`)) {
      await teardown();
      return { skip: `${at(n)} is not routed over ${hostSide}: ${route.stdout.trim()}` };
    }
  }
  const child = execa('ip', ['netns', 'exec', ns, process.execPath, '--input-type=module'], {
    input: FAR_SERVER,
    reject: false,
    buffer: false,
  });
  const connections: { local: string; head: string }[] = [];
  const lines = createInterface({ input: child.stdout });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error('the far server did not start'));
    }, 10_000);
    lines.on('line', (line) => {
      const listening = /^listening (\d+)$/.exec(line);
      if (listening?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(Number(listening[1]));
        return;
      }
      connections.push(JSON.parse(line) as { local: string; head: string });
    });
  }).catch(async (error: unknown) => {
    child.kill('SIGKILL');
    await child;
    await teardown();
    throw error;
  });
  return {
    addresses: [at(2), at(3)],
    port,
    connections,
    close: async () => {
      lines.close();
      child.kill('SIGKILL');
      await child;
      await teardown();
    },
  };
}
