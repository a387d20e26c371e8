// `cfh sandbox run [...] -- COMMAND [ARG...]`
import { agentRunCommand } from './agent-run.js';
import { reportFailure } from '../report-failure.js';
import { executeSandboxRun } from '../../engine/sandbox-run.js';
import { planSandboxRun } from '../../engine/run-plan.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { CliDeps } from '../deps.js';
import { buildRunDeps } from '../run-deps.js';
import type { CommandRunRequest, RunRequest } from './run-args.js';
import { readFlags } from '../flags/flag.js';
import { RUN_FLAGS } from '../flags/run-flags.js';
import { runRequestOf } from '../flags/run-request.js';

/** `cfh sandbox run`: the flags become one typed request, run by the handler of its kind. */
export async function sandboxRunCommand(
  raw: Readonly<Record<string, unknown>>,
  command: readonly string[],
  deps: CliDeps,
): Promise<number> {
  const { json } = readFlags({ json: RUN_FLAGS.json }, raw);
  let request: RunRequest;
  try {
    request = runRequestOf(raw, command);
  } catch (error) {
    return reportFailure(error, deps, json);
  }
  return request.kind === 'agent'
    ? agentRunCommand(request, deps)
    : commandRunCommand(request, deps);
}

async function commandRunCommand(args: CommandRunRequest, deps: CliDeps): Promise<number> {
  const { printer } = deps;
  try {
    const owner = currentOwner();
    const plan = planSandboxRun(args, deps.env, currentHostIdentity(), owner);
    // On a TTY the command's bytes are sanitized on their way to the terminal; a pipe or a
    // file gets them byte-exact (and outputs/<stream> always does).
    const live = args.json ? undefined : printer.liveOutput();
    const run = await buildRunDeps(deps, owner);
    const outcome = await executeSandboxRun(
      plan,
      run.deps,
      live === undefined ? {} : { stdout: live.stdout, stderr: live.stderr },
      run.signal,
    ).finally(() => live?.flush());
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
        resources: outcome.resources,
        error: outcome.error,
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
