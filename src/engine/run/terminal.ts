// How a run ends, for both kinds of run (AH-LIFE-1, AH-LIFE-4): one terminal state, a
// reason naming any limit reached, and the exit status the CLI gives it. This table is the
// one exit-status policy of cfh (docs/operators.md, "Exit status"):
//
//   the command exited N                         completed  N
//   the agent answered                           completed  0
//   wall time (--timeout, max_wall_time_seconds) failed     124
//   memory (the command was OOM-killed)          failed     137
//   another budget of an agent run               failed     1
//   an agent run's calls were blocked, with
//     --fail-on-blocked / failOnBlocked           failed     1
//   a draft's bytes or the host's free space     failed     1
//   SIGINT / SIGTERM                             cancelled  130 / 143
//   SIGHUP (cfh's terminal went away)            cancelled  129
//   an error before the work started             failed     125   (nothing ran)
//   an error after the work started              failed     1
import { EXIT_CANNOT_START, type CfhError } from '../../errors.js';

export type TerminalStatus = 'completed' | 'failed' | 'cancelled';

export const EXIT_WALL_TIME = 124;
export const EXIT_OOM = 137;
export const EXIT_SIGINT = 130;
export const EXIT_SIGTERM = 143;
export const EXIT_SIGHUP = 129;
export const EXIT_FAILED_AFTER_START = 1;

/** The signals that cancel a run: SIGHUP (its terminal hung up) as SIGTERM does (AH-LIFE-3). */
export type CancelBySignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';
export type CancelSignal = CancelBySignal | 'abort';

/** What the work of a run determined, before the terminal record is written. */
export type RunEnd =
  | { readonly kind: 'exited'; readonly exitCode: number }
  | { readonly kind: 'answered' }
  /** The agent answered, but calls were denied or left unapproved and that fails the run. */
  | { readonly kind: 'blocked'; readonly denied: number; readonly unapproved: number }
  | { readonly kind: 'wall_time' }
  | { readonly kind: 'memory' }
  | { readonly kind: 'budget'; readonly budget: string }
  /** A bound the run session holds while the work runs (draft-watch.ts). */
  | { readonly kind: 'limit'; readonly limit: 'draft_bytes' | 'draft_free_space' }
  | { readonly kind: 'cancelled'; readonly signal: CancelSignal }
  | { readonly kind: 'error'; readonly error: CfhError; readonly started: boolean };

export interface Terminal {
  readonly status: TerminalStatus;
  readonly reason: string;
  readonly exitCode: number;
}

export function decideTerminal(end: RunEnd): Terminal {
  switch (end.kind) {
    case 'exited':
      return {
        status: 'completed',
        reason: end.exitCode === 0 ? 'exited' : 'exited_nonzero',
        exitCode: end.exitCode,
      };
    case 'answered':
      return { status: 'completed', reason: 'final_answer', exitCode: 0 };
    case 'blocked':
      return { status: 'failed', reason: 'blocked_calls', exitCode: EXIT_FAILED_AFTER_START };
    case 'wall_time':
      return { status: 'failed', reason: 'limit_reached:wall_time', exitCode: EXIT_WALL_TIME };
    case 'memory':
      return { status: 'failed', reason: 'limit_reached:memory', exitCode: EXIT_OOM };
    case 'limit':
      return {
        status: 'failed',
        reason: `limit_reached:${end.limit}`,
        exitCode: EXIT_FAILED_AFTER_START,
      };
    case 'budget':
      return {
        status: 'failed',
        reason: `budget_exceeded:${end.budget}`,
        exitCode: end.budget === 'max_wall_time_seconds' ? EXIT_WALL_TIME : EXIT_FAILED_AFTER_START,
      };
    case 'cancelled':
      return {
        status: 'cancelled',
        reason: `cancelled:${end.signal}`,
        exitCode: cancelExit(end.signal),
      };
    case 'error':
      return {
        status: 'failed',
        reason: `error:${end.error.code}`,
        exitCode: end.started ? EXIT_FAILED_AFTER_START : EXIT_CANNOT_START,
      };
  }
}

/** The exit status of a run cancelled by `signal` (128 + its number; `abort` as SIGINT). */
export function cancelExit(signal: CancelSignal): number {
  return signal === 'SIGTERM' ? EXIT_SIGTERM : signal === 'SIGHUP' ? EXIT_SIGHUP : EXIT_SIGINT;
}

/** A cancellation reason carried on an AbortSignal by the CLI's signal handler. */
export class CancelRequest extends Error {
  readonly signal: CancelBySignal;
  constructor(signal: CancelBySignal) {
    super(`cancelled by ${signal}`);
    this.signal = signal;
  }
}

export function cancelSignalOf(signal: AbortSignal): CancelSignal {
  const reason: unknown = signal.reason;
  return reason instanceof CancelRequest ? reason.signal : 'abort';
}
