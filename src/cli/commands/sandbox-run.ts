// `cfh sandbox run [...] -- COMMAND [ARG...]`
import { CfhError, EXIT_CANNOT_START, errorMessage } from '../../errors.js';
import { executeSandboxRun } from '../../engine/sandbox-run.js';
import { planSandboxRun, type SandboxRunOptions } from '../../engine/run-plan.js';
import { cancelSignalOf, decideTerminal } from '../../engine/terminal.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { CliDeps } from '../deps.js';

export interface SandboxRunArgs extends SandboxRunOptions {
  readonly json: boolean;
}

export async function sandboxRunCommand(args: SandboxRunArgs, deps: CliDeps): Promise<number> {
  const { printer } = deps;
  try {
    const owner = currentOwner();
    const plan = planSandboxRun(args, deps.env, currentHostIdentity(), owner);
    const outcome = await executeSandboxRun(
      plan,
      {
        runtime: deps.runtime(),
        logger: deps.logger,
        owner,
        egressResolver: deps.env.egressResolver,
      },
      args.json ? {} : { stdout: printer.stdout, stderr: printer.stderr },
      deps.signal,
    );
    if (args.json) {
      printer.json({
        runId: outcome.runId,
        status: outcome.status,
        exitCode: outcome.exitCode,
        commandExitCode: outcome.commandExitCode,
        terminalReason: outcome.terminalReason,
        stdout: outcome.stdout,
        stderr: outcome.stderr,
        artifactDir: outcome.artifactDir,
        timings: outcome.timings,
        assurance: outcome.assurance,
      });
    } else if (outcome.status !== 'completed') {
      printer.err(
        `cfh: run ${outcome.runId} ${outcome.status} (${outcome.terminalReason}); evidence in ${outcome.artifactDir}`,
      );
    }
    return outcome.exitCode;
  } catch (error) {
    return reportFailure(error, deps, args.json);
  }
}

export function reportFailure(error: unknown, deps: CliDeps, json: boolean): number {
  if (deps.signal.aborted && !(error instanceof CfhError)) {
    // Cancelled before a run directory existed: nothing was created, nothing to record.
    const terminal = decideTerminal(
      { kind: 'cancelled', signal: cancelSignalOf(deps.signal) },
      -1,
      false,
    );
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
