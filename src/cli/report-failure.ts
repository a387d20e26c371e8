// How a command reports an error it cannot turn into a result: ONE line on stderr,
// `cfh: WHAT; HINT` (docs/operators.md, "Errors"), and the exit status of its class from the
// one mapping (exit-status.ts). Under `--json` the same line goes to stderr and the error
// object (status, exitCode, error: code, boundary, message, hint) to stdout, so a script
// reading stdout always gets one JSON document.
import { CfhError, ConfigError, errorMessage } from '../errors.js';
import { cancelSignalOf, decideTerminal } from '../engine/run/terminal.js';
import type { CliDeps } from './deps.js';
import { exitStatusOf, type ExitSurface } from './exit-status.js';

export interface FailureOptions {
  /** Whether the command was asked for JSON (`--json`). */
  readonly json: boolean;
  /** Which exit-status surface the command is on; `command` unless it is `sandbox run`. */
  readonly surface?: ExitSurface;
}

/** `WHAT; HINT` as one line: the message's line breaks become spaces, never `\n` shown. */
export function failureLine(error: unknown): string {
  const what = oneLine(errorMessage(error));
  const hint = error instanceof CfhError && error.hint !== undefined ? oneLine(error.hint) : '';
  return `cfh: ${what}${hint === '' ? '' : `; ${hint}`}`;
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

export function reportFailure(error: unknown, deps: CliDeps, options: FailureOptions): number {
  const { json, surface = 'command' } = options;
  if (deps.signal.aborted && !(error instanceof ConfigError)) {
    // Cancelled before a run directory existed: nothing was created, nothing to record.
    // Whatever the interrupted step threw (an aborted engine request is an EngineError),
    // the user asked to stop: 130/143, as for a run the signal cancelled.
    const terminal = decideTerminal({ kind: 'cancelled', signal: cancelSignalOf(deps.signal) });
    deps.printer.err(`cfh: ${terminal.reason} before the run started`);
    return terminal.exitCode;
  }
  const cfh = error instanceof CfhError ? error : undefined;
  const code = cfh?.code ?? (deps.signal.aborted ? 'cancelled' : 'internal_error');
  const exitCode = exitStatusOf(error, surface);
  deps.printer.err(failureLine(error));
  if (json) {
    deps.printer.json({
      status: 'failed',
      exitCode,
      error: {
        code,
        boundary: cfh?.boundary ?? 'harness',
        message: errorMessage(error),
        ...(cfh?.hint === undefined ? {} : { hint: cfh.hint }),
      },
    });
  }
  if (cfh === undefined) deps.logger.error({ err: error }, 'unexpected error');
  return exitCode;
}
