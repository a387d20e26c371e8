// The engine's multiplexed attach stream (8-byte frame headers: stream id, 3 zero bytes,
// big-endian length) split into stdout and stderr WITH backpressure: a frame is handed on
// only when its destination accepted the previous one, so a slow consumer slows the engine
// stream, and through it the container, instead of filling cfh's memory (dockerode's
// demuxStream ignores write()'s return value and buffers without bound).
import { Writable } from 'node:stream';

const HEADER_BYTES = 8;

export class Demultiplexer extends Writable {
  readonly #out: readonly [NodeJS.WritableStream, NodeJS.WritableStream];
  #pending: Buffer = Buffer.alloc(0);
  /** Bytes still to come of the frame in progress, and its destination. */
  #remaining = 0;
  #target: NodeJS.WritableStream | undefined;

  constructor(stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream) {
    super({ highWaterMark: 64 * 1024 });
    this.#out = [stdout, stderr];
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    this.#pump(done);
  }

  #pump(done: (e?: Error | null) => void): void {
    for (;;) {
      if (this.#remaining === 0) {
        if (this.#pending.length < HEADER_BYTES) break;
        const kind = this.#pending[0];
        this.#remaining = this.#pending.readUInt32BE(4);
        // 0 stdin (never sent), 1 stdout, 2 stderr; anything else goes to stderr.
        this.#target = kind === 1 ? this.#out[0] : this.#out[1];
        this.#pending = this.#pending.subarray(HEADER_BYTES);
        continue;
      }
      if (this.#pending.length === 0) break;
      const n = Math.min(this.#remaining, this.#pending.length);
      const part = this.#pending.subarray(0, n);
      this.#pending = this.#pending.subarray(n);
      this.#remaining -= n;
      const target = this.#target;
      if (target !== undefined && !target.write(part)) {
        target.once('drain', () => {
          this.#pump(done);
        });
        return;
      }
    }
    done();
  }

  override _final(done: (e?: Error | null) => void): void {
    for (const o of this.#out) o.end();
    done();
  }
}

/**
 * A TTY container's one stream (no frames: the terminal merges stdout and stderr) handed to
 * `stdout` with the same backpressure; its end ends both destinations.
 */
export class TerminalStream extends Writable {
  readonly #out: readonly [NodeJS.WritableStream, NodeJS.WritableStream];

  constructor(stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream) {
    super({ highWaterMark: 64 * 1024 });
    this.#out = [stdout, stderr];
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    if (this.#out[0].write(chunk)) done();
    else
      this.#out[0].once('drain', () => {
        done();
      });
  }

  override _final(done: (e?: Error | null) => void): void {
    for (const o of this.#out) o.end();
    done();
  }
}
