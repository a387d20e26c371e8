// Servers the network tests start on this machine, and nothing else: every destination a
// sandbox is pointed at is one of these (issue 3, "local servers only"). An HTTP server
// that names itself and records what reached it, a raw TCP listener that records
// connections, a DNS server on 127.0.0.1 answering from a fixed map (the egress gateway's
// upstream, via CFH_EGRESS_RESOLVER), and a UDP "rogue resolver" that records any packet.
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import {
  buildResponse,
  DNS_TYPE_A,
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
  readonly remote: string | undefined;
}

export interface HttpTarget extends Closable {
  readonly name: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Every TCP connection accepted, whether or not a request followed. */
  readonly connections: number;
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
  records: Readonly<Record<string, string>>,
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
        : buildResponse(q, RCODE_NOERROR, q.type === DNS_TYPE_A ? [address] : []);
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
