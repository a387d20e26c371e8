// `cfh sandbox run [...] -- COMMAND [ARG...]`
import { agentRunCommand } from './agent-run.js';
import { reportFailure } from '../report-failure.js';
import { executeSandboxRun } from '../../engine/sandbox-run.js';
import { planSandboxRun } from '../../engine/run-plan.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { CliDeps } from '../deps.js';
import { buildRunDeps } from '../run-deps.js';
import { BUDGET_FLAGS } from '../../config/budget-flags.js';
import { ConfigError } from '../../errors.js';
import type { SandboxRunArgs } from './run-args.js';

export type { SandboxRunArgs } from './run-args.js';

export async function sandboxRunCommand(args: SandboxRunArgs, deps: CliDeps): Promise<number> {
  const { printer } = deps;
  if (args.prompt !== undefined) return agentRunCommand(args, deps);
  try {
    const agentOnly = [
      ...Object.keys(args.budgets ?? {}).map((field) => {
        const flag = BUDGET_FLAGS.find((b) => b.field === field);
        return `--${flag?.flag ?? field}`;
      }),
      ...(args.toolLifetime === undefined ? [] : ['--tool-lifetime']),
      ...(args.toolTimeout === undefined ? [] : ['--tool-timeout']),
      ...((args.context?.length ?? 0) > 0 ? ['--context'] : []),
      ...((args.quote?.length ?? 0) > 0 ? ['--quote'] : []),
      ...(args.script === undefined ? [] : ['--script']),
      ...(args.provider === undefined ? [] : ['--provider']),
      ...(args.plan === true ? ['--plan'] : []),
      ...(args.fromPlan === undefined ? [] : ['--from-plan']),
      ...((args.approve?.length ?? 0) > 0 ? ['--approve'] : []),
      ...(args.approvals === undefined ? [] : ['--approvals']),
      ...(args.nonInteractive === true ? ['--non-interactive'] : []),
    ];
    if (agentOnly.length > 0) {
      throw new ConfigError(
        'agent_option_without_prompt',
        `${agentOnly.join(', ')}: only for agent runs; give --prompt TEXT`,
        { field: agentOnly[0] },
      );
    }
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
