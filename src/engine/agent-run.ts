// One agent run, `cfh sandbox run --prompt`: the work of an agent run inside its
// run session (run-session.ts owns preflight, evidence, disposal and the terminal record):
// the transcript, the tool containers, the egress posture, and the model/tool loop.
import { open } from 'node:fs/promises';
import { MediatorError, errorMessage } from '../errors.js';
import { GovernanceRecord } from '../evidence/governance-record.js';
import { Approvals } from '../mediator/approvals.js';
import { Mediator } from '../mediator/mediator.js';
import type { RunFacts } from '../mediator/policy.js';
import { policyFor } from './policy-explain.js';
import { scrubMessage, scrubbingGateway } from './disclosure.js';
import { Scrubber } from '../tools/host/scrub.js';
import { SandboxToolRunner } from '../tools/sandbox-runner.js';
import { planHostTools } from '../tools/host/host-plan.js';
import {
  describeHostTools,
  hostToolReach,
  hostToolsReport,
  openHostTools,
  type HostToolDeps,
  type OpenHostTools,
} from './host-tools.js';
import type { ModelGateway } from '../model/gateway.js';
import { BUILTIN_TOOLS } from '../tools/builtins.js';
import { ToolRegistry } from '../tools/contract.js';
import { toolContainerName } from '../tools/tool-container.js';
import { toolExecutor } from '../tools/tool-executor.js';
import { WORKSPACE_TARGET } from '../sandbox/mount-policy.js';
import { runAgentLoop, type AgentLoopResult, type PromptSlots } from './agent-loop.js';
import { PLAN_FILE, type ApprovedPlan } from './from-plan.js';
import { BudgetTracker } from './budgets.js';
import { estimateRun, loadRateCard } from '../model/cost.js';
import type { RunPlan } from './run-plan.js';
import {
  errorRecord,
  runSession,
  type ErrorRecord,
  type ResourcesRecord,
  type RunDeps,
  type RunSession,
  type RunWork,
} from './run-session.js';
import type { Assurance } from './snapshot.js';
import type { InputCaptureRecord } from '../evidence/schema/events-cfc.js';
import type { CfcRuntime } from '../cfc/runtime.js';
import { cfcRuntimeOf, snapshotCfc } from './cfc-plan.js';
import type { RunEnd } from './terminal.js';
import { BlockedCalls, type BlockedSummary } from './blocked-calls.js';
import { patchReport, type PatchReport } from './run-summary.js';
import {
  commandEnvSecrets,
  mountChannelOf,
  poolSettingOf,
  poolSnapshot,
  toolSpecs,
} from './agent-tool-setup.js';
import { digest, modelRecord, slotsOf } from './agent-run-records.js';

/** The most output one request asks for, before the budgets lower it (AH-LIFE-4). */
export const MODEL_OUTPUT_CAP = 8192;

export interface AgentRunDeps extends RunDeps {
  readonly gateway: ModelGateway;
  /** Where approvals come from (the CLI's flags, file and terminal); none: nobody to ask. */
  readonly approvals?: Approvals | undefined;
  /** Filled in here so the gateway's bounded retries become events (AH-LIFE-5). */
  readonly retryHook?: RetryHook | undefined;
  /** The host-tool channel (host-tools.ts); a profile with `hostTools` needs it. */
  readonly hostTools?: HostToolDeps | undefined;
}

/**
 * How a person can be asked in this run, as the snapshot records it: the rules approved on
 * the command line, the approvals file (path and digest), whether cfh may prompt.
 */
export interface ApprovalSetup {
  readonly user: string;
  readonly interactive: boolean;
  /** Why cfh will not prompt, when it will not. */
  readonly notInteractiveBecause: string | null;
  readonly preApprovedRules: readonly string[];
  readonly file: { readonly path: string; readonly sha256: string; readonly calls: number } | null;
  /** The surfaces asked, in order. */
  readonly surfaces: readonly string[];
}

/** What the caller asks of an agent run beyond its plan: its prompt, mode and approvals. */
export interface AgentRequest {
  readonly slots: PromptSlots;
  /** `plan`: every mutation is denied and the final answer is kept as plan.md. */
  readonly mode: 'run' | 'plan';
  /** `--from-plan`: a verified plan, given to the model as context. */
  readonly fromPlan?: ApprovedPlan | undefined;
  readonly approvals: ApprovalSetup;
  /**
   * The capture record of the direct command, when cfh read it from its caller itself
   * (`--prompt` on the command line: captureOfPrompt). None: the prompt carries no
   * `prompt:direct` authority (AH-CFC-3).
   */
  readonly promptCapture?: InputCaptureRecord | undefined;
}

/** The loop's result, and the plan it left (plan mode). */
export type AgentResult = AgentLoopResult & {
  readonly plan?: { readonly file: string; readonly sha256: string };
};

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
  /** As report.json has it: the code and the failing boundary (AH-DIAG-1), or null. */
  readonly error: ErrorRecord | null;
  /** Draft mode: the patch waiting for `cfh runs apply`; null otherwise. */
  readonly patch: PatchReport | null;
  /** The calls that did not run because they were refused (blocked-calls.ts). */
  readonly blocked: BlockedSummary;
  readonly assurance: Assurance;
  /** What the run's containers used (report.json `resources`). */
  readonly resources: ResourcesRecord;
}

export async function executeAgentRun(
  plan: RunPlan,
  request: AgentRequest,
  deps: AgentRunDeps,
  signal: AbortSignal,
): Promise<AgentOutcome> {
  const registry = new ToolRegistry(BUILTIN_TOOLS, plan.profile.tools);
  // Programs, templates and credentials before anything exists (AH-INV-4: 125).
  // AH-TOOL-7, AH-CONT-5: nothing a sandbox of this run could reach, nothing in its evidence.
  const hostPlan = planHostTools(
    plan.profile.hostTools,
    plan.runId,
    deps.hostTools?.env ?? {},
    hostToolReach(plan, deps.hostTools?.keyDir),
  );
  // One scrubber for a run with host tools: every credential it holds, at every chokepoint
  // (disclosure.ts). Fragments only of the host tools' credentials: those are what a tool's
  // schema or output could split; the gateway's key is matched whole.
  const scrubber = new Scrubber([
    ...(hostPlan.tools.length === 0
      ? []
      : [
          ...hostPlan.credentials,
          ...(deps.hostTools?.heldCredentials ?? []).map((c) => ({ ...c, fragments: false })),
        ]),
    ...commandEnvSecrets(plan),
  ]);
  const host: { open?: OpenHostTools } = {};
  const blocked = new BlockedCalls();
  const card = loadRateCard();
  const budgets = plan.profile.budgets;
  const slots = slotsOf(request);
  const fromPlan =
    request.fromPlan === undefined
      ? null
      : { runId: request.fromPlan.runId, sha256: request.fromPlan.sha256 };
  const capture = request.promptCapture ?? null;
  // AH-CFC-3/4: the direct command is a slot of integrity prompt:direct only with its
  // capture; context, quoted material and an approved plan are slots of none. Disabled:
  // no runtime, the calls behave as without CFC (the plan is still in the snapshot).
  const cfc = cfcRuntimeOf(plan.cfc, WORKSPACE_TARGET, {
    capture,
    context: request.slots.context?.length ?? 0,
    quoted: request.slots.quoted?.length ?? 0,
    fromPlan: request.fromPlan !== undefined,
  });
  const work: RunWork<AgentResult> = {
    kind: 'agent',
    snapshot: (common) => ({
      ...common,
      kind: 'agent',
      // Governance extension, "Planning mode": the mode, the plan a run executes, and how
      // approvals are given, fixed before anything runs.
      mode: request.mode,
      fromPlan,
      approvals: request.approvals,
      // No command: the tools run commands, each recorded as a tool event.
      command: null,
      cfc: snapshotCfc(plan.cfc, plan.profile.cfc.mode, cfc === undefined ? null : capture),
      // AH-INV-2: model, adapter and route by reference; prompt slots by role and digest.
      model: modelRecord(deps.gateway),
      promptSlots: {
        directCommand: { chars: slots.prompt.length, digest: digest(slots.prompt) },
        context: (slots.context ?? []).map((c) => ({ chars: c.length, digest: digest(c) })),
        quoted: (slots.quoted ?? []).map((q) => ({ chars: q.length, digest: digest(q) })),
      },
      tools: registry.modelDefinitions().map((t) => t.name),
      // AH-TOOL-7: advertised apart from the sandbox tools, with their bounded authority.
      hostTools: describeHostTools(hostPlan),
      budgets,
      toolContainer: {
        lifetime: plan.profile.toolLifetime,
        name: toolContainerName(plan.spec, 'workload'),
        fileToolName: toolContainerName(plan.spec, 'file-tool'),
        timeoutCapSeconds: plan.profile.toolTimeoutSeconds ?? null,
        // Issue 21: the warm pools per-call containers come from (null: none).
        pool: poolSnapshot(plan),
      },
    }),
    run: async (session, s) => {
      // Before any call can be decided: every refusal the log records is counted.
      session.dir.events.subscribe(blocked.listener);
      // AH-CFC-3: the capture of the direct command, before the first model request.
      if (cfc?.capture != null)
        await session.dir.events.append('prompt_captured', cfc.capture, true);
      // AH-CAP-4: every declared host tool healthy before the first model request.
      if (!scrubber.empty) session.dir.redactWith(scrubber);
      host.open = await openHostTools(session, hostPlan, deps.hostTools, scrubber, s);
      const surface = new ToolRegistry(
        [...BUILTIN_TOOLS, ...host.open.tools],
        [...plan.profile.tools, ...host.open.tools.map((t) => t.name)],
      );
      return runAgent(
        session,
        { ...request, slots },
        deps,
        { registry: surface, host: host.open, scrubber, blocked, cfc },
        s,
      );
    },
    report: (loop) => {
      const usage = loop?.usage ?? [];
      return {
        mode: request.mode,
        plan: loop?.plan ?? null,
        fromPlan,
        model: modelRecord(deps.gateway),
        finalAnswer: loop?.finalAnswer ?? null,
        usage,
        toolCalls: loop?.toolCalls ?? null,
        ...(loop?.budget === undefined ? {} : { budget: loop.budget }),
        blocked: { ...blocked.summary(), failOnBlocked: plan.profile.failOnBlocked },
        toolLifetime: plan.profile.toolLifetime,
        // AH-TOOL-9: what durable resources host tools created, found by their ids.
        hostTools: hostToolsReport(host.open),
        // AH-USAGE-2: what the usage records cover.
        usageCoverage: { scope: 'direct-run', attempts: usage.length, descendants: 'none' },
        // AH-USAGE-4: the harness's estimate, never presented as a charge.
        costEstimate: estimateRun(card, usage),
        providerReportedCost: null,
      };
    },
  };
  const outcome = await runSession(plan, deps, work, signal);
  const loop = outcome.result;
  return {
    runId: outcome.runId,
    status: outcome.terminal.status,
    exitCode: outcome.terminal.exitCode,
    terminalReason: outcome.terminal.reason,
    finalAnswer: loop?.finalAnswer ?? null,
    artifactDir: outcome.artifactDir,
    usage: loop?.usage ?? [],
    toolCalls: loop?.toolCalls ?? null,
    error: errorRecord(outcome.error),
    patch: patchReport(outcome.patch),
    blocked: blocked.summary(),
    assurance: outcome.assurance,
    resources: outcome.resources,
  };
}

/** What the loop works with beyond the request: its surface, host tools and tallies. */
interface AgentSurface {
  readonly registry: ToolRegistry;
  readonly host: OpenHostTools;
  readonly scrubber: Scrubber;
  readonly blocked: BlockedCalls;
  readonly cfc: CfcRuntime | undefined;
}

async function runAgent(
  session: RunSession,
  request: AgentRequest,
  deps: AgentRunDeps,
  surface: AgentSurface,
  signal: AbortSignal,
): Promise<{ end: RunEnd; result: AgentResult }> {
  const { registry, host, scrubber } = surface;
  const { plan, dir, log } = session;
  const budgets = plan.profile.budgets;
  const lifetime = plan.profile.toolLifetime;
  // Live from here (AH-LIFE-2): `runs list` shows it running, and a cfh killed outright
  // leaves a record that the run had started.
  await dir.writeProgress('running');
  const transcript = await open(dir.path('transcript.jsonl'), 'wx', 0o640);
  const governance = await open(dir.path('governance.jsonl'), 'wx', 0o640);
  session.stack.defer(async () => {
    for (const [file, handle] of [
      ['transcript.jsonl', transcript],
      ['governance.jsonl', governance],
    ] as const) {
      await handle.sync();
      await handle.close();
      await dir.seal(file);
    }
  });
  if (deps.retryHook !== undefined) {
    deps.retryHook.current = (attempt, reason) => {
      dir.events.append('model_retry', { attempt, reason }, true).catch((e: unknown) => {
        log.error({ err: errorMessage(e) }, 'retry event not recorded');
      });
    };
  }
  const capMs =
    plan.profile.toolTimeoutSeconds === undefined
      ? Number.POSITIVE_INFINITY
      : plan.profile.toolTimeoutSeconds * 1000;
  const card = loadRateCard();
  const tracker = new BudgetTracker({ ...budgets, maxTotalCost: budgets.maxTotalCost });
  session.stack.defer(() => {
    tracker.close();
  });
  // AH-LIFE-4: the wall-time budget is hard; in-flight model and tool work is aborted. Time
  // spent waiting for a person's approval does not count (the tracker pauses).
  const deadline = tracker.deadline;
  const facts: RunFacts = {
    // Planning mode: policy denies every mutation (rule planning_mode, policy.ts).
    mode: request.mode,
    // Writes in a draft workspace are draft-only (the copy; the host is written by `runs apply`).
    workspaceMode: plan.workspaceMode,
    network: plan.profile.network.mode,
    rwMounts: plan.spec.mounts.some((m) => m.mode === 'rw'),
    ...mountChannelOf(plan.mountChecks.specialFiles),
    // Executing an approved plan: calls with risk ask for approval (rule from_plan).
    fromPlan: request.fromPlan !== undefined,
  };
  const mediator = new Mediator({
    policy: policyFor(plan.profile, facts),
    approvals: deps.approvals ?? new Approvals([]),
    recorder: {
      event: async (type, data, durable) => {
        await dir.events.append(type, data, durable ?? false);
      },
    },
    clock: tracker,
  });
  await session.openEgress(signal);
  // After the egress posture on the stack: tool containers are removed before it closes.
  // Disposal waits for starts and calls still in flight: nothing is left behind.
  const executor = session.stack.use(
    toolExecutor(
      lifetime,
      deps.runtime,
      toolSpecs(plan),
      {
        started: async (container) => {
          await dir.events.append('tool_container_started', { ...container }, true);
        },
        removed: async (container) => {
          await dir.events.append('tool_container_removed', { ...container }, true);
        },
        pooled: async (container, facts) => {
          await dir.events.append(
            'tool_container_pooled',
            { ...container, lifetime: 'per-call', ...facts },
            true,
          );
        },
        taken: async (container, facts) => {
          await dir.events.append(
            'tool_container_taken',
            { ...container, lifetime: 'per-call', ...facts },
            true,
          );
        },
        removalFailed: (container, err) => {
          log.error({ ...container, err }, 'tool container removal failed; cfh reap will retry');
        },
      },
      poolSettingOf(plan),
    ),
  );
  // The first model request is the start of the work (AH-INV-4: everything before it that
  // fails is a failure to start).
  session.markStarted();
  session.startSweep();
  const loop = await runAgentLoop(
    request.slots,
    {
      gateway: scrubbingGateway(deps.gateway, scrubber),
      ...(scrubber.empty ? {} : { disclosure: scrubber }),
      ...(surface.cfc === undefined ? {} : { cfc: surface.cfc, toolLifetime: lifetime }),
      registry,
      mediator,
      mode: facts.mode,
      budgets: tracker,
      runners: {
        sandbox: new SandboxToolRunner(
          BUILTIN_TOOLS,
          executor,
          capMs,
          plan.spec.mounts.map((m) => m.target),
        ),
        ...(host.runner === undefined ? {} : { host: host.runner }),
      },
      recorder: {
        governance: async (record) => {
          // The extension's invariants hold for every record, or the harness is broken.
          const checked = GovernanceRecord.safeParse(scrubber.value(record));
          if (!checked.success) {
            throw new MediatorError(
              'governance_invariant',
              `governance record for ${record.call_id} breaks the schema: ${checked.error.message}`,
              { callId: record.call_id },
            );
          }
          await governance.appendFile(`${JSON.stringify(checked.data)}\n`);
        },
        event: async (type, data, durable) => {
          await dir.events.append(type, data, durable ?? false);
        },
        transcript: async (message) => {
          await transcript.appendFile(`${JSON.stringify(scrubMessage(message, scrubber))}\n`);
        },
        output: (name, data) => dir.writeOutput(name, data),
      },
      // The model's cap per request; the reservation lowers it to what the budgets leave.
      maxOutputTokens: MODEL_OUTPUT_CAP,
      card,
      deadline,
    },
    signal,
  );
  const end: RunEnd =
    loop.status === 'completed'
      ? await answeredOrBlocked(session, request.mode, surface.blocked)
      : { kind: 'budget', budget: loop.budget?.budget ?? loop.terminalReason };
  // A planning run that answered leaves its plan, in the hash chain like every evidence
  // file; `--from-plan` takes it only from there.
  if (request.mode === 'plan' && loop.status === 'completed' && loop.finalAnswer !== undefined) {
    const sha256 = await dir.writeFile(PLAN_FILE, loop.finalAnswer);
    return { end, result: { ...loop, plan: { file: PLAN_FILE, sha256 } } };
  }
  return { end, result: loop };
}

/**
 * `--fail-on-blocked` / `failOnBlocked`: an answer after blocked calls fails the run, and the
 * evidence says which calls, durably, before the terminal record (AH-LIFE-2).
 */
async function answeredOrBlocked(
  session: RunSession,
  mode: 'run' | 'plan',
  blocked: BlockedCalls,
): Promise<RunEnd> {
  if (!session.plan.profile.failOnBlocked) return { kind: 'answered' };
  const failing = blocked.failing(mode);
  if (failing.calls.length === 0) return { kind: 'answered' };
  await session.dir.events.append('run_blocked', failing, true);
  return { kind: 'blocked', denied: failing.denied, unapproved: failing.unapproved };
}
