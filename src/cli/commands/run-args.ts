// The two requests `cfh sandbox run` makes: a command run (COMMAND after --) and an agent
// run (--prompt). Each is built from the flag table by run-request.ts, so a handler gets only
// the fields of its kind, already typed.
import type { SandboxRunOptions } from '../../engine/run/run-plan.js';

/** What both kinds share: the profile, workspace, mounts, limits, network and output. */
export interface RunRequestCommon extends Omit<
  SandboxRunOptions,
  'command' | 'planning' | 'describing' | 'failOnBlocked' | 'interactive' | 'tty'
> {
  readonly json: boolean;
  /** `--events jsonl`: the run's event records on stdout as they are appended. */
  readonly events?: 'jsonl' | undefined;
}

export interface CommandRunRequest extends RunRequestCommon {
  readonly kind: 'command';
  readonly command: readonly string[];
  /** `-i`: cfh's stdin streamed into the command's. */
  readonly interactive: boolean;
  /** `-t`: a pseudo-terminal for the command. */
  readonly tty: boolean;
}

export interface AgentRunRequest extends RunRequestCommon {
  readonly kind: 'agent';
  /** The direct command to the model. */
  readonly prompt: string;
  readonly context: readonly string[];
  readonly quote: readonly string[];
  readonly script?: string | undefined;
  readonly provider?: string | undefined;
  /** `--model`, `--base-url`: the route over the profile's `model` section. */
  readonly model?: string | undefined;
  readonly baseUrl?: string | undefined;
  /** Planning mode: every mutation denied; the final answer kept as plan.md. */
  readonly plan: boolean;
  /** Execute the plan of this planning run (given as context; risky calls ask). */
  readonly fromPlan?: string | undefined;
  /** Rules approved for the whole run. */
  readonly approve: readonly string[];
  /** A file of exact calls approved ahead of time. */
  readonly approvals?: string | undefined;
  /** Never prompt, even on a terminal. */
  readonly nonInteractive: boolean;
  /** Denied or unapproved calls fail the run (over the profile's `failOnBlocked`). */
  readonly failOnBlocked: boolean;
}

export type RunRequest = CommandRunRequest | AgentRunRequest;
