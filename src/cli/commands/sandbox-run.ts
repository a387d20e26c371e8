// `cfh sandbox run [...] -- COMMAND [ARG...]`
import { reportFailure } from '../report-failure.js';
import { executeSandboxRun } from '../../engine/command/sandbox-run.js';
import { planSandboxRun } from '../../engine/run/run-plan.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { CliDeps } from '../deps.js';
import type { HostInput } from '../host-terminal.js';
import { buildRunDeps } from '../run-deps.js';
import { ConfigError } from '../../errors.js';
import type { CommandRunRequest, RunRequest } from './run-args.js';
import { readFlags } from '../flags/flag.js';
import { RUN_FLAGS } from '../flags/run-flags.js';
import { runRequestOf } from '../flags/run-request.js';
import { eventStream, runEndLine } from '../run-said.js';

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
    return reportFailure(error, deps, { json, surface: 'run' });
  }
  // The agent path (the model SDKs, MCP, the host-tool channel) is loaded only for an agent
  // run: a command run never pays for it.
  return request.kind === 'agent'
    ? (await import('./agent-run.js')).agentRunCommand(request, deps)
    : commandRunCommand(request, deps);
}

async function commandRunCommand(args: CommandRunRequest, deps: CliDeps): Promise<number> {
  const { printer } = deps;
  try {
    const input = checkInput(args, deps);
    const owner = currentOwner();
    const plan = planSandboxRun(args, deps.env, currentHostIdentity(), owner);
    // On a TTY the command's bytes are sanitized on their way to the terminal; a pipe or a
    // file gets them byte-exact (and outputs/<stream> always does). With --events stdout is
    // the event stream: the command's output goes to outputs/ only. With -t the command
    // drives the terminal it was given, as under `docker run -t`: its bytes pass as they are.
    const events = args.events !== undefined;
    const live = args.json || events || args.tty ? undefined : printer.liveOutput();
    const shown =
      live !== undefined
        ? { stdout: live.stdout, stderr: live.stderr }
        : args.json || events
          ? {}
          : { stdout: printer.stdout, stderr: printer.stderr };
    const run = await buildRunDeps(deps, owner);
    // -it: raw mode while attached, restored on every way out of the run (host-terminal.ts).
    const restore = args.tty && args.interactive ? input?.raw() : undefined;
    const outcome = await executeSandboxRun(
      plan,
      events ? { ...run.deps, events: eventStream(printer) } : run.deps,
      {
        ...shown,
        ...(args.interactive && input !== undefined ? { stdin: input.stream } : {}),
        ...(args.tty && input !== undefined ? { terminal: input.size } : {}),
      },
      run.signal,
    ).finally(() => {
      restore?.();
      live?.flush();
      live?.endLine();
    });
    if (args.json) {
      printer.json({
        io: { stdin: args.interactive ? 'forwarded' : 'null', tty: args.tty },
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
        patch: outcome.patch,
        hostObeyed: outcome.hostObeyed ?? null,
      });
    } else printer.err(runEndLine('command', outcome, args.artifactRoot));
    return outcome.exitCode;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json, surface: 'run' });
  }
}

/** `-t` needs a terminal on stdin (docker: "the input device is not a TTY"). */
function checkInput(args: CommandRunRequest, deps: CliDeps): HostInput | undefined {
  const input = deps.input;
  if (args.tty && input?.isTerminal !== true) {
    throw new ConfigError(
      'tty_required',
      "-t needs a terminal; cfh's stdin is not one (drop -t, and give -i to pipe input in)",
      { field: '-t' },
    );
  }
  if (args.interactive && input === undefined) {
    throw new ConfigError('tty_required', '-i: this cfh has no stdin to forward', {
      field: '-i',
    });
  }
  return input;
}
