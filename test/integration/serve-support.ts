// A test's client of `cfh serve --stdio`: the real CLI as a child process, JSON-RPC lines on
// its stdin/stdout, responses matched by id, notifications kept in order.
import { createInterface } from 'node:readline';
import { startCfh } from './helpers.js';

export interface RpcMessage {
  readonly jsonrpc: '2.0';
  readonly id?: string | number | null;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
  readonly result?: Record<string, unknown>;
  readonly error?: {
    readonly code: number;
    readonly message: string;
    readonly data?: { readonly code?: string; readonly details?: Record<string, unknown> };
  };
}

export class ServeClient {
  readonly child: ReturnType<typeof startCfh>;
  readonly notes: RpcMessage[] = [];
  /** Responses with no request of ours (id null: parse errors, invalid requests). */
  readonly orphans: RpcMessage[] = [];
  /** Approval requests the server sent, answered by `onApproval`. */
  onApproval: ((m: RpcMessage) => unknown) | undefined;
  readonly #waiting = new Map<string | number, (m: RpcMessage) => void>();
  readonly #listeners = new Set<() => void>();
  #id = 0;

  constructor(args: readonly string[], env: Record<string, string> = {}) {
    this.child = startCfh(['serve', '--stdio', ...args], { env });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const m = JSON.parse(line) as RpcMessage;
      if (m.method === undefined) {
        const w = m.id === undefined || m.id === null ? undefined : this.#waiting.get(m.id);
        if (w === undefined) this.orphans.push(m);
        else {
          this.#waiting.delete(m.id as string | number);
          w(m);
        }
      } else if (m.method === 'approval/request' && this.onApproval !== undefined) {
        this.write({ jsonrpc: '2.0', id: m.id, result: this.onApproval(m) });
      } else this.notes.push(m);
      for (const l of this.#listeners) l();
    });
  }

  write(message: unknown): void {
    this.raw(JSON.stringify(message));
  }

  raw(line: string): void {
    this.child.stdin.write(`${line}\n`);
  }

  /** The whole response (result or error). */
  request(method: string, params?: unknown): Promise<RpcMessage> {
    this.#id += 1;
    const id = this.#id;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.write({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    });
  }

  /** Several requests in one write (one chunk on cfh's stdin): their responses, in order. */
  together(calls: readonly (readonly [string, unknown])[]): Promise<RpcMessage>[] {
    const lines: string[] = [];
    const answers = calls.map(([method, params]) => {
      this.#id += 1;
      const id = this.#id;
      lines.push(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      return new Promise<RpcMessage>((resolve) => {
        this.#waiting.set(id, resolve);
      });
    });
    this.child.stdin.write(`${lines.join('\n')}\n`);
    return answers;
  }

  /** The result, or a thrown error naming the protocol error. */
  async call(method: string, params?: unknown): Promise<Record<string, unknown>> {
    const m = await this.request(method, params);
    if (m.error !== undefined) throw new Error(`${method}: ${JSON.stringify(m.error)}`);
    return m.result ?? {};
  }

  /** The first notification `method` matching, waiting up to `timeoutMs`. */
  async note(
    method: string,
    matches: (p: Record<string, unknown>) => boolean = () => true,
    timeoutMs = 60_000,
  ): Promise<Record<string, unknown>> {
    const find = (): Record<string, unknown> | undefined =>
      this.notes.find((n) => n.method === method && matches(n.params ?? {}))?.params;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no ${method} notification in ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const l = (): void => {
          this.#listeners.delete(l);
          resolve();
        };
        this.#listeners.add(l);
        setTimeout(l, 200);
      });
    }
  }

  /** Starts a turn and waits for its turn/completed notification. */
  async turn(sessionId: string, prompt: string): Promise<Record<string, unknown>> {
    const { turnId } = await this.call('turn/start', { sessionId, prompt });
    return this.note('turn/completed', (p) => p.turnId === turnId);
  }

  /** The event records notified so far, in order. */
  events(): { seq: number; type: string; runId: string; data: Record<string, unknown> }[] {
    return this.notes
      .filter((n) => n.method === 'event')
      .map(
        (n) =>
          n.params?.record as {
            seq: number;
            type: string;
            runId: string;
            data: Record<string, unknown>;
          },
      );
  }

  /** Closes stdin and waits for the process to end. */
  async end(): Promise<number> {
    this.child.stdin.end();
    const r = await this.child;
    return r.exitCode ?? -1;
  }
}
