// One running MCP server for a run: started in its own process group with cfh's clean
// environment plus the declared one, initialized through `@modelcontextprotocol/sdk`'s
// client, asked for its tools, called, and stopped with its whole tree (host-process.ts).
// What the server answers with a JSON-RPC error is the call's result (a typed observation);
// a channel that breaks (exit, garbage on stdout, a broken result) is a failure of the tool
// boundary, reported in cfh's words only (AH-TOOL-6).
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { HostToolError, errorMessage, type ErrorCode } from '../../errors.js';
import { CFH_VERSION } from '../../version.js';
import { HOST_BASE_ENV, HOST_PROCESS_MARKER, stopTree, type LedgerEntry } from './host-process.js';
import type { HostLaunch } from './host-launch.js';
import { assertPinned, type HostToolPins } from './host-pin.js';
import {
  HostProcessTransport,
  STDERR_KEPT_BYTES,
  type ChannelBreak,
  type ServerProcess,
} from './mcp-transport.js';

export interface McpServerSpec {
  readonly name: string;
  /** Absolute, found at planning: the server's argv[0]. */
  readonly command: string;
  /** Its real path, checked and pinned at planning: what is spawned. */
  readonly executable: string;
  /** Re-checked before every start: the probe, the first call's server, each restart. */
  readonly pins: HostToolPins;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly outputBytes: number;
}

export type McpCallOutcome =
  | { readonly kind: 'result'; readonly result: CallToolResult }
  | { readonly kind: 'mcp_error'; readonly code: number; readonly message: string }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'oversize'; readonly limitBytes: number };

export interface ProgressReport {
  readonly progress: number;
  readonly total?: number | undefined;
  readonly message?: string | undefined;
}

const MAX_LISTED_TOOLS = 1000;
const STOP_GRACE_MS = 1000;

function describeBreak(why: ChannelBreak): string {
  switch (why.kind) {
    case 'exited':
      return `the server exited (${why.signal === null ? `status ${String(why.code)}` : why.signal})`;
    case 'oversize':
      return `a message exceeded ${why.limitBytes} bytes`;
    case 'protocol':
      return `the server broke the protocol: ${why.what}`;
    case 'io':
      return `the channel failed: ${why.what}`;
  }
}

export class McpConnection {
  readonly spec: McpServerSpec;
  readonly purpose: 'probe' | 'session';
  readonly #launch: HostLaunch;
  readonly #child: ServerProcess;
  readonly #transport: HostProcessTransport;
  readonly #client: Client;
  readonly #entry: LedgerEntry;
  readonly #exited: Promise<void>;
  #stopped: Promise<void> | undefined;
  #inFlight = 0;
  #retired = false;

  private constructor(
    spec: McpServerSpec,
    purpose: 'probe' | 'session',
    launch: HostLaunch,
    child: ServerProcess,
    entry: LedgerEntry,
  ) {
    this.spec = spec;
    this.purpose = purpose;
    this.#launch = launch;
    this.#child = child;
    this.#entry = entry;
    this.#exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else
        child.once('exit', () => {
          resolve();
        });
    });
    // Three times the longest spelling: a line break between any two of its characters.
    this.#transport = new HostProcessTransport(
      child,
      spec.outputBytes,
      3 * launch.scrubber.longest,
    );
    // No sampling, roots or elicitation: the server can ask cfh for nothing.
    this.#client = new Client({ name: 'cfh', version: CFH_VERSION }, { capabilities: {} });
  }

  /** Starts the server and completes `initialize` within the server's timeout. */
  static async open(
    spec: McpServerSpec,
    purpose: 'probe' | 'session',
    launch: HostLaunch,
    signal: AbortSignal,
  ): Promise<McpConnection> {
    signal.throwIfAborted();
    await assertPinned(spec.name, spec.pins, launch.sink, { purpose });
    const entry = await launch.ledger.open(launch.runId, spec.name, launch.owner, spec.command);
    let child: ServerProcess;
    try {
      child = spawn(spec.executable, [...spec.args], {
        argv0: spec.command,
        cwd: spec.cwd,
        env: { ...HOST_BASE_ENV, ...spec.env, [HOST_PROCESS_MARKER]: entry.record.marker },
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
    } catch (error) {
      await entry.close();
      throw new HostToolError(
        'host_tool_spawn_failed',
        `host tool ${spec.name}: cannot start ${spec.command}: ${errorMessage(error)}`,
        { tool: spec.name },
      );
    }
    const pid = child.pid ?? 0;
    await entry.started(pid);
    const connection = new McpConnection(spec, purpose, launch, child, entry);
    await launch.sink.event(
      'host_tool_started',
      { tool: spec.name, kind: 'mcp', purpose, pid, start: entry.record.start ?? null },
      true,
    );
    try {
      await connection.#client.connect(connection.#transport, {
        signal,
        timeout: spec.timeoutMs,
      });
    } catch (error) {
      const why = connection.#transport.broke;
      await connection.close('initialize_failed');
      signal.throwIfAborted();
      throw new HostToolError(
        'mcp_initialize_failed',
        `host tool ${spec.name}: the server did not complete initialize: ${
          why === undefined ? connection.#scrubbed(errorMessage(error)) : describeBreak(why)
        }`,
        { tool: spec.name },
      );
    }
    return connection;
  }

  get pid(): number {
    return this.#child.pid ?? 0;
  }

  /** Whether new calls may use it (not broken, not retired after a timeout). */
  get usable(): boolean {
    return !this.#retired && this.#transport.broke === undefined && this.#stopped === undefined;
  }

  serverInfo(): Record<string, unknown> {
    const v = this.#client.getServerVersion();
    return v === undefined ? {} : { name: v.name, version: v.version };
  }

  /** Every tool the server lists (all pages, at most 1000). */
  async listTools(signal: AbortSignal): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      let page: { tools: Tool[]; nextCursor?: string | undefined };
      try {
        page = await this.#client.listTools(cursor === undefined ? {} : { cursor }, {
          signal,
          timeout: this.spec.timeoutMs,
        });
      } catch (error) {
        signal.throwIfAborted();
        throw this.#failure('mcp_list_failed', 'tools/list', error);
      }
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined && tools.length < MAX_LISTED_TOOLS);
    return tools.slice(0, MAX_LISTED_TOOLS);
  }

  /** One tools/call, bounded by `timeoutMs`; progress notifications go to `onProgress`. */
  async call(
    name: string,
    args: Record<string, unknown>,
    timeoutMs: number,
    onProgress: (p: ProgressReport) => void,
    signal: AbortSignal,
  ): Promise<McpCallOutcome> {
    const timer = new AbortController();
    const timeout = setTimeout(() => {
      timer.abort();
    }, timeoutMs);
    this.#inFlight += 1;
    try {
      const result = await this.#client.callTool({ name, arguments: args }, undefined, {
        signal: AbortSignal.any([signal, timer.signal]),
        // The SDK's own timer is a backstop only: cfh's decides.
        timeout: timeoutMs + 5000,
        onprogress: (p) => {
          onProgress({ progress: p.progress, total: p.total, message: p.message });
        },
      });
      // `toolResult` is the protocol's compatibility shape, which no current server sends.
      const parsed = CallToolResultSchema.safeParse(result);
      if (!parsed.success)
        throw this.#failure('mcp_protocol_failed', `tools/call ${name}`, 'no content in result');
      return { kind: 'result', result: parsed.data };
    } catch (error) {
      signal.throwIfAborted();
      if (error instanceof HostToolError) throw error;
      if (timer.signal.aborted) {
        // Timeouts kill the call: the server goes once its other calls are done.
        this.#retire('timeout');
        return { kind: 'timeout' };
      }
      const broke = this.#transport.broke;
      if (broke?.kind === 'oversize') {
        this.#retire('oversize');
        return { kind: 'oversize', limitBytes: broke.limitBytes };
      }
      if (broke === undefined && error instanceof McpError)
        // The SDK prefixes the server's message with its code: the code is kept apart.
        return {
          kind: 'mcp_error',
          code: error.code,
          message: error.message.replace(/^MCP error -?\d+: /, ''),
        };
      throw this.#failure('mcp_call_failed', `tools/call ${name}`, error);
    } finally {
      clearTimeout(timeout);
      this.#inFlight -= 1;
      if (this.#retired && this.#inFlight === 0) this.close('retired').catch(() => undefined);
    }
  }

  #retire(reason: string): void {
    if (this.#retired) return;
    this.#retired = true;
    this.#launch.sink
      .event('host_tool_retired', { tool: this.spec.name, reason, pid: this.pid })
      .catch(() => undefined);
  }

  #scrubbed(text: string): string {
    return this.#launch.scrubber.text(text).slice(0, 500);
  }

  /** A broken channel in cfh's words; the server's own text only scrubbed, never raw. */
  #failure(code: ErrorCode, during: string, error: unknown): HostToolError {
    const why = this.#transport.broke;
    const detail =
      why === undefined
        ? this.#scrubbed(typeof error === 'string' ? error : errorMessage(error))
        : describeBreak(why);
    return new HostToolError(code, `host tool ${this.spec.name}: ${during} failed: ${detail}`, {
      tool: this.spec.name,
    });
  }

  /** Stops the server and its whole tree, once; records how it ended and its stderr. */
  close(reason: string): Promise<void> {
    this.#stopped ??= this.#stop(reason);
    return this.#stopped;
  }

  async #stop(reason: string): Promise<void> {
    const broke = this.#transport.broke;
    await this.#transport.close();
    // A moment to exit on its own after stdin closes, then the group, then strays.
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#exited,
      new Promise((r) => {
        grace = setTimeout(r, STOP_GRACE_MS);
      }),
    ]);
    clearTimeout(grace);
    const { strays } = await stopTree(
      this.pid,
      this.#entry.record.start,
      this.#entry.record.marker,
      STOP_GRACE_MS,
    );
    await this.#exited;
    // Our ends of its pipes, whoever still holds the other ends: cfh never waits on them.
    this.#child.stdout.destroy();
    this.#child.stderr.destroy();
    this.#child.stdin.destroy();
    await this.#entry.close();
    const scrubber = this.#launch.scrubber;
    const { read, dropped: unread } = this.#transport.stderr();
    // Scrubbed before it is cut, and never cut inside a credential (AH-TOOL-7).
    const kept = scrubber.cutBytes(read, STDERR_KEPT_BYTES, unread > 0);
    const dropped = unread + Math.max(0, read.length - STDERR_KEPT_BYTES);
    const sink = this.#launch.sink;
    const stderr =
      kept.length === 0
        ? null
        : await sink.output(`host-${this.spec.name}-${this.pid}.stderr`, kept);
    await sink.event(
      'host_tool_stopped',
      {
        tool: this.spec.name,
        purpose: this.purpose,
        pid: this.pid,
        reason,
        exitCode: this.#child.exitCode,
        signal: this.#child.signalCode,
        strays,
        ...(broke === undefined ? {} : { broke: describeBreak(broke) }),
        stderr,
        stderrDropped: dropped,
      },
      true,
    );
  }
}
