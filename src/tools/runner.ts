// What running a tool gives back, whatever executes it (the run's sandbox containers, the
// host-tool channel): the observation for the model, and the raw output for the evidence.
// A runner accepts only an AuthorizedCall: nothing undecided can reach it.
import type { AuthorizedCall } from '../mediator/mediator.js';
import type { Observation } from './observation.js';
import type { Label } from '../cfc/label.js';

export interface ToolOutcome {
  readonly observation: Observation;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly exitCode: number | null;
  readonly durationMs: number;
  /** Where it ran: a container id, or `host:<tool>`. */
  readonly where: string;
  readonly timedOut: boolean;
  /**
   * What the result is made of, when the runner knows it better than the tool's declared
   * label: a child run's context label at its end (AH-CFC-13). None: the tool's label.
   */
  readonly label?: Label | undefined;
}

export interface ToolRunner {
  run(call: AuthorizedCall, limitChars: number, signal: AbortSignal): Promise<ToolOutcome>;
}

/**
 * The outcome of a tool cfh itself answers on the host (a draft's diff, a child run): its
 * observation, the text it gives as stdout, timed from `startedMs` (performance.now()).
 */
export function hostOutcome(
  tool: string,
  startedMs: number,
  observation: Observation,
  stdout: string,
  label?: Label,
): ToolOutcome {
  return {
    observation,
    stdout: Buffer.from(stdout, 'utf8'),
    stderr: Buffer.alloc(0),
    exitCode: observation.status === 'success' ? 0 : 1,
    durationMs: Math.round(performance.now() - startedMs),
    where: `host:${tool}`,
    timedOut: false,
    ...(label === undefined ? {} : { label }),
  };
}
