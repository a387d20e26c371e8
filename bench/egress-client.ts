// The egress gateway bench's client (bench/egress-gateway.ts), hand-written on node:net: one
// write per request and a Content-Length parser, so the client's own cost is the same small
// amount in every series. A request on a fresh connection (oneShot) or on one persistent
// connection (KeepAliveClient); both count the bytes each connection carried.
import { connect, type Socket } from 'node:net';

export const LOOPBACK = '127.0.0.1';
const MAX_HEAD_BYTES = 64 * 1024;
const SOCKET_IDLE_MS = 30_000;

/** One request (close mode, download) or one response on a kept-alive connection. */
export interface Sample {
  readonly ms: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
}

export interface ConnectionBytes {
  readonly bytesIn: number;
  readonly bytesOut: number;
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

export function requestHead(
  host: string,
  path: string,
  connection: 'close' | 'keep-alive',
): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: cfh-bench\r\nConnection: ${connection}\r\n\r\n`;
}

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
export function oneShot(port: number, head: string): Promise<Sample> {
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
export class KeepAliveClient {
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
