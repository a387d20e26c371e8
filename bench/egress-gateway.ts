// What cfh's egress gateway (src/network/egress-gateway.ts) adds to a sandboxed client's
// requests, against the same requests sent directly, in one process and without containers.
//
// A local HTTP server (node:http on 127.0.0.1, random port) serves a small response
// (SMALL_BYTES) and a large one (BENCH_LARGE_MIB, streamed from one reused buffer). An
// EgressGateway is started on 127.0.0.1 the way cfh starts it for an allowlist posture: the
// policy allows `127.0.0.1:<port>` (loopback is refused unless listed, so it is listed) and
// `bench.cfh.test:<port>`; the server port is intercepted by name and pinned to 127.0.0.1;
// the resolver answers 127.0.0.1. Requests reach the gateway's listeners exactly as the
// sandbox's DNAT delivers them, and the gateway connects on to the server:
//   direct   the client connects to the server port (Host 127.0.0.1:<port>).
//   pinned   the pinned listener for 127.0.0.1:<port> (Host 127.0.0.1:<port>): no name, the
//            address decides.
//   name     the by-port listener for <port> with Host bench.cfh.test:<port>: the name is
//            read from the Host header, checked, resolved, the address checked again.
// The client is hand-written on node:net (one write per request, a Content-Length parser), so
// the client's own cost is the same small amount in every series:
//   close      a fresh TCP connection per request (Connection: close): what a sandboxed
//              client's transparent connection costs, handshake and upstream connect
//              included. Timed from connect() to the last body byte.
//   keepalive  one persistent connection per series, timed from write to the last body byte:
//              the gateway's forwarding cost alone.
//   download   the large response on a fresh connection; MB/s of body bytes (1 MB = 10^6).
// Latency series run in batches (BENCH_BATCH requests of one series, then the next), the
// order of direct/pinned/name rotating per batch, so drift falls on all of them alike;
// downloads are interleaved the same way. Warm-up requests and downloads are discarded.
//
// Layout (BENCH_LAYOUT): `worker` (default) runs the server and the client in a worker
// thread and leaves the main thread to the gateway alone, as in cfh, where the gateway has
// cfh's event loop and the client and server are other processes. `single` runs all three
// on one thread: the gateway's work then adds serially to the client's and the server's,
// which understates the gateway's throughput.
//
// After the runs the gateway's events are checked against what the client did: one event
// per gateway connection (a close-mode request, a download, a keep-alive connection), each
// allowed and allowlisted by the expected rule, with bytesIn/bytesOut equal to the bytes the
// client received/sent on that connection (so a large download's bytesIn is its head plus
// the whole body). The targets (at most 2 ms added per request at p50, at least 80% of
// direct throughput on the large download) are reported, never asserted: the exit status is
// non-zero only when something failed or the events do not match.
//
// Run: bench/run.sh egress   (BENCH_REQUESTS per series, default 2000; BENCH_WARMUP per
//      series, default 200; BENCH_BATCH, default 50; BENCH_DOWNLOADS, default 5, after one
//      warm-up each; BENCH_LARGE_MIB, default 256; BENCH_LAYOUT worker|single)
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import os from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { parseDestinations } from '../src/network/destination.js';
import { EgressGateway, type EgressEvent } from '../src/network/egress-gateway.js';
import { EgressPolicy } from '../src/network/egress-policy.js';
import { mean, median, percentile, round1, round3 } from './stats.js';
import { intFromEnv, table } from './bench-util.js';

const LOOPBACK = '127.0.0.1';
const BENCH_NAME = 'bench.cfh.test';
const MiB = 1024 * 1024;
const SMALL_BYTES = 100;
const MAX_HEAD_BYTES = 64 * 1024;
const SOCKET_IDLE_MS = 30_000;
const EVENT_WAIT_MS = 10_000;
const ADDED_P50_MAX_MS = 2;
const THROUGHPUT_MIN_RATIO = 0.8;

const TARGETS = ['direct', 'pinned', 'name'] as const;
type Target = (typeof TARGETS)[number];
const GATEWAY_TARGETS = ['pinned', 'name'] as const;
type GatewayTarget = (typeof GATEWAY_TARGETS)[number];
const MODES = ['close', 'keepalive'] as const;
type Mode = (typeof MODES)[number];
type Layout = 'worker' | 'single';

interface Route {
  readonly port: number;
  readonly host: string;
}
type Routes = Readonly<Record<Target, Route>>;

/** One request (close mode, download) or one response on a kept-alive connection. */
interface Sample {
  readonly ms: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
}

interface ConnectionBytes {
  readonly bytesIn: number;
  readonly bytesOut: number;
}

/** Server and client, in this thread or in the worker. */
interface Driver {
  readonly port: number;
  setRoutes(routes: Routes): Promise<void>;
  latency(target: Target, mode: Mode, count: number): Promise<Sample[]>;
  download(target: Target): Promise<Sample>;
  /** Closes the kept-alive connections; what each carried. */
  endKeepAlive(): Promise<Partial<Record<Target, ConnectionBytes>>>;
  close(): Promise<void>;
}

type Command =
  | { readonly op: 'routes'; readonly routes: Routes }
  | { readonly op: 'latency'; readonly target: Target; readonly mode: Mode; readonly count: number }
  | { readonly op: 'download'; readonly target: Target }
  | { readonly op: 'endKeepAlive' }
  | { readonly op: 'close' };

interface Request {
  readonly id: number;
  readonly cmd: Command;
}

type Reply =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly error: string };

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

function layoutFromEnv(): Layout {
  const raw = process.env.BENCH_LAYOUT;
  if (raw === undefined || raw === '' || raw === 'worker') return 'worker';
  if (raw === 'single') return 'single';
  throw new Error(`BENCH_LAYOUT: '${raw}' is not worker or single`);
}

function requestHead(host: string, path: string, connection: 'close' | 'keep-alive'): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: cfh-bench\r\nConnection: ${connection}\r\n\r\n`;
}

// ---------------------------------------------------------------------------------------
// Server and client (the worker thread, or the main thread under BENCH_LAYOUT=single).

/** Reads one HTTP/1.1 response at a time: a 200 head with Content-Length, then the body. */
class ResponseReader {
  #head: Buffer = Buffer.alloc(0);
  #bodyLeft = -1;

  /** Feeds a chunk; true when it completes the response (the reader is then reset). */
  push(chunk: Buffer): boolean {
    if (this.#bodyLeft < 0) {
      const all = this.#head.length === 0 ? chunk : Buffer.concat([this.#head, chunk]);
      const end = all.indexOf('\r\n\r\n');
      if (end < 0) {
        if (all.length > MAX_HEAD_BYTES) throw new Error('response head over 64 KiB');
        this.#head = all;
        return false;
      }
      const lines = all.subarray(0, end).toString('latin1').split('\r\n');
      const statusLine = lines[0] ?? '';
      if (!/^HTTP\/1\.1 200 /.test(statusLine)) {
        throw new Error(`unexpected response: ${statusLine}`);
      }
      let length: number | undefined;
      for (const line of lines) {
        const m = /^content-length:\s*(\d+)\s*$/i.exec(line);
        if (m?.[1] !== undefined) length = Number(m[1]);
      }
      if (length === undefined) throw new Error('response without Content-Length');
      this.#head = Buffer.alloc(0);
      this.#bodyLeft = length - (all.length - end - 4);
    } else {
      this.#bodyLeft -= chunk.length;
    }
    if (this.#bodyLeft < 0) throw new Error('more bytes than the response announced');
    if (this.#bodyLeft > 0) return false;
    this.#bodyLeft = -1;
    return true;
  }
}

/** One request on a fresh connection; timed from connect() to the response's last byte. */
function oneShot(port: number, head: string): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const reader = new ResponseReader();
    const t0 = performance.now();
    let ms: number | undefined;
    let bytesIn = 0;
    const socket = connect({ host: LOOPBACK, port, noDelay: true }, () => {
      socket.write(head);
    });
    socket.setTimeout(SOCKET_IDLE_MS, () => {
      socket.destroy(new Error(`port ${port}: idle for ${SOCKET_IDLE_MS} ms`));
    });
    socket.on('data', (chunk: Buffer) => {
      bytesIn += chunk.length;
      try {
        if (reader.push(chunk)) ms = performance.now() - t0;
      } catch (error) {
        socket.destroy(asError(error));
      }
    });
    socket.once('error', reject);
    socket.once('close', () => {
      if (ms === undefined) {
        reject(new Error(`port ${port}: closed after ${bytesIn} bytes, before a whole response`));
      } else {
        resolve({ ms, bytesIn, bytesOut: Buffer.byteLength(head) });
      }
    });
  });
}

/** One persistent connection, one request in flight at a time. */
class KeepAliveClient {
  bytesIn = 0;
  bytesOut = 0;
  readonly #socket: Socket;
  readonly #reader = new ResponseReader();
  #pending: { resolve: () => void; reject: (error: Error) => void } | undefined;
  #failure: Error | undefined;
  #closing = false;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.bytesIn += chunk.length;
      let done: boolean;
      try {
        done = this.#reader.push(chunk);
      } catch (error) {
        this.#fail(asError(error));
        return;
      }
      if (done) {
        const pending = this.#pending;
        this.#pending = undefined;
        pending?.resolve();
      }
    });
    socket.on('error', (error) => {
      this.#fail(error);
    });
    socket.on('close', () => {
      if (!this.#closing) this.#fail(new Error('kept-alive connection closed'));
    });
  }

  static open(port: number): Promise<KeepAliveClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: LOOPBACK, port, noDelay: true });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new KeepAliveClient(socket));
      });
    });
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.reject(error);
    this.#socket.destroy();
  }

  /** Sends `head`; the ms until the whole response is in. */
  get(head: string): Promise<number> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      const t0 = performance.now();
      this.#pending = {
        resolve: () => {
          resolve(performance.now() - t0);
        },
        reject,
      };
      this.bytesOut += Buffer.byteLength(head);
      this.#socket.write(head);
    });
  }

  close(): Promise<void> {
    this.#closing = true;
    if (this.#socket.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.#socket.once('close', () => {
        resolve();
      });
      this.#socket.end();
    });
  }
}

function streamLarge(res: ServerResponse, chunk: Buffer, total: number): void {
  let left = total;
  const pump = (): void => {
    while (left > 0 && !res.destroyed) {
      const n = Math.min(left, chunk.length);
      left -= n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  pump();
}

class Load implements Driver {
  readonly port: number;
  readonly #server: Server;
  readonly #clients = new Map<Target, KeepAliveClient>();
  #routes: Routes | undefined;

  private constructor(server: Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  static async start(largeBytes: number): Promise<Load> {
    const small = Buffer.alloc(SMALL_BYTES, 0x62);
    const chunk = Buffer.alloc(Math.min(MiB, largeBytes), 0x61);
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.url === '/small') {
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Content-Length': String(small.length),
        });
        res.end(small);
      } else if (req.url === '/large') {
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Content-Length': String(largeBytes),
        });
        streamLarge(res, chunk, largeBytes);
      } else {
        res.writeHead(404, { 'Content-Length': '0' });
        res.end();
      }
    });
    // The kept-alive connections idle while the other series run their batches.
    server.keepAliveTimeout = 10 * 60_000;
    server.listen(0, LOOPBACK);
    await once(server, 'listening');
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('server has no port');
    return new Load(server, address.port);
  }

  #route(target: Target): Route {
    if (this.#routes === undefined) throw new Error('routes not set');
    return this.#routes[target];
  }

  setRoutes(routes: Routes): Promise<void> {
    this.#routes = routes;
    return Promise.resolve();
  }

  async latency(target: Target, mode: Mode, count: number): Promise<Sample[]> {
    const route = this.#route(target);
    const samples: Sample[] = [];
    if (mode === 'close') {
      const head = requestHead(route.host, '/small', 'close');
      for (let i = 0; i < count; i++) samples.push(await oneShot(route.port, head));
      return samples;
    }
    let client = this.#clients.get(target);
    if (client === undefined) {
      client = await KeepAliveClient.open(route.port);
      this.#clients.set(target, client);
    }
    const head = requestHead(route.host, '/small', 'keep-alive');
    for (let i = 0; i < count; i++) {
      const before = client.bytesIn;
      const ms = await client.get(head);
      samples.push({ ms, bytesIn: client.bytesIn - before, bytesOut: Buffer.byteLength(head) });
    }
    return samples;
  }

  download(target: Target): Promise<Sample> {
    const route = this.#route(target);
    return oneShot(route.port, requestHead(route.host, '/large', 'close'));
  }

  async endKeepAlive(): Promise<Partial<Record<Target, ConnectionBytes>>> {
    const totals: Partial<Record<Target, ConnectionBytes>> = {};
    for (const [target, client] of this.#clients) {
      await client.close();
      totals[target] = { bytesIn: client.bytesIn, bytesOut: client.bytesOut };
    }
    this.#clients.clear();
    return totals;
  }

  async close(): Promise<void> {
    await this.endKeepAlive();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => {
      this.#server.close(() => {
        resolve();
      });
    });
  }
}

function execute(load: Load, cmd: Command): Promise<unknown> {
  switch (cmd.op) {
    case 'routes':
      return load.setRoutes(cmd.routes);
    case 'latency':
      return load.latency(cmd.target, cmd.mode, cmd.count);
    case 'download':
      return load.download(cmd.target);
    case 'endKeepAlive':
      return load.endKeepAlive();
    case 'close':
      return load.close();
  }
}

async function workerMain(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('not in a worker');
  const { largeBytes } = workerData as { largeBytes: number };
  const load = await Load.start(largeBytes);
  port.on('message', (request: Request) => {
    execute(load, request.cmd).then(
      (value) => {
        port.postMessage({ id: request.id, ok: true, value } satisfies Reply);
      },
      (error: unknown) => {
        port.postMessage({
          id: request.id,
          ok: false,
          error: describeError(error),
        } satisfies Reply);
      },
    );
  });
  port.postMessage({ id: 0, ok: true, value: load.port } satisfies Reply);
}

/** The Driver in a worker thread: each call is one message and one reply. */
class WorkerDriver implements Driver {
  readonly port: number;
  readonly #worker: Worker;
  readonly #pending = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  #next = 1;
  #failure: Error | undefined;
  #closed = false;

  private constructor(worker: Worker, port: number) {
    this.#worker = worker;
    this.port = port;
    worker.on('message', (reply: Reply) => {
      const pending = this.#pending.get(reply.id);
      if (pending === undefined) return;
      this.#pending.delete(reply.id);
      if (reply.ok) pending.resolve(reply.value);
      else pending.reject(new Error(`worker: ${reply.error}`));
    });
    worker.on('error', (error: unknown) => {
      this.#fail(asError(error));
    });
    worker.on('exit', (code) => {
      if (!this.#closed) this.#fail(new Error(`worker exited with code ${code}`));
    });
  }

  static start(largeBytes: number): Promise<WorkerDriver> {
    return new Promise((resolve, reject) => {
      const worker = new Worker(new URL(import.meta.url), { workerData: { largeBytes } });
      const onExit = (code: number): void => {
        reject(new Error(`worker exited with code ${code} before it was ready`));
      };
      const cleanup = (): void => {
        worker.off('message', onReady);
        worker.off('error', reject);
        worker.off('exit', onExit);
      };
      const onReady = (reply: Reply): void => {
        cleanup();
        if (reply.ok && typeof reply.value === 'number') {
          resolve(new WorkerDriver(worker, reply.value));
        } else {
          void worker.terminate();
          reject(new Error(`worker: ${reply.ok ? 'no port' : reply.error}`));
        }
      };
      worker.on('message', onReady);
      worker.once('error', reject);
      worker.once('exit', onExit);
    });
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  #call(cmd: Command): Promise<unknown> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, cmd } satisfies Request);
    });
  }

  async setRoutes(routes: Routes): Promise<void> {
    await this.#call({ op: 'routes', routes });
  }

  async latency(target: Target, mode: Mode, count: number): Promise<Sample[]> {
    return (await this.#call({ op: 'latency', target, mode, count })) as Sample[];
  }

  async download(target: Target): Promise<Sample> {
    return (await this.#call({ op: 'download', target })) as Sample;
  }

  async endKeepAlive(): Promise<Partial<Record<Target, ConnectionBytes>>> {
    return (await this.#call({ op: 'endKeepAlive' })) as Partial<Record<Target, ConnectionBytes>>;
  }

  async close(): Promise<void> {
    try {
      if (this.#failure === undefined) await this.#call({ op: 'close' });
    } finally {
      this.#closed = true;
      await this.#worker.terminate();
    }
  }
}

// ---------------------------------------------------------------------------------------
// The gateway side and the report (main thread).

function rotate<T>(items: readonly T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

function key(bytes: ConnectionBytes): string {
  return `${bytes.bytesIn}/${bytes.bytesOut}`;
}

function sameMultiset(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const x = [...a].sort();
  const y = [...b].sort();
  return x.every((v, i) => v === y[i]);
}

async function waitFor(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

interface LatencySummary {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

function summarizeLatency(samples: readonly number[]): LatencySummary {
  return {
    n: samples.length,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    mean: mean(samples),
    min: samples.length === 0 ? Number.NaN : Math.min(...samples),
    max: samples.length === 0 ? Number.NaN : Math.max(...samples),
  };
}

interface ThroughputSummary {
  readonly reps: readonly number[];
  readonly median: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

function summarizeThroughput(reps: readonly number[]): ThroughputSummary {
  return {
    reps,
    median: median(reps),
    mean: mean(reps),
    min: Math.min(...reps),
    max: Math.max(...reps),
  };
}

function ms3(x: number): string {
  return Number.isFinite(x) ? x.toFixed(3) : '-';
}

function signed3(x: number): string {
  return `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;
}

function seriesName(target: Target): string {
  return target === 'direct' ? 'direct' : `gateway-${target}`;
}

function roundLatency(s: LatencySummary): Record<string, number> {
  return {
    n: s.n,
    p50: round3(s.p50),
    p99: round3(s.p99),
    mean: round3(s.mean),
    min: round3(s.min),
    max: round3(s.max),
  };
}

async function main(): Promise<number> {
  const requests = intFromEnv('BENCH_REQUESTS', 2000, 1);
  const warmup = intFromEnv('BENCH_WARMUP', 200, 0);
  const batch = intFromEnv('BENCH_BATCH', 50, 1);
  const downloads = intFromEnv('BENCH_DOWNLOADS', 5, 1);
  const downloadWarmup = 1;
  const largeMiB = intFromEnv('BENCH_LARGE_MIB', 256, 1);
  const layout = layoutFromEnv();
  const largeBytes = largeMiB * MiB;

  const events: EgressEvent[] = [];
  const driver: Driver =
    layout === 'worker' ? await WorkerDriver.start(largeBytes) : await Load.start(largeBytes);
  let gateway: EgressGateway | undefined;
  const serverPort = driver.port;
  const rules = { pinned: `${LOOPBACK}:${serverPort}`, name: `${BENCH_NAME}:${serverPort}` };

  const latency = {
    close: { direct: [] as number[], pinned: [] as number[], name: [] as number[] },
    keepalive: { direct: [] as number[], pinned: [] as number[], name: [] as number[] },
  } satisfies Record<Mode, Record<Target, number[]>>;
  const throughput = { direct: [] as number[], pinned: [] as number[], name: [] as number[] };
  // What the client saw on each connection through the gateway, warm-up included.
  const connections = { pinned: [] as string[], name: [] as string[] };
  const downloadBytes = { pinned: [] as number[], name: [] as number[] };
  let downloadHeadBytes = 0;

  try {
    gateway = await EgressGateway.start({
      policy: new EgressPolicy({
        mode: 'allowlist',
        allow: parseDestinations('allow', [rules.pinned, rules.name]),
        deny: [],
        hostAddresses: [],
      }),
      bindAddress: LOOPBACK,
      interceptPorts: [serverPort],
      pinned: [{ address: LOOPBACK, port: serverPort }],
      resolve: () => Promise.resolve([LOOPBACK]),
      onEvent: (e) => {
        events.push(e);
      },
    });
    const pinnedListen = gateway.endpoints.pinned[0]?.listen;
    const byPortListen = gateway.endpoints.byPort.get(serverPort);
    if (pinnedListen === undefined || byPortListen === undefined) {
      throw new Error('the gateway has no listener for the server port');
    }
    await driver.setRoutes({
      direct: { port: serverPort, host: `${LOOPBACK}:${serverPort}` },
      pinned: { port: pinnedListen, host: `${LOOPBACK}:${serverPort}` },
      name: { port: byPortListen, host: `${BENCH_NAME}:${serverPort}` },
    });

    console.log('cfh egress gateway bench');
    console.log(
      `  node ${process.version}, ${os.cpus().length} cpus, ${os.platform()} ${os.release()}`,
    );
    console.log(
      `  layout ${layout}: ${layout === 'worker' ? 'gateway on the main thread; server + client in a worker thread' : 'gateway, server and client on one thread'}`,
    );
    console.log(
      `  server 127.0.0.1:${serverPort} (small ${SMALL_BYTES} B, large ${largeMiB} MiB); gateway listeners: pinned ${pinnedListen} (${rules.pinned}), by-port ${byPortListen} (Host ${rules.name})`,
    );
    console.log(
      `  latency: ${requests} requests per series after ${warmup} warm-up, batches of ${batch}, order rotating per batch`,
    );
    console.log(`  download: ${downloads} per series after ${downloadWarmup} warm-up, interleaved`);
    console.log('');

    const runLatency = async (perSeries: number, measured: boolean): Promise<void> => {
      for (let done = 0, b = 0; done < perSeries; b++) {
        const size = Math.min(batch, perSeries - done);
        for (const mode of MODES) {
          for (const target of rotate(TARGETS, b)) {
            const samples = await driver.latency(target, mode, size);
            if (measured) latency[mode][target].push(...samples.map((s) => s.ms));
            if (mode === 'close' && target !== 'direct') {
              connections[target].push(...samples.map(key));
            }
          }
        }
        done += size;
      }
    };
    const t0 = performance.now();
    await runLatency(warmup, false);
    console.error(`  latency warm-up done (${round1((performance.now() - t0) / 1000)} s)`);
    const t1 = performance.now();
    await runLatency(requests, true);
    console.error(`  latency runs done (${round1((performance.now() - t1) / 1000)} s)`);
    const kept = await driver.endKeepAlive();
    for (const target of GATEWAY_TARGETS) {
      const bytes = kept[target];
      if (bytes !== undefined) connections[target].push(key(bytes));
    }

    for (let rep = 0; rep < downloadWarmup + downloads; rep++) {
      const line: string[] = [];
      for (const target of rotate(TARGETS, rep)) {
        const s = await driver.download(target);
        downloadHeadBytes = s.bytesIn - largeBytes;
        const mbps = largeBytes / 1e6 / (s.ms / 1000);
        if (rep >= downloadWarmup) throughput[target].push(mbps);
        if (target !== 'direct') {
          connections[target].push(key(s));
          downloadBytes[target].push(s.bytesIn);
        }
        line.push(`${target} ${mbps.toFixed(0)}`);
      }
      const label =
        rep < downloadWarmup ? 'warm-up' : `rep ${rep - downloadWarmup + 1}/${downloads}`;
      console.error(`  download ${label.padEnd(9)} ${line.join('  ')} MB/s`);
    }
  } finally {
    await driver.close();
    await gateway?.close();
  }

  // One event per gateway connection, reported when both of its sockets have closed.
  const expected = connections.pinned.length + connections.name.length;
  await waitFor(() => events.length >= expected, EVENT_WAIT_MS);
  await new Promise((resolve) => setTimeout(resolve, 100));

  const problems: string[] = [];
  const byTarget: Record<GatewayTarget, EgressEvent[]> = { pinned: [], name: [] };
  for (const e of events) {
    if (e.name === BENCH_NAME) byTarget.name.push(e);
    else if (e.name === undefined) byTarget.pinned.push(e);
    else problems.push(`event for an unexpected name ${e.name}`);
  }
  const verification: Record<string, unknown> = {};
  const eventLines: string[] = [];
  for (const target of GATEWAY_TARGETS) {
    const seen = byTarget[target];
    const wrong = seen.filter(
      (e) =>
        !e.allowed ||
        e.reason !== 'allowlisted' ||
        e.rule !== rules[target] ||
        e.protocol !== 'http' ||
        e.via !== 'transparent' ||
        e.address !== LOOPBACK ||
        e.port !== serverPort,
    );
    const bytesMatch = sameMultiset(seen.map(key), connections[target]);
    const large = seen.filter((e) => e.bytesIn >= largeBytes);
    const largeMatch =
      large.length === downloadBytes[target].length &&
      large.every((e) => e.bytesIn === largeBytes + downloadHeadBytes) &&
      downloadBytes[target].every((b) => b === largeBytes + downloadHeadBytes);
    if (seen.length !== connections[target].length) {
      problems.push(
        `${target}: ${seen.length} events for ${connections[target].length} connections`,
      );
    }
    if (wrong.length > 0) {
      const first = wrong[0];
      problems.push(
        `${target}: ${wrong.length} events not allowed as expected (first: ${JSON.stringify(first)})`,
      );
    }
    if (!bytesMatch) problems.push(`${target}: event bytes differ from the client's`);
    if (!largeMatch) {
      problems.push(
        `${target}: large downloads: ${large.length} events, bytesIn ${[...new Set(large.map((e) => e.bytesIn))].join(', ')}; expected ${downloadBytes[target].length} x ${largeBytes + downloadHeadBytes}`,
      );
    }
    verification[target] = {
      events: seen.length,
      connections: connections[target].length,
      allAllowed: wrong.length === 0,
      bytesMatch,
      largeEvents: large.length,
      largeBytesInOk: largeMatch,
    };
    eventLines.push(
      `  ${target.padEnd(6)} ${seen.length} events for ${connections[target].length} connections` +
        ` (${warmup + requests} close-mode requests, 1 kept-alive connection, ${downloadWarmup + downloads} downloads);` +
        ` ${wrong.length === 0 ? `all allowed, allowlisted by ${rules[target]}` : `${wrong.length} NOT as expected`};` +
        ` bytesIn/bytesOut ${bytesMatch ? 'equal' : 'DIFFER from'} the client's per connection;` +
        ` large: ${large.length} events, bytesIn ${large.length > 0 && largeMatch ? `${largeBytes + downloadHeadBytes} each (head ${downloadHeadBytes} + body ${largeBytes})` : 'MISMATCH'}`,
    );
  }
  const stray = events.length - byTarget.pinned.length - byTarget.name.length;

  // ---- report
  const lat = {
    close: Object.fromEntries(
      TARGETS.map((t) => [t, summarizeLatency(latency.close[t])]),
    ) as Record<Target, LatencySummary>,
    keepalive: Object.fromEntries(
      TARGETS.map((t) => [t, summarizeLatency(latency.keepalive[t])]),
    ) as Record<Target, LatencySummary>,
  };
  const thr = Object.fromEntries(
    TARGETS.map((t) => [t, summarizeThroughput(throughput[t])]),
  ) as Record<Target, ThroughputSummary>;

  console.log('');
  console.log(
    `latency per request, ms (${requests} per series after ${warmup} warm-up; added and ratio against direct, same mode)`,
  );
  const latencyRows: string[][] = [];
  for (const mode of MODES) {
    const base = lat[mode].direct;
    for (const target of TARGETS) {
      const s = lat[mode][target];
      latencyRows.push([
        `${mode}/${seriesName(target)}`,
        String(s.n),
        ms3(s.p50),
        ms3(s.p99),
        ms3(s.mean),
        ms3(s.min),
        ms3(s.max),
        target === 'direct' ? '-' : signed3(s.p50 - base.p50),
        target === 'direct' ? '-' : signed3(s.p99 - base.p99),
        (s.p50 / base.p50).toFixed(3),
        (s.p99 / base.p99).toFixed(3),
      ]);
    }
  }
  table(
    ['series', 'n', 'p50', 'p99', 'mean', 'min', 'max', 'added p50', 'added p99', 'p50 x', 'p99 x'],
    latencyRows,
  );

  console.log('');
  console.log(
    `large download throughput, MB/s of body (${largeMiB} MiB, 1 MB = 10^6 B; ${downloads} reps after ${downloadWarmup} warm-up)`,
  );
  table(
    ['series', 'median', 'mean', 'min', 'max', 'median x', 'reps'],
    TARGETS.map((t) => {
      const s = thr[t];
      return [
        seriesName(t),
        s.median.toFixed(0),
        s.mean.toFixed(0),
        s.min.toFixed(0),
        s.max.toFixed(0),
        (s.median / thr.direct.median).toFixed(3),
        s.reps.map((r) => r.toFixed(0)).join(' '),
      ];
    }),
  );

  const added = Object.fromEntries(
    MODES.map((mode) => [
      mode,
      Object.fromEntries(
        GATEWAY_TARGETS.map((t) => [
          t,
          {
            p50: round3(lat[mode][t].p50 - lat[mode].direct.p50),
            p99: round3(lat[mode][t].p99 - lat[mode].direct.p99),
          },
        ]),
      ),
    ]),
  ) as Record<Mode, Record<GatewayTarget, { p50: number; p99: number }>>;
  const latencyRatio = Object.fromEntries(
    MODES.map((mode) => [
      mode,
      Object.fromEntries(
        GATEWAY_TARGETS.map((t) => [
          t,
          {
            p50: round3(lat[mode][t].p50 / lat[mode].direct.p50),
            p99: round3(lat[mode][t].p99 / lat[mode].direct.p99),
          },
        ]),
      ),
    ]),
  );
  const throughputRatio = Object.fromEntries(
    GATEWAY_TARGETS.map((t) => [
      t,
      {
        median: round3(thr[t].median / thr.direct.median),
        mean: round3(thr[t].mean / thr.direct.mean),
      },
    ]),
  ) as Record<GatewayTarget, { median: number; mean: number }>;
  // Judged on a fresh connection per request: the cost a transparent connection pays.
  const latencyMet = GATEWAY_TARGETS.every((t) => added.close[t].p50 <= ADDED_P50_MAX_MS);
  const throughputMet = GATEWAY_TARGETS.every(
    (t) => throughputRatio[t].median >= THROUGHPUT_MIN_RATIO,
  );

  console.log('');
  for (const mode of MODES) {
    console.log(
      `gateway adds (${mode}): ` +
        GATEWAY_TARGETS.map(
          (t) =>
            `${t} ${signed3(added[mode][t].p50)} ms at p50, ${signed3(added[mode][t].p99)} ms at p99`,
        ).join('; '),
    );
  }
  console.log(
    `gateway / direct throughput (median): ` +
      GATEWAY_TARGETS.map((t) => `${t} ${throughputRatio[t].median.toFixed(3)}`).join('; '),
  );
  console.log(
    `target added p50 <= ${ADDED_P50_MAX_MS} ms (fresh connection per request): ${latencyMet ? 'met' : 'NOT met'}` +
      ` (${GATEWAY_TARGETS.map((t) => `${t} ${signed3(added.close[t].p50)}`).join(', ')}; reported only, not asserted)`,
  );
  console.log(
    `target throughput >= ${THROUGHPUT_MIN_RATIO.toFixed(2)} x direct (large download): ${throughputMet ? 'met' : 'NOT met'}` +
      ` (${GATEWAY_TARGETS.map((t) => `${t} ${throughputRatio[t].median.toFixed(3)}`).join(', ')}; reported only, not asserted)`,
  );

  console.log('');
  console.log(
    `gateway events: ${events.length} seen, ${expected} expected (one per gateway connection), ${stray} stray`,
  );
  for (const l of eventLines) console.log(l);
  console.log(`event check: ${problems.length === 0 ? 'ok' : `${problems.length} PROBLEM(S)`}`);
  for (const p of problems) console.log(`  problem: ${p}`);

  console.log('');
  console.log(
    JSON.stringify({
      bench: 'egress-gateway',
      node: process.version,
      cpus: os.cpus().length,
      layout,
      requests,
      warmup,
      batch,
      smallBytes: SMALL_BYTES,
      largeBytes,
      downloads,
      unit: { latency: 'ms', throughput: 'MB/s' },
      latency: Object.fromEntries(
        MODES.map((mode) => [
          mode,
          Object.fromEntries(TARGETS.map((t) => [t, roundLatency(lat[mode][t])])),
        ]),
      ),
      addedMs: added,
      latencyRatio,
      throughput: Object.fromEntries(
        TARGETS.map((t) => [
          t,
          {
            median: round1(thr[t].median),
            mean: round1(thr[t].mean),
            min: round1(thr[t].min),
            max: round1(thr[t].max),
            reps: thr[t].reps.map(round1),
          },
        ]),
      ),
      throughputRatio,
      target: {
        addedP50MaxMs: ADDED_P50_MAX_MS,
        throughputMinRatio: THROUGHPUT_MIN_RATIO,
        latencyMet,
        throughputMet,
        met: latencyMet && throughputMet,
      },
      events: {
        seen: events.length,
        expected,
        stray,
        ok: problems.length === 0,
        ...verification,
      },
    }),
  );
  return problems.length === 0 ? 0 : 1;
}

if (isMainThread) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(`bench failed: ${describeError(error)}`);
      process.exitCode = 1;
    },
  );
} else {
  workerMain().catch((error: unknown) => {
    parentPort?.postMessage({ id: 0, ok: false, error: describeError(error) } satisfies Reply);
  });
}
