// The one mapping from a failure to the process's exit status (README, "Exit status";
// docs/operators.md, "Errors"). Two surfaces: `sandbox run`, whose statuses the runtime
// contract fixes (125: cfh could not start the work, as `docker run`; the error's own status
// once a run had started), and every other command, which exits 0, 1 on failure, and 2 for
// a usage error: what was typed names nothing usable (an unknown option, run id, profile,
// a malformed value), or the evidence asked for cannot be read.
import { CfhError, EXIT_CANNOT_START } from '../errors.js';
import type { ErrorCode } from '../error-codes.js';

export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * Refusals raised as configuration errors that are about the host's state, not about what
 * was typed: a failure (1), not a usage error.
 */
const STATE_REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'key_exists',
  'signing_key_exposed',
  // Another cfh holds the run (runs apply): try again; nothing was typed wrong.
  'run_locked',
  // An image that is not cfh's, or one a run still uses (image rm); a build context or
  // an image config cfh refuses: the state of the engine or the files, not the command line.
  'image_not_cfh',
  'image_in_use',
  'image_context_refused',
  'image_config_refused',
  // A written-labels record cfh cannot read (cfc/written-store.ts): the state directory's.
  'written_labels_unreadable',
]);

/** `run`: `cfh sandbox run`; `command`: every other command. */
export type ExitSurface = 'run' | 'command';

export function exitStatusOf(error: unknown, surface: ExitSurface): number {
  if (surface === 'run') return error instanceof CfhError ? error.exitCode : EXIT_CANNOT_START;
  if (!(error instanceof CfhError)) return EXIT_FAILED;
  if (STATE_REFUSALS.has(error.code)) return EXIT_FAILED;
  if (error.boundary === 'configuration' || error.boundary === 'artifact-store') return EXIT_USAGE;
  // 125 says "the sandbox could not start": no other command starts one.
  return error.exitCode === EXIT_CANNOT_START ? EXIT_FAILED : error.exitCode;
}

/** A usage error commander caught (an unknown option, command, a missing argument). */
export function usageExitStatus(surface: ExitSurface): number {
  return surface === 'run' ? EXIT_CANNOT_START : EXIT_USAGE;
}
