// A command run's container lives no longer than the cfh that runs it (AH-LIFE-3). cfh's
// signals stop it (sandbox-run.ts), but a cfh that is SIGKILLed, or dies with its terminal,
// runs no handler: without more, the command would go on writing the workspace until
// `cfh reap` or the next cfh start removed it. So once the command runs, cfh holds a tether:
// an exec in the container (the image's /bin/sh, shell builtins only) that reads its stdin,
// cfh's held attach, until it ends. The engine closes an exec's stdin when the client that
// attached it goes away, so when cfh dies the tether's read ends and it SIGKILLs every
// process it may signal (kill -1: the command's, which runs as the same user without
// capabilities; never the container's init), the init's child ends, and the container stops:
// a stopped orphan, still labelled for `cfh reap`, that writes nothing more. The command's
// stdin is its own (a forwarded `-i` stream ends as it ever did). The command may kill the
// tether (same user): cfh, alive, hears its exec end while the container still runs and
// kills the container, failing the run `command_tether_lost`; an image without /bin/sh
// (exit 126/127) runs untethered, said in the log.
import { errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { StartedContainer } from '../../substrate/runtime.js';

/** Reads to the end of its stdin, then kills everything it may signal. */
export const TETHER_SCRIPT = 'while IFS= read -r _; do :; done; kill -KILL -1';
/** The shell could not be run: the image has no /bin/sh. */
const NO_SHELL = new Set([126, 127]);
/**
 * How long a tether that ended waits for the container's own end before it says it was cut:
 * the command's end stops the container and takes the tether with it, and the engine may
 * still say `running` for a moment then.
 */
export const TETHER_END_GRACE_MS = 2_000;

export interface Tether {
  /** Resolves true when the tether was cut while the container still ran (cfh alive). */
  readonly cut: Promise<boolean>;
}

/**
 * Holds the tether of `started` until `signal` aborts (the run is stopping or over: the
 * container is killed by cfh then, and the tether goes with it). `env`: the container's env
 * names, blanked for the tether's shell (a profile's LD_PRELOAD never loads into it).
 */
export function holdTether(
  started: StartedContainer,
  options: {
    envNames: readonly string[];
    /** The command's working directory: every executor works inside a mount (AH-CONT-6). */
    workingDir: string;
    log: Logger;
    signal: AbortSignal;
    /** Settles when the container has exited (the run's own wait). */
    exited: Promise<unknown>;
  },
): Tether {
  const cut = started
    .exec(['/bin/sh', '-c', TETHER_SCRIPT], {
      workingDir: options.workingDir,
      maxOutputBytes: 4096,
      env: Object.fromEntries(options.envNames.map((k) => [k, ''])),
      signal: options.signal,
      // Held open: the tether reads until cfh's stream ends. A stop from cfh lets go of it
      // at once (the container is being killed anyway).
      stopWord: { word: Buffer.alloc(0), graceMs: 0 },
    })
    .then(
      async (result) => {
        if (options.signal.aborted) return false;
        // A quick command's end takes the container down while the tether's exec starts:
        // the engine then answers 126 too, and there is nothing left to hold.
        if (NO_SHELL.has(result.exitCode) && !(await stillRunning(started, options.exited, false)))
          return false;
        if (NO_SHELL.has(result.exitCode)) {
          options.log.warn(
            { exitCode: result.exitCode },
            'the image has no /bin/sh: the command runs without a tether (a SIGKILLed cfh leaves it to cfh reap)',
          );
          return false;
        }
        // Ended with the container (the command finished), or cut while it runs on (a
        // container the engine cannot answer for counts as running: cut).
        return stillRunning(started, options.exited, true);
      },
      async (error: unknown) => {
        if (options.signal.aborted) return false;
        // The command ended before its tether was made (a quick command): nothing to hold.
        if (!(await started.running().catch(() => false))) return false;
        options.log.warn({ err: errorMessage(error) }, 'the command tether could not be held');
        return false;
      },
    );
  return { cut };
}

/**
 * Whether the container still runs once its own end had a moment to be seen; `unknown`: the
 * answer when the engine cannot say.
 */
async function stillRunning(
  started: StartedContainer,
  exited: Promise<unknown>,
  unknown: boolean,
): Promise<boolean> {
  const ended = await Promise.race([
    exited.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => setTimeout(resolve, TETHER_END_GRACE_MS, false)),
  ]);
  return ended ? false : started.running().catch(() => unknown);
}
