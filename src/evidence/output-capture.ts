// One stream of the command's output: written to outputs/<name> up to the profile's
// output limit, teed live to cfh's own stream, and kept (bounded) for --json. Beyond the
// limit bytes are counted and dropped, and the truncation is recorded. cfh's memory stays
// bounded whatever its consumers do: the evidence copy is written at disk speed, and the
// live copy is best effort: while cfh's own stdout/stderr holds more than LIVE_BUFFER_BYTES
// unwritten (a pipe nobody drains, a stalled terminal), live bytes are dropped, counted and
// reported (`liveDropped`), never queued, and the container is never slowed by it.
import { open, type FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';

export interface CaptureResult {
  readonly name: 'stdout' | 'stderr';
  readonly file: string;
  readonly bytesSeen: number;
  readonly bytesKept: number;
  readonly truncated: boolean;
  /** Bytes kept in the evidence but not shown live: cfh's own output was not draining. */
  readonly liveDropped: number;
}

/** How much cfh lets queue on its own stdout/stderr before live output is dropped. */
export const LIVE_BUFFER_BYTES = 1024 * 1024;

export class OutputCapture extends Writable {
  readonly #name: 'stdout' | 'stderr';
  readonly #file: string;
  readonly #limit: number;
  readonly #live: NodeJS.WritableStream | undefined;
  readonly #memoryLimit: number;
  readonly #memory: Buffer[] = [];
  #memoryBytes = 0;
  #handle: FileHandle | undefined;
  #seen = 0;
  #kept = 0;
  #liveDropped = 0;

  constructor(options: {
    name: 'stdout' | 'stderr';
    file: string;
    limitBytes: number;
    live?: NodeJS.WritableStream | undefined;
    memoryLimitBytes?: number;
  }) {
    super();
    this.#name = options.name;
    this.#file = options.file;
    this.#limit = options.limitBytes;
    this.#live = options.live;
    this.#memoryLimit = options.memoryLimitBytes ?? 0;
  }

  override _construct(callback: (error?: Error | null) => void): void {
    open(this.#file, 'wx', 0o640).then(
      (h) => {
        this.#handle = h;
        callback();
      },
      (e: unknown) => {
        callback(e as Error);
      },
    );
  }

  override _write(
    chunk: Buffer,
    _enc: BufferEncoding,
    callback: (error?: Error | null) => void,
  ): void {
    this.#seen += chunk.length;
    const room = this.#limit - this.#kept;
    if (room <= 0) {
      callback();
      return;
    }
    const slice = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.#kept += slice.length;
    if (this.#memoryBytes < this.#memoryLimit) {
      const part = slice.subarray(0, this.#memoryLimit - this.#memoryBytes);
      this.#memory.push(Buffer.from(part));
      this.#memoryBytes += part.length;
    }
    const handle = this.#handle;
    if (handle === undefined) {
      callback(new Error('output file not open'));
      return;
    }
    this.#tee(slice);
    handle.write(slice).then(
      () => {
        callback();
      },
      (e: unknown) => {
        callback(e as Error);
      },
    );
  }

  #tee(slice: Buffer): void {
    const live = this.#live;
    if (live === undefined) return;
    const stream = live as Partial<Writable>;
    const queued = stream.writableLength ?? 0;
    // A reader that went away, or one that is not keeping up: the evidence keeps it all.
    if (stream.destroyed === true || queued > LIVE_BUFFER_BYTES) {
      this.#liveDropped += slice.length;
      return;
    }
    live.write(slice);
  }

  override _final(callback: (error?: Error | null) => void): void {
    const handle = this.#handle;
    if (handle === undefined) {
      callback();
      return;
    }
    this.#handle = undefined;
    handle
      .sync()
      .then(() => handle.close())
      .then(
        () => {
          callback();
        },
        (e: unknown) => {
          callback(e as Error);
        },
      );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const handle = this.#handle;
    this.#handle = undefined;
    if (handle === undefined) {
      callback(error);
      return;
    }
    handle.close().then(
      () => {
        callback(error);
      },
      () => {
        callback(error);
      },
    );
  }

  result(): CaptureResult {
    return {
      name: this.#name,
      file: this.#file,
      bytesSeen: this.#seen,
      bytesKept: this.#kept,
      truncated: this.#seen > this.#kept,
      liveDropped: this.#liveDropped,
    };
  }

  /** What --json shows: at most the memory limit, and whether anything was left out. */
  text(): { text: string; truncated: boolean } {
    const text = Buffer.concat(this.#memory).toString('utf8');
    return { text, truncated: this.#seen > this.#memoryBytes };
  }
}
