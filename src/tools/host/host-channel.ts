// What runs one kind of host tool's calls (an MCP server's connection, an exec program).
import type { Observation } from '../observation.js';
import type { CreatedIds, Sanitizer } from './host-results.js';
import type { HostTool } from './host-tool.js';

export interface ChannelOutcome {
  /** Sanitized for the model (credentials scrubbed, operator-only identifiers referenced or concealed). */
  readonly observation: Observation;
  /** The raw result for outputs/, credentials scrubbed. */
  readonly raw: Buffer;
  readonly rawStderr: Buffer;
  /** The ids at the tool's `resources.idField`, and the references the model got for them. */
  readonly created: CreatedIds;
  readonly exitCode: number | null;
  readonly durationMs: number;
  readonly timedOut: boolean;
}

export interface HostChannel {
  run(
    tool: HostTool,
    args: unknown,
    callId: string,
    sanitizer: Sanitizer,
    /** The lower of the tool's timeout and the profile's `toolTimeoutSeconds`. */
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ChannelOutcome>;
  /** Stops whatever the channel still runs, with its whole process tree. */
  close(): Promise<void>;
}
