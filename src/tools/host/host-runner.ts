// Runs an authorized host-tool call (executor `host`): the sibling of the sandbox runner.
// Only an AuthorizedCall for one of the run's own host tools is accepted; its channel runs
// it; what the model gets back is already sanitized (host-results.ts), and the ids of any
// durable resources it created (its result's `resources.idField`) are recorded for the
// operator with the references the model got for them (AH-TOOL-9).
import { HarnessInvariantError } from '../../errors.js';
import { isAuthorized, type AuthorizedCall } from '../../mediator/mediator.js';
import type { ToolOutcome, ToolRunner } from '../runner.js';
import type { HostChannel } from './host-channel.js';
import type { HostToolSink } from './host-launch.js';
import type { Sanitizer } from './host-results.js';
import type { HostTool } from './host-tool.js';

export interface HostBinding {
  readonly tool: HostTool;
  readonly channel: HostChannel;
  readonly sanitizer: Sanitizer;
}

/** A durable resource a call created, as the terminal evidence keeps it. */
export interface CreatedResources {
  readonly callId: string;
  readonly tool: string;
  readonly kind: string;
  readonly ids: readonly string[];
  /** The reference the model was shown for each id, in the same order. */
  readonly references: readonly string[];
  readonly enumerate: string;
  readonly cancel: string;
  readonly cleanup: string;
  readonly retention: string;
}

/** The ids one call's record keeps at most. */
const MAX_IDS = 100;

export class HostToolRunner implements ToolRunner {
  readonly #bindings: ReadonlyMap<string, HostBinding>;
  readonly #sink: HostToolSink;
  readonly created: CreatedResources[] = [];

  readonly #capMs: number;

  /** `capMs`: the profile's `toolTimeoutSeconds` (infinite when not set). */
  constructor(bindings: readonly HostBinding[], sink: HostToolSink, capMs: number) {
    this.#bindings = new Map(bindings.map((b) => [b.tool.name, b]));
    this.#sink = sink;
    this.#capMs = capMs;
  }

  async run(call: AuthorizedCall, _limitChars: number, signal: AbortSignal): Promise<ToolOutcome> {
    const binding = this.#bindings.get(call.tool.name);
    if (!isAuthorized(call) || binding === undefined || binding.tool !== call.tool) {
      throw new HarnessInvariantError(
        'unauthorized_call',
        `the host runner was handed ${call.tool.name} without the mediator's authorization`,
        { tool: call.tool.name },
      );
    }
    const { tool, channel } = binding;
    // The call's result may echo the model's own strings of it: left as written there.
    const sanitizer = binding.sanitizer.forCall(call.args);
    const timeoutMs = Math.min(tool.timeoutMs, this.#capMs);
    const out = await channel.run(tool, call.args, call.callId, sanitizer, timeoutMs, signal);
    if (tool.resources !== undefined && out.observation.status === 'success') {
      const r = tool.resources;
      if (out.created.ids.length > 0) {
        const created: CreatedResources = {
          callId: call.callId,
          tool: tool.name,
          kind: r.kind,
          // For the operator (AH-TOOL-9); the model got the references.
          ids: out.created.ids.slice(0, MAX_IDS),
          references: out.created.references.slice(0, MAX_IDS),
          enumerate: r.enumerate,
          cancel: r.cancel,
          cleanup: r.cleanup,
          retention: r.retention,
        };
        this.created.push(created);
        await this.#sink.event('host_resources_created', { ...created }, true);
      }
    }
    return {
      observation: out.observation,
      stdout: out.raw,
      stderr: out.rawStderr,
      exitCode: out.exitCode,
      durationMs: out.durationMs,
      where: `host:${tool.authority}`,
      timedOut: out.timedOut,
    };
  }
}
