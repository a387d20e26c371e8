// One agent run, `cfh sandbox run --prompt`: the work of an agent run inside its
// run session (run-session.ts owns preflight, evidence, disposal and the terminal record):
// the transcript, the tool containers, the egress posture, and the model/tool loop.
import { Scrubber } from '../../tools/host/scrub.js';
import { planHostTools } from '../../tools/host/host-plan.js';
import {
  describeHostTools,
  hostToolReach,
  hostToolsReport,
  openHostTools,
  type HostToolDeps,
  type OpenHostTools,
} from './host-tools.js';
import type { ToolDefinition } from '../../tools/contract.js';
import {
  draftPart,
  snapshotTools,
  toolSurface,
  type SurfaceFront,
  type SurfaceParts,
} from './tool-surface.js';
import { toolContainerName } from '../../tools/tool-container.js';
import { WORKSPACE_TARGET } from '../../sandbox/mount-policy.js';
import {
  runAgentLoop,
  type AgentLoopResult,
  type Conversation,
  type PromptSlots,
} from './agent-loop.js';
import { PLAN_FILE, type ApprovedPlan } from '../resume/from-plan.js';
import { estimateRun, rateCardOf } from '../../model/cost.js';
import type { ModelGateway } from '../../model/gateway.js';
import type { Profile } from '../../config/profile-schema.js';
import {
  openAgentSurface,
  type AgentSurface,
  type OpenAgentSurface,
  type SurfaceDeps,
} from './agent-surface.js';
export { MODEL_OUTPUT_CAP, type RetryHook } from './agent-surface.js';
import type { RunPlan } from '../run/run-plan.js';
import {
  errorRecord,
  runSession,
  type ErrorRecord,
  type ResourcesRecord,
  type RunSession,
  type RunWork,
} from '../run/run-session.js';
import type { Assurance } from '../run/snapshot.js';
import { mediationRecord, runFactsFor } from '../run/mediation-record.js';
import type { InputCaptureRecord } from '../../evidence/schema/events-cfc.js';
import type { SnapshotSession } from '../../evidence/schema/snapshot.js';
import type { SnapshotModelSide } from '../../evidence/schema/snapshot.js';
import type { ResumedFrom } from '../../evidence/schema/resume.js';
import { cfcRuntimeOf, snapshotCfc } from '../cfc/cfc-plan.js';
import { heldValueKeeper, startCarried } from '../cfc/cfc-carry.js';
import type { CarriedContext } from '../../cfc/carried.js';
import type { RunEnd } from '../run/terminal.js';
import { BlockedCalls, type BlockedSummary } from './blocked-calls.js';
import { patchReport, type PatchReport } from '../run/run-summary.js';
import type { HostObeyedReport } from '../run/rw-sweep.js';
import { commandEnvSecrets, poolSnapshot } from './agent-tool-setup.js';
import {
  carriedInto,
  digest,
  modelRecord,
  slotsOf,
  type AttemptLedger,
} from './agent-run-records.js';
import { refuseUncleared } from '../cfc/carried-clearance.js';
import { compactionSetup } from './compaction.js';
import type { BudgetTracker } from './budgets.js';
import type {
  ChildLauncher,
  ChildOutcome,
  ChildRunner,
  DelegatedBy,
} from '../children/child-runner.js';
import { delegationOf, treeUsage, usedOf } from '../children/agent-delegation.js';

export interface AgentRunDeps extends SurfaceDeps {
  /** The host-tool channel (host-tools.ts); a profile with `hostTools` needs it. */
  readonly hostTools?: HostToolDeps | undefined;
  /**
   * Plans a child run (the CLI's planner: its environment and identity); a profile with
   * `children` needs it: without it the `delegate` tool is not offered.
   */
  readonly childPlanner?: ChildLauncher['plan'] | undefined;
  /**
   * The gateway of a child whose profile names a route of its own (AH-DEL-1: its own
   * route and credential, recorded in its snapshot); undefined: the parent's answers it.
   */
  readonly childGateway?: ((profile: Profile) => ModelGateway | undefined) | undefined;
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
  /** An interactive session's record for the snapshot (src/session): id, authority, restore. */
  readonly session?: SnapshotSession | undefined;
  /**
   * `cfh mcp`: the calls are proposed by an MCP client, not by cfh's model gateway; the
   * snapshot says so, and there is no direct command (no capture, no `prompt:direct`).
   */
  readonly modelSide?: SnapshotModelSide | undefined;
  /** `cfh sandbox resume`: the run this one continues, recorded in the snapshot (AH-ART-4). */
  readonly resumedFrom?: ResumedFrom | undefined;
  /** A child run: who delegated it (AH-DEL-5), in its snapshot. */
  readonly delegatedBy?: DelegatedBy | undefined;
  /**
   * Model contexts this run continues or was handed (resume, restore, a delegation, an
   * approved plan): its context starts at their labels, never below (cfc/carried.ts).
   */
  readonly carried?: readonly CarriedContext[] | undefined;
}

/** The loop's result, and the plan it left (plan mode). */
export type AgentResult = AgentLoopResult & {
  readonly plan?: { readonly file: string; readonly sha256: string };
};

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
  /** Host-obeyed paths the run created or changed in its host rw mounts (class 9). */
  readonly hostObeyed: HostObeyedReport | undefined;
  /** The calls that did not run because they were refused (blocked-calls.ts). */
  readonly blocked: BlockedSummary;
  readonly assurance: Assurance;
  /** What the run's containers used (report.json `resources`). */
  readonly resources: ResourcesRecord;
  /** What the run used against its budgets, completed descendants included (AH-USAGE-2). */
  readonly used: ChildOutcome['used'];
}

export async function executeAgentRun(
  plan: RunPlan,
  request: AgentRequest,
  deps: AgentRunDeps,
  signal: AbortSignal,
  drive: AgentDriver = answerOnce,
): Promise<AgentOutcome> {
  const delegation =
    deps.childPlanner === undefined
      ? undefined
      : delegationOf(plan, request.delegatedBy, {
          plan: deps.childPlanner,
          run: childLauncher(request, deps),
        });
  // The one surface builder (tool-surface.ts), as `policy explain` builds it too: an MCP
  // client's run offers what MCP lists; a model's, delegation and the host tools.
  const front: SurfaceFront = request.modelSide === undefined ? 'agent' : 'mcp';
  const parts = (host: readonly ToolDefinition[]): SurfaceParts => ({
    delegate: delegation?.tool,
    host,
    draft: draftPart(plan.workspaceMode, plan.cfc),
  });
  const held: { tracker?: BudgetTracker; children?: ChildRunner; attempts?: AttemptLedger } = {};
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
  // Every context the model starts from that another run or a file carries in: an approved
  // plan is the planning model's text and carries that context's label; a prompt file, its
  // place's. One above the model's clearance refuses the run before anything exists.
  const carried = carriedInto(plan, request);
  refuseUncleared(plan.cfc, carried);
  const host: { open?: OpenHostTools } = {};
  const blocked = new BlockedCalls();
  const card = rateCardOf(deps.gateway);
  const budgets = plan.profile.budgets;
  const slots = slotsOf(request);
  const fromPlan =
    request.fromPlan === undefined
      ? null
      : { runId: request.fromPlan.runId, sha256: request.fromPlan.sha256 };
  const capture = request.promptCapture ?? null;
  const cfcOn = plan.cfc.mode !== 'disabled';
  const work: RunWork<AgentResult> = {
    kind: 'agent',
    snapshot: (common) => ({
      ...common,
      kind: 'agent',
      // Governance extension, "Planning mode": the mode, the plan a run executes, and how
      // approvals are given, fixed before anything runs.
      mode: request.mode,
      fromPlan,
      ...(request.resumedFrom === undefined ? {} : { resumedFrom: request.resumedFrom }),
      ...(request.delegatedBy === undefined ? {} : { delegatedBy: request.delegatedBy }),
      approvals: request.approvals,
      // What every decision is made with, so the audit re-derives each one (AH-CFC-9): the
      // surface as planned, a draft session's tools included (an MCP client's run).
      mediation: mediationRecord(
        runFactsFor(plan, request),
        toolSurface(plan.profile.tools, front, parts([])).all(),
        plan.profile,
      ),
      // No command: the tools run commands, each recorded as a tool event.
      command: null,
      cfc: snapshotCfc(plan.cfc, plan.profile.cfc.mode, cfcOn ? capture : null),
      // AH-INV-2: model, adapter and route by reference; prompt slots by role and digest.
      model: modelRecord(deps.gateway),
      // An MCP client's run has no prompt slots: it says so instead (modelSide).
      ...(request.modelSide === undefined
        ? {
            promptSlots: {
              directCommand: { chars: slots.prompt.length, digest: digest(slots.prompt) },
              context: (slots.context ?? []).map((c) => ({ chars: c.length, digest: digest(c) })),
              quoted: (slots.quoted ?? []).map((q) => ({ chars: q.length, digest: digest(q) })),
            },
          }
        : { modelSide: request.modelSide }),
      tools: snapshotTools(plan.profile.tools, front, parts([])),
      // AH-TOOL-7: advertised apart from the sandbox tools, with their bounded authority.
      hostTools: describeHostTools(hostPlan),
      budgets,
      toolContainer: {
        lifetime: plan.profile.toolLifetime,
        name: toolContainerName(plan.spec, 'workload'),
        fileToolName: toolContainerName(plan.spec, 'file-tool'),
        // cfh's own sandbox image, whatever the workload's is (agent-tool-setup.ts toolSpecs).
        fileToolImage: plan.image.fileTools.ref,
        timeoutCapSeconds: plan.profile.toolTimeoutSeconds ?? null,
        // The warm pool per-call containers come from (null: none).
        pool: poolSnapshot(plan),
      },
      // AH-LIFE-7: the compaction threshold, its state and the provider's compatibility.
      context: compactionSetup(plan.profile.context, deps.gateway),
      ...(request.session === undefined ? {} : { session: request.session }),
    }),
    run: async (session, s) => {
      // Before any call can be decided: every refusal the log records is counted.
      session.dir.events.subscribe(blocked.listener);
      // AH-CFC-3/4: the direct command is a slot of integrity prompt:direct only with its
      // capture; context, quoted material and an approved plan are slots of none; a context
      // carried in keeps its label (cfc/carried.ts). Disabled: no runtime, the calls behave
      // as without CFC (the plan is still in the snapshot).
      const cfc = cfcRuntimeOf(
        plan.cfc,
        WORKSPACE_TARGET,
        {
          capture,
          context: request.slots.context?.length ?? 0,
          quoted: request.slots.quoted?.length ?? 0,
          fromPlan: request.fromPlan !== undefined,
        },
        {
          runId: plan.runId,
          keep: heldValueKeeper(session.dir),
          carried,
        },
      );
      // AH-CFC-3: the capture of the direct command, before the first model request.
      if (cfc?.capture != null)
        await session.dir.events.append('prompt_captured', cfc.capture, true);
      if (cfc !== undefined) await startCarried(cfc, session.dir.events);
      // AH-CAP-4: every declared host tool healthy before the first model request.
      if (!scrubber.empty) session.dir.redactWith(scrubber);
      host.open = await openHostTools(session, hostPlan, deps.hostTools, scrubber, s);
      const surface = toolSurface(plan.profile.tools, front, parts(host.open.tools));
      const children =
        delegation === undefined
          ? undefined
          : (tracker: BudgetTracker) => {
              held.children = delegation.runner(session, tracker);
              return held.children;
            };
      return runAgent(
        session,
        { ...request, slots },
        deps,
        { registry: surface, host: host.open, scrubber, blocked, cfc, children },
        drive,
        s,
        held,
      );
    },
    report: (loop) => {
      // The log's attempts: a run cancelled mid-turn has no loop result, but its attempts.
      const usage = held.attempts?.records ?? loop?.usage ?? [];
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
        // AH-USAGE-2: what the usage records cover; the tree's total apart.
        usageCoverage: {
          scope: 'direct-run',
          attempts: usage.length,
          descendants: delegation === undefined ? 'none' : 'separate',
        },
        ...(delegation === undefined ? {} : treeUsage(held)),
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
    usage: held.attempts?.records ?? loop?.usage ?? [],
    toolCalls: loop?.toolCalls ?? null,
    error: errorRecord(outcome.error),
    patch: patchReport(outcome.patch),
    hostObeyed: outcome.hostObeyed,
    blocked: blocked.summary(),
    assurance: outcome.assurance,
    resources: outcome.resources,
    used: usedOf(held.tracker),
  };
}

/**
 * How a child is run: as an agent run of this module, its request the task as quoted
 * material, nobody to ask for approvals, and the parent's mode (a planning run's children
 * plan too); the parent's engine, signer and host-tool channel, its own gateway.
 */
function childLauncher(request: AgentRequest, deps: AgentRunDeps): ChildLauncher['run'] {
  return async (childPlan, child, signal) => {
    const outcome = await executeAgentRun(
      childPlan,
      {
        slots: { prompt: child.slots.prompt, quoted: [...child.slots.quoted] },
        mode: request.mode,
        approvals: {
          user: request.approvals.user,
          interactive: false,
          notInteractiveBecause: 'a child run: approvals are its own profile policy',
          preApprovedRules: [],
          file: null,
          surfaces: [],
        },
        delegatedBy: child.by,
        carried: child.carried,
      },
      {
        runtime: deps.runtime,
        logger: deps.logger,
        owner: deps.owner,
        egressResolver: deps.egressResolver,
        signer: deps.signer,
        hostProcessDir: deps.hostProcessDir,
        draftRoot: deps.draftRoot,
        writtenLabelsDir: deps.writtenLabelsDir,
        gateway:
          deps.childGateway?.(childPlan.profile) ??
          deps.gateway.forChild?.(child.name) ??
          deps.gateway,
        hostTools: deps.hostTools,
        childPlanner: deps.childPlanner,
        childGateway: deps.childGateway,
      },
      signal,
    );
    return {
      runId: outcome.runId,
      status: outcome.status,
      terminalReason: outcome.terminalReason,
      finalAnswer: outcome.finalAnswer,
      artifactDir: outcome.artifactDir,
      error:
        outcome.error === null
          ? null
          : { code: outcome.error.code, message: outcome.error.message },
      used: outcome.used,
    };
  };
}

/** What a driver is given: the opened surface and what it was opened for. */
export interface AgentDriveContext {
  readonly session: RunSession;
  readonly request: AgentRequest;
  readonly deps: AgentRunDeps;
  readonly surface: AgentSurface;
  readonly open: OpenAgentSurface;
}

/**
 * What drives an opened agent surface to the end of the run: by default one loop over the
 * request's prompt (`cfh sandbox run --prompt`). A session drives it turn after turn; it
 * returns how the run ended, as the one-prompt driver does.
 */
export type AgentDriver = (
  context: AgentDriveContext,
  signal: AbortSignal,
) => Promise<{ end: RunEnd; result: AgentResult }>;

async function runAgent(
  session: RunSession,
  request: AgentRequest,
  deps: AgentRunDeps,
  surface: AgentSurface,
  drive: AgentDriver,
  signal: AbortSignal,
  held: { tracker?: BudgetTracker; attempts?: AttemptLedger },
): Promise<{ end: RunEnd; result: AgentResult }> {
  const open = await openAgentSurface(session, request, deps, surface, signal);
  held.tracker = open.tracker;
  held.attempts = open.attempts;
  return drive({ session, request, deps, surface, open }, signal);
}

/**
 * One loop over `conversation` (a new one by default) until the model answers or a budget
 * ends it; a resumed run passes the context it rebuilt (resume-run.ts).
 */
export const answerIn =
  (conversation?: Conversation): AgentDriver =>
  async ({ session, request, surface, open }, signal) => {
    const loop = await runAgentLoop(request.slots, open.loopDeps, signal, conversation);
    return endOfLoop(session, request, surface, loop);
  };

/** The one-prompt driver: one loop until the model answers or a budget ends it. */
export const answerOnce: AgentDriver = answerIn();

async function endOfLoop(
  session: RunSession,
  request: AgentRequest,
  surface: AgentSurface,
  loop: AgentLoopResult,
): Promise<{ end: RunEnd; result: AgentResult }> {
  const end: RunEnd =
    loop.status === 'completed'
      ? await answeredOrBlocked(session, request.mode, surface.blocked)
      : { kind: 'budget', budget: loop.budget?.budget ?? loop.terminalReason };
  // A planning run that answered leaves its plan, in the hash chain like every evidence
  // file; `--from-plan` takes it only from there.
  if (request.mode === 'plan' && loop.status === 'completed' && loop.finalAnswer !== undefined) {
    const sha256 = await session.dir.writeFile(PLAN_FILE, loop.finalAnswer);
    return { end, result: { ...loop, plan: { file: PLAN_FILE, sha256 } } };
  }
  return { end, result: loop };
}

/**
 * `--fail-on-blocked` / `failOnBlocked`: an answer after blocked calls fails the run, and the
 * evidence says which calls, durably, before the terminal record (AH-LIFE-2).
 */
export async function answeredOrBlocked(
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
