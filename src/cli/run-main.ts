// The CLI proper, imported by the entry point (main.ts) for every command but the version:
// with main.ts, the only place that touches process signals and process exit.
import { createInterface } from 'node:readline/promises';
import { CommanderError } from 'commander';
import { z } from 'zod';
import { readEnvironment } from '../config/env.js';
import { createLogger } from '../log.js';
import { CancelRequest, cancelExit, type CancelBySignal } from '../engine/run/terminal.js';
import { DockerRuntime } from '../substrate/docker/adapter.js';
import type { ContainerRuntime } from '../substrate/runtime.js';
import { EXIT_CANNOT_START } from '../errors.js';
import { buildProgram } from './program.js';
import { usageExitStatus } from './exit-status.js';
import { processPrinter } from './print.js';
import { hostInput } from './host-terminal.js';

let done = false;
let finalCode: number | undefined;
/**
 * How long cleanup may take after the first SIGINT/SIGTERM. Past it cfh exits anyway with
 * the signal's status, so no input, engine or file system that stops answering can make it
 * deaf to a signal; what is left carries owner labels for `cfh reap`.
 */
const CANCEL_GRACE_MS = 30_000;

async function main(argv: string[]): Promise<number> {
  // A one-shot run parses most schemas once: zod's JIT (a compiled function per object
  // schema) costs more than it saves there, about a tenth of `sandbox run -- true`'s CPU.
  // Long-lived and bulk readers (serve, mcp, audit, runs) parse the same schemas again and
  // again and keep it.
  if (argv[0] === 'sandbox') z.config({ jitless: true });
  const env = readEnvironment();
  const logger = createLogger(env.logLevel);
  const printer = processPrinter();
  const controller = new AbortController();
  let signals = 0;
  const onSignal = (sig: CancelBySignal): void => {
    signals += 1;
    // After the command is done (cfh only waits for its stdout to drain), or at the third
    // signal (the user insists; `cfh reap` cleans up later): leave now.
    if (done || signals >= 3) process.exit(done ? (finalCode ?? 0) : cancelExit(sig));
    // First signal: cancel and clean up, within a bounded grace.
    if (!controller.signal.aborted) {
      controller.abort(new CancelRequest(sig));
      setTimeout(() => {
        process.stderr.write(
          `cfh: ${sig}: cleanup did not finish within ${CANCEL_GRACE_MS / 1000} s; exiting (cfh reap removes what is left)\n`,
        );
        process.exit(cancelExit(sig));
      }, CANCEL_GRACE_MS).unref();
    }
  };
  // A reader that went away (`cfh … | head`) is not an error of cfh's; output to it stops.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      // EIO: the terminal hung up (SIGHUP); what cfh still says goes nowhere.
      if (e.code !== 'EPIPE' && e.code !== 'EIO') throw e;
    });
  }
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // The terminal went away (its window closed, the ssh connection dropped): cancel as on
  // SIGTERM, never die at once with the run's work still going (AH-LIFE-3).
  process.on('SIGHUP', onSignal);

  let runtime: ContainerRuntime | undefined;
  let exitCode = 0;
  const program = buildProgram(
    {
      env,
      logger,
      printer,
      runtime: () => (runtime ??= new DockerRuntime({ dockerHost: env.dockerHost })),
      signal: controller.signal,
      input: hostInput(process.stdin, process.stdout, process),
      terminal: {
        interactive: process.stdin.isTTY,
        ask: async (question, signal) => {
          const rl = createInterface({ input: process.stdin, output: process.stderr });
          try {
            return await rl.question(question, { signal });
          } finally {
            rl.close();
          }
        },
      },
    },
    (code) => {
      exitCode = code;
    },
  );
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return 0;
      // A bad flag to `sandbox run` is bad configuration: 125, as the contract says; a
      // usage error of any other command, 2 (exit-status.ts).
      return usageExitStatus(argv[0] === 'sandbox' && argv[1] === 'run' ? 'run' : 'command');
    }
    throw error;
  }
  return exitCode;
}

/**
 * The command has finished and awaited its own cleanup: exit once stdout and stderr have
 * taken what was printed, rather than wait for the event loop to drain. A handle nobody
 * awaits (a connection to an engine that accepted and never answered) must not keep cfh
 * alive after it has reported. A reader that takes its time is waited for; a signal now
 * ends that wait (see onSignal).
 */
function exitWhenFlushed(code: number): void {
  done = true;
  finalCode = code;
  process.exitCode = code;
  process.stdout.write('', () => {
    process.stderr.write('', () => {
      process.exit(code);
    });
  });
}

main(process.argv.slice(2)).then(exitWhenFlushed, (error: unknown) => {
  process.stderr.write(
    `cfh: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  exitWhenFlushed(EXIT_CANNOT_START);
});
