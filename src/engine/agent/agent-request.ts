// What an agent run is asked and what it answers: its request (prompt slots, mode, how
// approvals are given, what it continues or was handed), its dependencies, and its outcome.
// The shapes every caller of executeAgentRun (agent-run.ts) shares: the CLI, sessions,
// `cfh mcp`, resume and a parent's child launcher.
import type { ModelGateway } from '../../model/gateway.js';
import type { Profile } from '../../config/profile-schema.js';
import type { CarriedContext } from '../../cfc/carried.js';
import type { InputCaptureRecord } from '../../evidence/schema/events-cfc.js';
import type { SnapshotModelSide, SnapshotSession } from '../../evidence/schema/snapshot.js';
import type { ResumedFrom } from '../../evidence/schema/resume.js';
import type { ApprovedPlan } from '../resume/from-plan.js';
import type { ErrorRecord, ResourcesRecord } from '../run/run-session.js';
import type { Assurance } from '../run/snapshot.js';
import type { PatchReport } from '../run/run-summary.js';
import type { HostObeyedReport } from '../run/rw-sweep.js';
import type { ChildLauncher, ChildOutcome, DelegatedBy } from '../children/child-runner.js';
import type { AgentLoopResult, PromptSlots } from './agent-loop.js';
import type { SurfaceDeps } from './agent-surface.js';
import type { BlockedSummary } from './blocked-calls.js';
import type { HostToolDeps } from './host-tools.js';

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
