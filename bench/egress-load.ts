// The egress gateway bench's load (bench/egress-gateway.ts): the local HTTP server (node:http
// on 127.0.0.1, random port; a small response and a large one streamed from one reused
// buffer) and the client (egress-client.ts) that drives it, in a worker thread (BENCH_LAYOUT
// worker, the default: this module is the worker's entry) or on the calling thread (single).
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import {
  asError,
  KeepAliveClient,
  LOOPBACK,
  oneShot,
  requestHead,
  type ConnectionBytes,
  type Sample,
} from './egress-client.js';

export const MiB = 1024 * 1024;
export const SMALL_BYTES = 100;

export const TARGETS = ['direct', 'pinned', 'name'] as const;
export type Target = (typeof TARGETS)[number];
export const MODES = ['close', 'keepalive'] as const;
export type Mode = (typeof MODES)[number];
export type Layout = 'worker' | 'single';

interface Route {
  readonly port: number;
  readonly host: string;
}
export type Routes = Readonly<Record<Target, Route>>;

/** Server and client, in this thread or in the worker. */
export interface Driver {
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

export function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

export function layoutFromEnv(): Layout {
  const raw = process.env.BENCH_LAYOUT;
  if (raw === undefined || raw === '' || raw === 'worker') return 'worker';
  if (raw === 'single') return 'single';
  throw new Error(`BENCH_LAYOUT: '${raw}' is not worker or single`);
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

/** The server and the client, as BENCH_LAYOUT places them. */
export async function startDriver(layout: Layout, largeBytes: number): Promise<Driver> {
  return layout === 'worker' ? await WorkerDriver.start(largeBytes) : await Load.start(largeBytes);
}

if (!isMainThread) {
  workerMain().catch((error: unknown) => {
    parentPort?.postMessage({ id: 0, ok: false, error: describeError(error) } satisfies Reply);
  });
}
