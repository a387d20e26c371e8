// An MCP server's calls for a run: one connection, started at the first call (or the probe's,
// kept, with `start: run-start`), reused, replaced after a call timed out (the old one is
// stopped once its other calls are done), and stopped with its whole tree when the run ends.
// A replacement must list the exposed tools with the schemas the model was shown, or the
// channel fails: the surface cannot change under the model (AH-TOOL-2).
import { z } from 'zod';
import type { McpHostTool } from '../../config/host-tools-schema.js';
import { HostToolError } from '../../errors.js';
import type { HostChannel, ChannelOutcome } from './host-channel.js';
import type { HostLaunch } from './host-launch.js';
import { McpConnection, type McpServerSpec } from './mcp-connection.js';
import {
  NONE_CREATED,
  mcpErrorObservation,
  mcpObservation,
  type Sanitizer,
} from './host-results.js';
import { schemaDigest, type HostTool } from './host-tool.js';
import { errorObservation } from '../observation.js';

const Args = z.record(z.string(), z.unknown());
const MAX_PROGRESS_EVENTS = 200;

export class McpChannel implements HostChannel {
  readonly #spec: McpServerSpec;
  readonly #launch: HostLaunch;
  /** The exposed tools' schema digests, by the server's name: what the model was shown. */
  readonly #expected: ReadonlyMap<string, string>;
  readonly #all = new Set<McpConnection>();
  #current: McpConnection | undefined;
  #opening: Promise<McpConnection> | undefined;
  #closed = false;

  constructor(
    spec: McpServerSpec,
    _entry: McpHostTool,
    launch: HostLaunch,
    expected: ReadonlyMap<string, string>,
    kept: McpConnection | undefined,
  ) {
    this.#spec = spec;
    this.#launch = launch;
    this.#expected = expected;
    if (kept !== undefined) {
      this.#current = kept;
      this.#all.add(kept);
    }
  }

  async #connection(signal: AbortSignal): Promise<McpConnection> {
    if (this.#closed) throw new Error('the run is ending: no new host tool calls');
    if (this.#current?.usable === true) return this.#current;
    this.#opening ??= this.#open(signal).finally(() => {
      this.#opening = undefined;
    });
    return this.#opening;
  }

  async #open(signal: AbortSignal): Promise<McpConnection> {
    const conn = await McpConnection.open(this.#spec, 'session', this.#launch, signal);
    this.#all.add(conn);
    const listed = new Map((await conn.listTools(signal)).map((t) => [t.name, t]));
    for (const [name, digest] of this.#expected) {
      const tool = listed.get(name);
      if (tool === undefined || schemaDigest(tool.inputSchema) !== digest) {
        await conn.close('tools_changed');
        throw new HostToolError(
          'mcp_tools_changed',
          `host tool ${this.#spec.name}: tool ${name} is ${tool === undefined ? 'no longer listed' : 'listed with another input schema'} than the model was shown`,
          { tool: this.#spec.name },
        );
      }
    }
    if (this.#closed) {
      await conn.close('run_ended');
      throw new Error('the run is ending: no new host tool calls');
    }
    this.#current = conn;
    return conn;
  }

  async run(
    tool: HostTool,
    args: unknown,
    callId: string,
    sanitizer: Sanitizer,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ChannelOutcome> {
    const conn = await this.#connection(signal);
    const started = performance.now();
    const sink = this.#launch.sink;
    // A server that floods progress cannot flood the evidence: the first ones are kept.
    let progressKept = 0;
    let progressDropped = 0;
    const outcome = await conn.call(
      tool.remoteName,
      Args.parse(args),
      timeoutMs,
      (p) => {
        if (progressKept >= MAX_PROGRESS_EVENTS) {
          progressDropped += 1;
          return;
        }
        progressKept += 1;
        // MCP progress notifications are events (AH-TOOL-3), scrubbed like everything else.
        sink
          .event('host_tool_progress', {
            callId,
            tool: tool.name,
            progress: p.progress,
            ...(p.total === undefined ? {} : { total: p.total }),
            ...(p.message === undefined
              ? {}
              : { message: sanitizer.evidenceText(p.message).slice(0, 200) }),
          })
          .catch(() => undefined);
      },
      signal,
    );
    const durationMs = Math.round(performance.now() - started);
    if (progressDropped > 0)
      await sink.event('host_tool_progress_dropped', {
        callId,
        tool: tool.name,
        kept: progressKept,
        dropped: progressDropped,
      });
    const base = { exitCode: null, durationMs, rawStderr: Buffer.alloc(0), created: NONE_CREATED };
    switch (outcome.kind) {
      case 'result': {
        const raw = Buffer.from(JSON.stringify(outcome.result));
        const shown = mcpObservation(outcome.result, sanitizer, tool.resources);
        return {
          ...base,
          observation: shown.observation,
          raw: sanitizer.forEvidence(raw),
          created: shown.created,
          timedOut: false,
        };
      }
      case 'mcp_error':
        return {
          ...base,
          observation: mcpErrorObservation(outcome.code, outcome.message, sanitizer),
          raw: sanitizer.forEvidence(
            Buffer.from(
              JSON.stringify({ error: { code: outcome.code, message: outcome.message } }),
            ),
          ),
          timedOut: false,
        };
      case 'timeout':
        return {
          ...base,
          observation: errorObservation(
            'timeout',
            `timed out after ${timeoutMs} ms: the call was cancelled and the server restarted`,
          ),
          raw: Buffer.alloc(0),
          timedOut: true,
        };
      case 'oversize':
        return {
          ...base,
          observation: errorObservation(
            'error',
            `the result was larger than ${outcome.limitBytes} bytes: not read (the server was restarted)`,
          ),
          raw: Buffer.alloc(0),
          timedOut: false,
        };
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#opening?.catch(() => undefined);
    await Promise.all([...this.#all].map((c) => c.close('run_ended')));
  }
}
