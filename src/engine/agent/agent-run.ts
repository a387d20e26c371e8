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
import { estimateRun, rateCardOf } from '../../model/cost.js';
import { openAgentSurface, type AgentSurface } from './agent-surface.js';
export { MODEL_OUTPUT_CAP, type RetryHook } from './agent-surface.js';
export type {
  AgentOutcome,
  AgentRequest,
  AgentResult,
  AgentRunDeps,
  ApprovalSetup,
} from './agent-request.js';
import type { AgentOutcome, AgentRequest, AgentResult, AgentRunDeps } from './agent-request.js';
import { answerOnce, type AgentDriver } from './agent-drivers.js';
import type { RunPlan } from '../run/run-plan.js';
import { errorRecord, runSession, type RunSession, type RunWork } from '../run/run-session.js';
import { mediationRecord, runFactsFor } from '../run/mediation-record.js';
import { cfcRuntimeOf, snapshotCfc } from '../cfc/cfc-plan.js';
import { heldValueKeeper, startCarried } from '../cfc/cfc-carry.js';
import type { RunEnd } from '../run/terminal.js';
import { BlockedCalls } from './blocked-calls.js';
import { patchReport } from '../run/run-summary.js';
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
import type { ChildLauncher, ChildRunner } from '../children/child-runner.js';
import { delegationOf, treeUsage, usedOf } from '../children/agent-delegation.js';

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
