// How a run ends: the terminal state (AH-LIFE-1), the reason naming any limit reached
// (AH-LIFE-4), and the exit status the CLI contract gives it.
export type TerminalStatus = 'completed' | 'failed' | 'cancelled';

export const EXIT_WALL_TIME = 124;
export const EXIT_OOM = 137;
export const EXIT_SIGINT = 130;
export const EXIT_SIGTERM = 143;

export type StopCause =
  | { readonly kind: 'exited' }
  | { readonly kind: 'wall_time'; readonly limitMs: number }
  | { readonly kind: 'cancelled'; readonly signal: 'SIGINT' | 'SIGTERM' | 'abort' };

export interface Terminal {
  readonly status: TerminalStatus;
  readonly reason: string;
  readonly exitCode: number;
}

export function decideTerminal(
  cause: StopCause,
  commandExit: number,
  oomKilled: boolean,
): Terminal {
  if (cause.kind === 'cancelled') {
    return {
      status: 'cancelled',
      reason: `cancelled:${cause.signal}`,
      exitCode: cause.signal === 'SIGTERM' ? EXIT_SIGTERM : EXIT_SIGINT,
    };
  }
  if (cause.kind === 'wall_time') {
    return { status: 'failed', reason: 'limit_reached:wall_time', exitCode: EXIT_WALL_TIME };
  }
  if (oomKilled) return { status: 'failed', reason: 'limit_reached:memory', exitCode: EXIT_OOM };
  return {
    status: 'completed',
    reason: commandExit === 0 ? 'exited' : 'exited_nonzero',
    exitCode: commandExit,
  };
}

/** A cancellation reason carried on an AbortSignal by the CLI's signal handler. */
export class CancelRequest extends Error {
  readonly signal: 'SIGINT' | 'SIGTERM';
  constructor(signal: 'SIGINT' | 'SIGTERM') {
    super(`cancelled by ${signal}`);
    this.signal = signal;
  }
}

export function cancelSignalOf(signal: AbortSignal): 'SIGINT' | 'SIGTERM' | 'abort' {
  const reason: unknown = signal.reason;
  return reason instanceof CancelRequest ? reason.signal : 'abort';
}
