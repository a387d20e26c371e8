// Events of an agent run's tool calls, joined by `callId` (AH-TOOL-3..6): the proposal,
// its validation or rejection, the mediator's decision, the execution or denial, retries,
// aborts, and the tool containers the calls ran in.
import { z } from 'zod';
import {
  DecisionValue,
  ResourceScope,
  RiskClass,
  SideEffectClass,
} from '../../config/vocabulary.js';
import { CallId, Count, Milliseconds, PrefixedSha256 } from './common.js';

const CallRef = { callId: CallId, toolUseId: z.string(), tool: z.string() };

export const ObservationStatus = z.enum([
  'success',
  'error',
  'denied',
  'approval_required',
  'timeout',
  'aborted',
]);

/** Who approved: the OS user at a surface cfh controls; never the model. */
export const Approver = z.strictObject({
  kind: z.literal('human'),
  user: z.string().min(1),
  surface: z.enum(['tty', 'flag', 'file', 'stdio']),
});

/**
 * The governance extension's permission decision object, as the mediator records it for
 * every proposal before anything happens (src/mediator/decision.ts writes this shape).
 */
export const PermissionDecisionRecord = z.strictObject({
  call_id: CallId,
  tool_name: z.string(),
  risk_class: RiskClass.nullable(),
  side_effect_class: SideEffectClass.nullable(),
  resource_scope: ResourceScope.nullable(),
  decision: DecisionValue,
  policy_rule: z.string().min(1),
  reason: z.string(),
  approver: Approver.nullable(),
  args_digest: PrefixedSha256,
  timestamp: z.iso.datetime(),
});

/** Decision values that let a call run (each with its own condition). */
export const ALLOWING_DECISIONS: readonly string[] = [
  'allow',
  'run_in_sandbox',
  'run_as_draft_only',
];

const ToolContainer = z.strictObject({
  containerId: z.string().min(1),
  name: z.string(),
  kind: z.enum(['workload', 'file-tool']),
  lifetime: z.enum(['per-run', 'per-call']),
});

/** Issue 21: a per-call container made ahead, from the run's spec for its kind. */
const PooledContainer = ToolContainer.extend({
  lifetime: z.literal('per-call'),
  /** The kind's spec digest (snapshot toolContainer.pool.kinds): the spec it was made from. */
  specDigest: z.string().regex(/^[0-9a-f]{64}$/),
  /** When its create was asked. */
  madeAt: z.iso.datetime(),
  /** Create, start and gate, ms. */
  readyMs: Milliseconds,
});

/** A call that did not run because it was refused (engine/agent/blocked-calls.ts). */
export const BlockedCall = z.strictObject({
  callId: CallId,
  tool: z.string(),
  rule: z.string().min(1),
  decision: DecisionValue,
  status: z.enum(['denied', 'approval_required']),
});

/** The blocked calls of an agent run: denied, left unapproved, and which. */
export const BlockedSummary = z.strictObject({
  denied: Count,
  unapproved: Count,
  calls: z.array(BlockedCall),
});

export const toolEvents = {
  /** The model's proposal, with a bounded summary of its input. */
  tool_requested: z.strictObject({ ...CallRef, input: z.string() }),
  /** Outside the tool surface or invalid arguments: nothing ran, no decision was needed. */
  tool_rejected: z.strictObject({
    ...CallRef,
    reason: z.enum(['unknown_tool', 'invalid_arguments']),
  }),
  permission_decision: PermissionDecisionRecord,
  /** The mediator refused or could not get an approval: nothing ran. */
  tool_denied: z.strictObject({
    ...CallRef,
    rule: z.string().min(1),
    decision: DecisionValue,
    status: z.enum(['denied', 'approval_required']),
  }),
  /** A decision that asks a person: who may answer, for which exact arguments. */
  approval_requested: z.strictObject({
    callId: CallId,
    tool: z.string(),
    rule: z.string().min(1),
    decision: DecisionValue,
    argsDigest: PrefixedSha256,
    approvers: z.array(Approver),
  }),
  approval_received: z.strictObject({
    callId: CallId,
    rule: z.string().min(1),
    argsDigest: PrefixedSha256,
    outcome: z.enum(['granted', 'refused', 'unavailable', 'cancelled']),
    approver: Approver.nullable(),
    scope: z.enum(['call', 'rule']).optional(),
    why: z.string().optional(),
    /** Time spent waiting, not charged to the wall-time budget. */
    waitedMs: Milliseconds,
  }),
  tool_retry: z.strictObject({
    ...CallRef,
    attempt: z.number().int().positive(),
    reason: z.string(),
    durationMs: Milliseconds,
  }),
  tool_executed: z.union([
    z.strictObject({
      ...CallRef,
      status: ObservationStatus,
      exitCode: z.number().int().nullable(),
      durationMs: Milliseconds,
      containerId: z.string(),
      attempts: z.number().int().positive(),
      outputs: z.array(z.string()),
      truncated: z.strictObject({ originalChars: Count, keptChars: Count }).optional(),
      /** Bytes a tool printed when its outputs were not all kept (per stream). */
      outputBytes: z.strictObject({ stdout: Count, stderr: Count }).optional(),
      idempotencyKey: z.string().optional(),
    }),
    /** The observation broke the tool's output schema: withheld, and the run failed. */
    z.strictObject({
      ...CallRef,
      status: z.literal('withheld'),
      reason: z.string(),
      exitCode: z.number().int().nullable(),
      containerId: z.string(),
      outputs: z.array(z.string()),
      outputBytes: z.strictObject({ stdout: Count, stderr: Count }).optional(),
      idempotencyKey: z.string().optional(),
    }),
  ]),
  /** A call the run's stop left unanswered (never started, or cut off). */
  tool_call_aborted: z.strictObject({ ...CallRef, reason: z.string() }),
  /**
   * A sandbox call stopped before it ended on its own (AH-LIFE-3, AH-INT-5): at its
   * deadline, by a cancellation, or because its supervisor stopped answering. Recorded once
   * nothing of it runs, before the call's tool_executed or tool_call_aborted.
   */
  tool_call_stopped: z.strictObject({
    callId: CallId,
    tool: z.string(),
    containerId: z.string().min(1),
    reason: z.enum(['timeout', 'cancelled', 'supervisor_lost']),
    /** session: the call's session was killed; container: cfh killed the whole container. */
    method: z.enum(['session', 'container']),
    /** The call's session id inside the container (null: the container was killed). */
    session: z.number().int().positive().nullable(),
    /** Processes killed (null: not counted, the container was killed). */
    processes: Count.nullable(),
    /** From the stop until nothing was left, ms. */
    waitedMs: Milliseconds,
    /** Nothing of the call was left running. */
    gone: z.boolean(),
  }),
  tool_container_started: ToolContainer,
  tool_container_removed: ToolContainer,
  /** Ready in its pool, after its tool_container_started (issue 21). */
  tool_container_pooled: PooledContainer,
  /** A call takes it, before the call runs in it: never handed out before. */
  tool_container_taken: PooledContainer.extend({
    idleMs: Milliseconds,
    waitedMs: Milliseconds,
    unused: z.literal(true),
  }),
  /**
   * `--fail-on-blocked` (or the profile's `failOnBlocked`) failed an agent run that
   * answered: the calls that were blocked (terminal reason `blocked_calls`).
   */
  run_blocked: BlockedSummary,
} as const;
