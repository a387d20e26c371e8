// Events of an agent run's tool calls, joined by `callId` (AH-TOOL-3..6): the proposal,
// its validation or rejection, the mediator's decision, the execution or denial, retries,
// aborts, and the tool containers the calls ran in.
import { z } from 'zod';
import { CallId, Count, Milliseconds } from './common.js';

const CallRef = { callId: CallId, toolUseId: z.string(), tool: z.string() };

export const ObservationStatus = z.enum([
  'success',
  'error',
  'denied',
  'approval_required',
  'timeout',
  'aborted',
]);

export const PermissionDecisionValue = z.enum(['allow', 'deny', 'approval_required']);

const ToolContainer = z.strictObject({
  containerId: z.string().min(1),
  name: z.string(),
  kind: z.enum(['workload', 'file-tool']),
  lifetime: z.enum(['per-run', 'per-call']),
});

export const toolEvents = {
  /** The model's proposal, with a bounded summary of its input. */
  tool_requested: z.strictObject({ ...CallRef, input: z.string() }),
  /** Outside the tool surface or invalid arguments: nothing ran, no decision was needed. */
  tool_rejected: z.strictObject({
    ...CallRef,
    reason: z.enum(['unknown_tool', 'invalid_arguments']),
  }),
  permission_decision: z.strictObject({
    ...CallRef,
    decision: PermissionDecisionValue,
    rule: z.string().min(1),
    reason: z.string(),
  }),
  tool_denied: z.strictObject({ ...CallRef, rule: z.string().min(1) }),
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
      exitCode: z.number().int(),
      durationMs: Milliseconds,
      containerId: z.string(),
      attempts: z.number().int().positive(),
      outputs: z.array(z.string()),
      truncated: z.strictObject({ originalChars: Count, keptChars: Count }).optional(),
    }),
    /** The observation broke the tool's output schema: withheld, and the run failed. */
    z.strictObject({
      ...CallRef,
      status: z.literal('withheld'),
      reason: z.string(),
      exitCode: z.number().int(),
      containerId: z.string(),
      outputs: z.array(z.string()),
    }),
  ]),
  /** A call the run's stop left unanswered (never started, or cut off). */
  tool_call_aborted: z.strictObject({ ...CallRef, reason: z.string() }),
  tool_container_started: ToolContainer,
  tool_container_removed: ToolContainer,
} as const;
