// How a command reports an error it cannot turn into a result: one line (or one JSON
// object), and the exit status the error carries.
import { CfhError, ConfigError, EXIT_CANNOT_START, errorMessage } from '../errors.js';
import { cancelSignalOf, decideTerminal } from '../engine/terminal.js';
import type { CliDeps } from './deps.js';

export function reportFailure(error: unknown, deps: CliDeps, json: boolean): number {
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
  const exitCode = cfh?.exitCode ?? EXIT_CANNOT_START;
  if (json) {
    deps.printer.json({
      status: 'failed',
      exitCode,
      error: { code, boundary: cfh?.boundary ?? 'harness', message: errorMessage(error) },
    });
  } else {
    deps.printer.err(`cfh: ${errorMessage(error)}`);
  }
  if (cfh === undefined) deps.logger.error({ err: error }, 'unexpected error');
  return exitCode;
}
