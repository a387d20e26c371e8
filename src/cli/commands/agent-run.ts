// `cfh sandbox run --prompt TEXT [--context FILE]... [--quote FILE]... [--script FILE]`:
// an agent run (issue 5). The model gateway is chosen here, once; a failure never moves
// the run to another gateway or credential (AH-INV-5).
import { readFileSync } from 'node:fs';
import { ConfigError, errorMessage } from '../../errors.js';
import { executeAgentRun } from '../../engine/agent-run.js';
import { planSandboxRun } from '../../engine/run-plan.js';
import type { ModelGateway } from '../../model/gateway.js';
import { ScriptedGateway, loadScript } from '../../model/scripted-gateway.js';
import { AnthropicGateway } from '../../model/anthropic-gateway.js';
import { EMBEDDED_SCRIPT, EMBEDDED_SCRIPT_SOURCE } from '../../model/embedded-script.js';
import type { CfhEnvironment } from '../../config/env.js';
import type { RetryHook } from '../../engine/agent-run.js';
import type { HostToolDeps } from '../../engine/host-tools.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { CliDeps } from '../deps.js';
import type { SandboxRunArgs } from './run-args.js';
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

function chooseGateway(
  args: SandboxRunArgs,
  env: CfhEnvironment,
  retries: number,
  retryHook: RetryHook,
): ModelGateway {
  // With a key, anthropic; otherwise the scripted gateway: the given script, or the
  // embedded default, which says plainly that no model took part.
  const provider =
    args.provider ??
    (args.script === undefined && env.anthropicApiKey !== undefined ? 'anthropic' : 'scripted');
  if (provider === 'anthropic') {
    if (args.script !== undefined) {
      throw new ConfigError(
        'script_with_provider',
        '--script: only with the scripted provider (drop --provider anthropic or --script)',
        { field: 'script', value: args.script },
      );
    }
    if (env.anthropicApiKey === undefined) {
      throw new ConfigError(
        'credential_missing',
        '--provider anthropic: ANTHROPIC_API_KEY is not set',
        { field: 'provider', value: 'anthropic' },
      );
    }
    return new AnthropicGateway({
      apiKey: env.anthropicApiKey,
      baseURL: env.anthropicBaseUrl,
      model: env.model,
      maxRetries: retries,
      timeoutMs: 120_000,
      keySource: 'env:ANTHROPIC_API_KEY',
      onRetry: (attempt, reason) => {
        retryHook.current?.(attempt, reason);
      },
    });
  }
  if (args.script !== undefined) return new ScriptedGateway(loadScript(args.script), args.script);
  return new ScriptedGateway(EMBEDDED_SCRIPT, EMBEDDED_SCRIPT_SOURCE);
}

/** The host-tool channel: its ledger, where credentials are read, what else is scrubbed. */
function hostToolDeps(env: CfhEnvironment, gateway: ModelGateway): HostToolDeps {
  const key = env.anthropicApiKey;
  const held = gateway.adapter === 'anthropic' && key !== undefined && key.length >= 8;
  return {
    processDir: env.hostProcessDir,
    env: env.credentialSource,
    heldCredentials: held ? [{ name: 'ANTHROPIC_API_KEY', value: key }] : [],
  };
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
    // limits.wallTimeSeconds bounds a command's container; an agent run is bounded by its
    // budgets, so --timeout would be silently ignored here.
    if (args.timeout !== undefined) {
      throw new ConfigError(
        'timeout_with_prompt',
        '--timeout: not for agent runs; use --max-wall-time-seconds (the whole run) or --tool-timeout (each tool call)',
        { field: '--timeout', value: args.timeout },
      );
    }
    const slots = {
      prompt: args.prompt ?? '',
      context: (args.context ?? []).map((f) => readSlot('--context', f)),
      quoted: (args.quote ?? []).map((f) => readSlot('--quote', f)),
    };
    const owner = currentOwner();
    const plan = planSandboxRun(
      { ...args, command: ['sleep', 'infinity'] },
      deps.env,
      currentHostIdentity(),
      owner,
    );
    const retryHook: RetryHook = {};
    const gateway = chooseGateway(
      args,
      deps.env,
      plan.profile.budgets.maxRetriesPerModelCall,
      retryHook,
    );
    if (gateway.route.source === EMBEDDED_SCRIPT_SOURCE) {
      deps.printer.err(
        'cfh: no ANTHROPIC_API_KEY and no --script: replaying the embedded scripted model (no language model takes part)',
      );
    }
    const outcome = await executeAgentRun(
      plan,
      slots,
      {
        runtime: deps.runtime(),
        logger: deps.logger,
        owner,
        gateway,
        egressResolver: deps.env.egressResolver,
        retryHook,
        hostProcessDir: deps.env.hostProcessDir,
        hostTools: hostToolDeps(deps.env, gateway),
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
