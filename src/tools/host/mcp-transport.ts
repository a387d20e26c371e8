// The MCP stdio transport over a host process cfh started itself (host-process.ts), instead
// of the SDK's own: the process gets its own group and cfh's clean environment, its stderr is
// kept (bounded) for the operator, one message is bounded, and anything on stdout that is
// not a JSON-RPC message breaks the channel rather than being skipped.
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export type ServerProcess = ChildProcessByStdio<Writable, Readable, Readable>;

/** Why the channel broke, in cfh's words (never the server's output). */
export type ChannelBreak =
  | { readonly kind: 'exited'; readonly code: number | null; readonly signal: string | null }
  | { readonly kind: 'oversize'; readonly limitBytes: number }
  | { readonly kind: 'protocol'; readonly what: string }
  | { readonly kind: 'io'; readonly what: string };

/** What the evidence keeps of a server's stderr. */
export const STDERR_KEPT_BYTES = 64 * 1024;

export class HostProcessTransport implements Transport {
  readonly #child: ServerProcess;
  readonly #buffer: ReadBuffer;
  readonly #limit: number;
  /** Read past what is kept, so a credential across the cut is whole when it is scrubbed. */
  readonly #stderrRead: number;
  #stderr: Buffer[] = [];
  #stderrBytes = 0;
  #stderrDropped = 0;
  #closed = false;
  /** The first break of the channel; undefined while it works (or after cfh closed it). */
  broke: ChannelBreak | undefined;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  // The SDK's Transport declares it generic; one message type is all this transport sends.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  /** `scrubMargin`: how far past the kept bytes a credential's spelling can reach. */
  constructor(child: ServerProcess, maxMessageBytes: number, scrubMargin: number) {
    this.#child = child;
    this.#limit = maxMessageBytes;
    this.#stderrRead = STDERR_KEPT_BYTES + scrubMargin;
    this.#buffer = new ReadBuffer({ maxBufferSize: maxMessageBytes });
  }

  start(): Promise<void> {
    const child = this.#child;
    child.stdout.on('data', (chunk: Buffer) => {
      this.#read(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const room = this.#stderrRead - this.#stderrBytes;
      if (room > 0) this.#stderr.push(chunk.subarray(0, room));
      this.#stderrBytes += Math.min(room, chunk.length);
      this.#stderrDropped += Math.max(0, chunk.length - Math.max(room, 0));
    });
    child.stdin.on('error', (e: Error) => {
      this.#break({ kind: 'io', what: `stdin: ${e.message}` });
    });
    child.stdout.on('error', (e: Error) => {
      this.#break({ kind: 'io', what: `stdout: ${e.message}` });
    });
    child.on('exit', (code, signal) => {
      this.#break({ kind: 'exited', code, signal });
      this.#finish();
    });
    return Promise.resolve();
  }

  #read(chunk: Buffer): void {
    if (this.broke !== undefined || this.#closed) return;
    try {
      this.#buffer.append(chunk);
    } catch {
      this.#break({ kind: 'oversize', limitBytes: this.#limit });
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch {
        this.#break({ kind: 'protocol', what: 'a line on stdout that is not a JSON-RPC message' });
        return;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  /** The channel is unusable from here: pending requests fail, the connection is retired. */
  #break(why: ChannelBreak): void {
    if (this.#closed || this.broke !== undefined) return;
    this.broke = why;
    this.#buffer.clear();
    this.onerror?.(new Error(`host tool channel broke: ${why.kind}`));
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed || this.broke !== undefined)
      return Promise.reject(new Error('the host tool channel is closed'));
    return new Promise((resolve) => {
      if (this.#child.stdin.write(serializeMessage(message))) resolve();
      else this.#child.stdin.once('drain', resolve);
    });
  }

  /** cfh closes its side: no break is recorded for what follows (the process is stopped). */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#child.stdin.end();
      this.onclose?.();
    }
    return Promise.resolve();
  }

  /**
   * What the server wrote to stderr: the first 64 KiB and the scrub margin past them, every
   * chunk joined (a credential across two writes is one), for the caller to scrub whole and
   * only then cut (Scrubber.cutBytes); and how much was not even read.
   */
  stderr(): { read: Buffer; dropped: number } {
    return { read: Buffer.concat(this.#stderr), dropped: this.#stderrDropped };
  }
}
