// One agent run, `cfh sandbox run --prompt` (issue 5): preflight, evidence, the run's tool
// container (and egress, when the posture has network), the model/tool loop, and the
// terminal record. Every container is removed before it returns (AH-LIFE-3).
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { CfhError, EngineError, errorMessage } from '../errors.js';
import { RUN_FILES, RunDirectory } from '../evidence/run-directory.js';
import type { Logger } from '../log.js';
import { FixedPolicyMediator } from '../mediator/mediator.js';
import type { ModelGateway } from '../model/gateway.js';
import type { OpenEgress } from '../sandbox/egress-sandbox.js';
import type { OwnerIdentity } from '../sandbox/owner.js';
import type { ContainerRuntime } from '../substrate/runtime.js';
import { BUILTIN_TOOLS } from '../tools/builtins.js';
import { ToolRegistry } from '../tools/contract.js';
import { toolContainerName } from '../tools/tool-container.js';
import { toolExecutor } from '../tools/tool-executor.js';
import { runAgentLoop, type AgentLoopResult, type PromptSlots } from './agent-loop.js';
import { BudgetTracker } from './budgets.js';
import { estimateAttempt, estimateRun, loadRateCard } from '../model/cost.js';
import { preflight } from './preflight.js';
import { startRunEgress } from './run-egress.js';
import type { RunPlan } from './run-plan.js';
import { buildSnapshot } from './snapshot.js';
import { cancelSignalOf, decideTerminal } from './terminal.js';

export interface AgentRunDeps {
  readonly runtime: ContainerRuntime;
  readonly logger: Logger;
  readonly owner: OwnerIdentity;
  readonly gateway: ModelGateway;
  readonly egressResolver?: string | undefined;
  /** Filled in here so the gateway's bounded retries become events (AH-LIFE-5). */
  readonly retryHook?: RetryHook | undefined;
}

export interface RetryHook {
  current?: (attempt: number, reason: string) => void;
}

export interface AgentOutcome {
  readonly runId: string;
  readonly status: 'completed' | 'failed' | 'cancelled';
  readonly exitCode: number;
  readonly terminalReason: string;
  readonly finalAnswer: string | null;
  readonly artifactDir: string;
  readonly usage: AgentLoopResult['usage'];
  readonly toolCalls: AgentLoopResult['toolCalls'] | null;
}

function digest(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

/** The gateway as the evidence names it; a scripted replay says plainly it is not a model. */
function modelRecord(gateway: ModelGateway): Record<string, unknown> {
  return {
    adapter: gateway.adapter,
    route: gateway.route,
    ...(gateway.adapter === 'scripted'
      ? { languageModel: false, notice: 'scripted replay: no language model took part' }
      : { languageModel: true }),
  };
}

export async function executeAgentRun(
  plan: RunPlan,
  slots: PromptSlots,
  deps: AgentRunDeps,
  signal: AbortSignal,
): Promise<AgentOutcome> {
  const log = deps.logger.child({ component: 'agent-run', runId: plan.runId });
  const registry = new ToolRegistry(BUILTIN_TOOLS, plan.profile.tools);
  const facts = await preflight(deps.runtime, plan.spec, signal);
  signal.throwIfAborted();
  await using dir = await RunDirectory.create(plan.artifactRoot, plan.runId, deps.owner);
  await dir.writeFile(RUN_FILES.seccomp, plan.spec.seccomp.json);
  await dir.writeSnapshot({
    ...buildSnapshot(plan, facts, deps.owner),
    kind: 'agent',
    // No command: the tools run commands, each recorded as a tool event.
    command: null,
    // AH-INV-2: model, adapter and route by reference; prompt slots by role and digest.
    model: modelRecord(deps.gateway),
    promptSlots: {
      directCommand: { chars: slots.prompt.length, digest: digest(slots.prompt) },
      context: (slots.context ?? []).map((c) => ({ chars: c.length, digest: digest(c) })),
      quoted: (slots.quoted ?? []).map((q) => ({ chars: q.length, digest: digest(q) })),
    },
    tools: registry.modelDefinitions().map((t) => t.name),
    budgets: plan.profile.budgets,
    toolContainer: {
      lifetime: plan.profile.toolLifetime,
      name: toolContainerName(plan.spec),
      timeoutCapSeconds: plan.profile.toolTimeoutSeconds ?? null,
    },
  });
  await dir.events.append(
    'run_created',
    { kind: 'agent', profile: plan.profile.name, imageId: facts.image.id },
    true,
  );
  // Live from here (AH-LIFE-2): `runs list` shows it running, and a cfh killed outright
  // leaves a record that the run had started. dir.finish replaces it with the terminal state.
  await dir.writeProgress('running');
  const transcript = await open(dir.path('transcript.jsonl'), 'wx', 0o640);
  if (deps.retryHook !== undefined) {
    deps.retryHook.current = (attempt, reason) => {
      dir.events.append('model_retry', { attempt, reason }, true).catch((e: unknown) => {
        log.error({ err: errorMessage(e) }, 'retry event not recorded');
      });
    };
  }

  let egress: OpenEgress | undefined;
  let loop: AgentLoopResult | undefined;
  let failure: CfhError | undefined;
  let cancelled = false;
  const budgets = plan.profile.budgets;
  const lifetime = plan.profile.toolLifetime;
  const capMs =
    plan.profile.toolTimeoutSeconds === undefined
      ? Number.POSITIVE_INFINITY
      : plan.profile.toolTimeoutSeconds * 1000;
  const card = loadRateCard();
  const tracker = new BudgetTracker({ ...budgets, maxTotalCost: budgets.maxTotalCost });
  // AH-LIFE-4: the wall-time budget is hard; in-flight model and tool work is aborted.
  const deadline = AbortSignal.timeout(budgets.maxWallTimeSeconds * 1000);
  const executor = toolExecutor(lifetime, deps.runtime, plan.spec, {
    started: async (containerId) => {
      await dir.events.append('tool_container_started', { containerId, lifetime }, true);
    },
    removed: async (containerId) => {
      await dir.events.append('tool_container_removed', { containerId, lifetime }, true);
    },
    removalFailed: (containerId, err) => {
      log.error({ containerId, err }, 'tool container removal failed; cfh reap will retry');
    },
  });
  try {
    if (plan.egress !== undefined)
      egress = await startRunEgress(plan, plan.egress, deps, dir, log, signal);
    loop = await runAgentLoop(
      slots,
      {
        gateway: deps.gateway,
        registry,
        builtin: (name) => BUILTIN_TOOLS.find((t) => t.name === name),
        mediator: new FixedPolicyMediator(),
        budgets: tracker,
        runTool: (tool, argv, stdin, s) =>
          executor.run(argv, {
            stdin,
            timeoutMs: Math.min(tool.timeoutMs, capMs),
            maxOutputBytes: tool.resultSizeLimitChars * 4,
            signal: s,
          }),
        recorder: {
          event: async (type, data, durable) => {
            await dir.events.append(type, data, durable ?? false);
          },
          transcript: async (message) => {
            await transcript.appendFile(`${JSON.stringify(message)}\n`);
          },
          output: (name, data) => dir.writeOutput(name, data),
        },
        maxOutputTokens: Math.min(8192, budgets.maxOutputTokens),
        estimate: (attemptId, model, usage) => estimateAttempt(card, attemptId, model, usage),
        deadline,
      },
      signal,
    );
  } catch (error) {
    if (signal.aborted) cancelled = true;
    else {
      // AH-TOOL-6: operator detail stays here, in the evidence, never in the model channel.
      failure =
        error instanceof CfhError
          ? error
          : new EngineError('agent_run_failed', errorMessage(error), { cause: error });
      log.error({ err: failure.message }, 'agent run failed');
    }
  }
  // Starts and calls still in flight are waited for and removed: nothing is left behind.
  await executor[Symbol.asyncDispose]();
  if (egress !== undefined) {
    await egress.close();
    await dir.events.append('egress_closed', { network: egress.network.name }, true);
  }
  await transcript.sync();
  await transcript.close();

  const terminal = cancelled
    ? decideTerminal({ kind: 'cancelled', signal: cancelSignalOf(signal) }, -1, false)
    : failure !== undefined
      ? // The run had started: its failure is exit 1 (125 is only "could not start").
        { status: 'failed' as const, reason: `error:${failure.code}`, exitCode: 1 }
      : loop?.status === 'completed'
        ? { status: 'completed' as const, reason: loop.terminalReason, exitCode: 0 }
        : { status: 'failed' as const, reason: loop?.terminalReason ?? 'unknown', exitCode: 1 };
  if (cancelled) await dir.events.append('cancelled', { signal: cancelSignalOf(signal) }, true);
  const outcome: AgentOutcome = {
    runId: plan.runId,
    status: terminal.status,
    exitCode: terminal.exitCode,
    terminalReason: terminal.reason,
    finalAnswer: loop?.finalAnswer ?? null,
    artifactDir: dir.dir,
    usage: loop?.usage ?? [],
    toolCalls: loop?.toolCalls ?? null,
  };
  await dir.finish(terminal, {
    kind: 'agent',
    model: modelRecord(deps.gateway),
    finalAnswer: outcome.finalAnswer,
    artifactDir: outcome.artifactDir,
    usage: outcome.usage,
    toolCalls: outcome.toolCalls,
    ...(loop?.budget === undefined ? {} : { budget: loop.budget }),
    toolLifetime: lifetime,
    // AH-USAGE-2: what the usage records cover.
    usageCoverage: { scope: 'direct-run', attempts: outcome.usage.length, descendants: 'none' },
    // AH-USAGE-4: the harness's estimate, never presented as a charge; the provider reports none here.
    costEstimate: estimateRun(card, outcome.usage),
    providerReportedCost: null,
    error:
      failure === undefined
        ? null
        : { code: failure.code, boundary: failure.boundary, message: failure.message },
  });
  return outcome;
}
