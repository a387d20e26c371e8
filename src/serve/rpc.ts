// JSON-RPC 2.0 over a pair of streams, one message a line (`cfh serve --stdio`): lines are
// bounded, every message is parsed (protocol.ts), requests are handled concurrently and
// answered with their own id, and the server's own requests (approvals) wait for the
// caller's response. Nothing but protocol messages is written to the output.
import { CfhError } from '../errors.js';
import type { z } from 'zod';
import { Message, RPC, type RequestId } from './protocol.js';

/** The longest line read; a longer one is a parse error and is skipped whole. */
export const MAX_LINE_BYTES = 8 << 20;

export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

/** How a cfh error travels: JSON-RPC's code for it, the cfh code and its parts in data. */
export function errorObject(error: unknown): { code: number; message: string; data?: unknown } {
  if (error instanceof RpcError)
    return {
      code: error.code,
      message: error.message,
      ...(error.data === undefined ? {} : { data: error.data }),
    };
  if (error instanceof CfhError)
    return {
      code: RPC.cfhError,
      message: error.message,
      data: {
        code: error.code,
        boundary: error.boundary,
        ...(error.hint === undefined ? {} : { hint: error.hint }),
        details: error.details,
      },
    };
  return {
    code: RPC.internalError,
    message: error instanceof Error ? error.message : String(error),
  };
}

export type RequestHandler = (
  method: string,
  params: unknown,
  id: RequestId | undefined,
) => Promise<unknown>;

/** A message line as read: the text, or too long to keep. */
type Line = { text: string } | { tooLong: true };

async function* linesOf(input: NodeJS.ReadableStream, max: number): AsyncGenerator<Line> {
  let parts: Buffer[] = [];
  let size = 0;
  let skipping = false;
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (;;) {
      const nl = buf.indexOf(0x0a);
      const piece = nl < 0 ? buf : buf.subarray(0, nl);
      if (!skipping) {
        size += piece.length;
        if (size > max) {
          skipping = true;
          parts = [];
        } else parts.push(piece);
      }
      if (nl < 0) break;
      yield skipping ? { tooLong: true } : { text: Buffer.concat(parts).toString('utf8') };
      parts = [];
      size = 0;
      skipping = false;
      buf = buf.subarray(nl + 1);
    }
  }
  if (skipping) yield { tooLong: true };
  else if (size > 0) yield { text: Buffer.concat(parts).toString('utf8') };
}

export class LinePeer {
  readonly #input: NodeJS.ReadableStream;
  readonly #output: NodeJS.WritableStream;
  readonly #pending = new Map<string, (outcome: { result?: unknown; error?: unknown }) => void>();
  readonly #inFlight = new Set<Promise<unknown>>();
  #next = 0;

  constructor(input: NodeJS.ReadableStream, output: NodeJS.WritableStream) {
    this.#input = input;
    this.#output = output;
  }

  #write(message: Record<string, unknown>): void {
    this.#output.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  }

  notify(method: string, params: unknown): void {
    this.#write({ method, params });
  }

  /** A request of the server's own (`approval/request`); resolves with the caller's result. */
  request(method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
    this.#next += 1;
    const id = `cfh-${this.#next}`;
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#pending.delete(id);
        reject(signal.reason as Error);
      };
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, (outcome) => {
        signal.removeEventListener('abort', onAbort);
        this.#pending.delete(id);
        if ('error' in outcome)
          reject(
            new RpcError(RPC.internalError, 'the caller answered with an error', outcome.error),
          );
        else resolve(outcome.result);
      });
      this.#write({ id, method, params });
    });
  }

  /** Settles one of the server's requests (by its id) from elsewhere: `approval/answer`. */
  settle(id: string, result: unknown): boolean {
    const pending = this.#pending.get(id);
    if (pending === undefined) return false;
    pending({ result });
    return true;
  }

  /** Reads until end of input, handing each request to `handle`; waits for those in flight. */
  async serve(handle: RequestHandler): Promise<void> {
    for await (const line of linesOf(this.#input, MAX_LINE_BYTES)) {
      if ('tooLong' in line) {
        this.#write({
          id: null,
          error: { code: RPC.parseError, message: `a line longer than ${MAX_LINE_BYTES} bytes` },
        });
        continue;
      }
      if (line.text.trim() === '') continue;
      this.#dispatch(line.text, handle);
    }
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #dispatch(text: string, handle: RequestHandler): void {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      this.#write({ id: null, error: { code: RPC.parseError, message: 'not JSON' } });
      return;
    }
    const parsed = Message.safeParse(raw);
    if (!parsed.success) {
      const id = idOf(raw);
      this.#write({
        id,
        error: {
          code: RPC.invalidRequest,
          message: `not a JSON-RPC 2.0 message: ${issuesText(parsed.error)}`,
        },
      });
      return;
    }
    const message = parsed.data;
    if (!('method' in message)) {
      // A response to one of the server's requests; one to nothing pending is dropped.
      if (typeof message.id === 'string')
        this.#pending.get(message.id)?.(
          'error' in message ? { error: message.error } : { result: message.result },
        );
      return;
    }
    const { id, method, params } = message;
    // A handler that throws before its first await is answered like one that rejects.
    const work = (async () => handle(method, params, id))().then(
      (result) => {
        if (id !== undefined) this.#write({ id, result: result ?? null });
      },
      (error: unknown) => {
        // A notification gets no answer, not even an error (JSON-RPC 2.0, section 4.1).
        if (id !== undefined) this.#write({ id, error: errorObject(error) });
      },
    );
    this.#inFlight.add(work);
    void work.finally(() => this.#inFlight.delete(work));
  }
}

function idOf(raw: unknown): RequestId | null {
  if (typeof raw !== 'object' || raw === null || !('id' in raw)) return null;
  const id = raw.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

/** zod's issues as one line: `path: message; ...`. */
export function issuesText(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length === 0 ? '(message)' : i.path.join('.')}: ${i.message}`)
    .join('; ');
}
