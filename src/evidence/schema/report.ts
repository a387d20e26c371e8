// report.json (cfh.report/1): written once, after run_finished and citing it; its digest
// (without `lastEvent`) is in run_finished's `reportSha256`. The fields every run has, then
// those of a command run and of an agent run.
import { z } from 'zod';
import { Count, RunIdString, Sha256Hex, TerminalStatus } from './common.js';
import { AttemptEstimate, BudgetExceeded, ReportedUsage } from './events-model.js';
import { BlockedSummary } from './events-tools.js';
import { FromPlan, SnapshotAssurance, SnapshotIo, SnapshotModel } from './snapshot.js';
import { EventAnchor } from './state.js';
import { ChildUsage } from './events-children.js';

export const REPORT_SCHEMA = 'cfh.report/1';

const OutputRecord = z.strictObject({
  file: z.string(),
  bytesSeen: Count,
  bytesKept: Count,
  truncated: z.boolean(),
  liveDropped: Count,
});

export const UsageRecord = z.strictObject({
  attemptId: z.string(),
  adapter: z.string(),
  model: z.string(),
  usage: ReportedUsage,
});

export const CostEstimate = z.strictObject({
  kind: z.literal('harness-estimate'),
  currency: z.string().min(3),
  rateCard: z.strictObject({ file: z.string(), version: z.string(), source: z.string() }),
  perAttempt: z.array(AttemptEstimate),
  total: z.number().optional(),
  totalOmitted: z.enum(['incomplete_coverage', 'no_attempts']).optional(),
});

/** A container's (or the run's) cgroup counters; a counter the kernel does not keep is absent. */
const ResourceCounters = z.strictObject({
  /** High-water mark of the cgroup's memory (anonymous and page cache), bytes. */
  memoryPeakBytes: Count.optional(),
  /** CPU time, exact (cpuacct.usage / usage_usec); user and system are the kernel's split. */
  cpuTotalMs: z.number().nonnegative().optional(),
  cpuUserMs: z.number().nonnegative().optional(),
  cpuSystemMs: z.number().nonnegative().optional(),
  /** High-water mark of tasks (processes and threads; under runsc the sandbox's host ones). */
  pidsPeak: Count.optional(),
});

/** What the run's sandbox containers used, from their cgroups once they were removed. */
export const ResourcesRecord = z.union([
  z.strictObject({
    source: z.enum(['cgroup-v1', 'cgroup-v2']),
    /** The run's cgroup: its memory and pids peaks are of all its containers at once. */
    total: ResourceCounters,
    containers: z.array(ResourceCounters.extend({ name: z.string() })),
    /** What reading them, and then releasing the run's cgroups, cost the run. */
    readMs: z.number().nonnegative(),
    removeMs: z.number().nonnegative(),
  }),
  z.strictObject({ unavailable: z.string() }),
]);

/** The run's CFC outcome (AH-CFC-14): the mode as the snapshot says, and what it decided. */
export const ReportCfc = z.strictObject({
  mode: z.enum(['disabled', 'observe', 'enforce-explicit', 'enforce-strict']),
  /** False for disabled and observe: observe is diagnostic, never enforcement (AH-CFC-15). */
  enforced: z.boolean(),
  flows: z.strictObject({ allowed: Count, denied: Count, wouldDeny: Count, endorsed: Count }),
  handles: Count,
  opaque: Count,
  /** Results a host tool the operator declared a declassifier answered (cfc_declassified). */
  declassified: Count.optional(),
  /** Model contexts the run continues or was handed, with their labels (cfc_carried). */
  carried: Count.optional(),
});

export const Report = z.strictObject({
  schema: z.literal(REPORT_SCHEMA),
  runId: RunIdString,
  status: TerminalStatus,
  terminalReason: z.string(),
  exitCode: z.number().int(),
  kind: z.enum(['command', 'agent']),
  image: z.strictObject({ ref: z.string(), id: z.string() }),
  error: z.strictObject({ code: z.string(), boundary: z.string(), message: z.string() }).nullable(),
  assurance: SnapshotAssurance,
  /** Absent only in runs recorded before CFC. */
  cfc: ReportCfc.optional(),
  /** Absent in runs recorded before it. */
  resources: ResourcesRecord.optional(),
  lastEvent: EventAnchor,
  // A command run.
  commandExitCode: z.number().int().nullable().optional(),
  oomKilled: z.boolean().optional(),
  container: z
    .strictObject({ id: z.string().nullable(), name: z.string(), removed: z.boolean() })
    .optional(),
  outputs: z.record(z.string(), OutputRecord).optional(),
  /** `-i`/`-t`; with a TTY, outputs.stdout is the session's transcript. */
  io: SnapshotIo.optional(),
  timings: z.record(z.string(), z.number()).optional(),
  // An agent run.
  model: SnapshotModel.optional(),
  finalAnswer: z.string().nullable().optional(),
  usage: z.array(UsageRecord).optional(),
  toolCalls: z
    .strictObject({
      total: Count,
      byStatus: z.record(z.string(), Count),
      byTool: z.record(z.string(), Count),
    })
    .nullable()
    .optional(),
  budget: BudgetExceeded.optional(),
  /** The calls that did not run because they were refused, and whether that failed the run. */
  blocked: BlockedSummary.extend({ failOnBlocked: z.boolean() }).optional(),
  toolLifetime: z.enum(['per-run', 'per-call']).optional(),
  usageCoverage: z
    .strictObject({
      scope: z.literal('direct-run'),
      attempts: Count,
      /** `none`: the run had no children; `separate`: theirs are in usageWithDescendants. */
      descendants: z.enum(['none', 'separate']),
    })
    .optional(),
  /**
   * AH-USAGE-2: this run's budget use with every completed descendant's (each child's own
   * total, its descendants inside it, counted once); `usage` above stays this run's alone.
   */
  usageWithDescendants: z
    .strictObject({
      coverage: z.literal('run-and-completed-descendants'),
      modelTurns: Count,
      toolCalls: Count,
      inputTokens: Count,
      outputTokens: Count,
      estimatedCost: z.number().nonnegative().nullable(),
      descendants: ChildUsage,
    })
    .optional(),
  /** AH-DEL-5: each child run, its terminal state, what reached this run, its directory. */
  children: z
    .array(
      z.strictObject({
        childId: RunIdString,
        profile: z.string(),
        callId: z.string(),
        status: z.enum(['completed', 'failed', 'cancelled']),
        outcome: z.enum(['returned', 'return_invalid', 'failed']),
        dir: z.string(),
        usage: ChildUsage,
      }),
    )
    .optional(),
  costEstimate: CostEstimate.optional(),
  /**
   * Class 9 (src/host-obeyed.ts): host-obeyed paths the run created or changed in its host
   * rw mounts where nothing held them read-only (each the shallowest of its subtree, the
   * first 100 named), in the mode the snapshot states. Absent: no host rw mount.
   */
  hostObeyed: z
    .strictObject({
      mode: z.enum(['ro', 'rw']),
      changed: Count,
      paths: z.array(z.string()),
      entries: Count,
      complete: z.boolean(),
    })
    .optional(),
  /** Draft mode: the patch the run left, in the chain (`cfh runs diff`, `cfh runs apply`). */
  draft: z
    .union([
      z.looseObject({ file: z.string(), diff: z.string(), sha256: Sha256Hex, blobs: Count }),
      // No patch: the work never started, or writing it failed (the error code says why).
      z.strictObject({ patch: z.null(), error: z.string().optional() }),
    ])
    .optional(),
  /** Host tools: the durable resources they created (AH-TOOL-9); open here. */
  hostTools: z.looseObject({ resources: z.array(z.unknown()) }).optional(),
  mode: z.enum(['run', 'plan']).optional(),
  /** A planning run's answer, kept as a file of the chain. */
  plan: z.strictObject({ file: z.string(), sha256: Sha256Hex }).nullable().optional(),
  fromPlan: FromPlan.optional(),
  /** What the provider itself reported as a charge: none of the adapters receive one yet. */
  providerReportedCost: z.null().optional(),
});
export type Report = z.infer<typeof Report>;
