// `cfh sandbox run --prompt TEXT [--context FILE]... [--quote FILE]... [--script FILE]`:
// an agent run (issue 5). The model gateway is chosen here, once; a failure never moves
// the run to another gateway or credential (AH-INV-5).
import { readFileSync } from 'node:fs';
import { ConfigError, errorMessage } from '../../errors.js';
import { executeAgentRun } from '../../engine/agent-run.js';
import { planSandboxRun } from '../../engine/run-plan.js';
import type { ModelGateway } from '../../model/gateway.js';
import { ScriptedGateway, loadScript } from '../../model/scripted-gateway.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { CliDeps } from '../deps.js';
import type { SandboxRunArgs } from './sandbox-run.js';
import { reportFailure } from '../report-failure.js';

function readSlot(flag: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      'prompt_slot_unreadable',
      `${flag}: cannot read '${file}': ${errorMessage(error)}`,
      { field: flag, value: file },
    );
  }
}

function chooseGateway(args: SandboxRunArgs): ModelGateway {
  const provider = args.provider ?? (args.script !== undefined ? 'scripted' : undefined);
  if (provider === 'scripted') {
    if (args.script === undefined) {
      throw new ConfigError(
        'script_missing',
        '--provider scripted: give the model turns with --script FILE',
        { field: 'script' },
      );
    }
    return new ScriptedGateway(loadScript(args.script), args.script);
  }
  throw new ConfigError(
    'provider_unavailable',
    `--provider: ${provider ?? '(none)'}: this build runs agent runs with the scripted gateway only; give --script FILE`,
    { field: 'provider', value: provider ?? '' },
  );
}

export async function agentRunCommand(args: SandboxRunArgs, deps: CliDeps): Promise<number> {
  try {
    if (args.command.length > 0) {
      throw new ConfigError(
        'prompt_and_command',
        'command: give either --prompt or a COMMAND after --, not both',
        { field: 'command' },
      );
    }
    const slots = {
      prompt: args.prompt ?? '',
      context: (args.context ?? []).map((f) => readSlot('--context', f)),
      quoted: (args.quote ?? []).map((f) => readSlot('--quote', f)),
    };
    const gateway = chooseGateway(args);
    const owner = currentOwner();
    const plan = planSandboxRun(
      { ...args, command: ['sleep', 'infinity'] },
      deps.env,
      currentHostIdentity(),
      owner,
    );
    const outcome = await executeAgentRun(
      plan,
      slots,
      {
        runtime: deps.runtime(),
        logger: deps.logger,
        owner,
        gateway,
        egressResolver: deps.env.egressResolver,
      },
      deps.signal,
    );
    if (args.json) deps.printer.json(outcome);
    else {
      if (outcome.finalAnswer !== null) deps.printer.out(outcome.finalAnswer);
      if (outcome.status !== 'completed') {
        deps.printer.err(
          `cfh: agent run ${outcome.runId} ${outcome.status} (${outcome.terminalReason}); evidence in ${outcome.artifactDir}`,
        );
      }
    }
    return outcome.exitCode;
  } catch (error) {
    return reportFailure(error, deps, args.json);
  }
}
