// Events of the model gateway in an agent run: attempts, usage exactly as reported
// (AH-USAGE-1), the harness's per-attempt estimate (AH-USAGE-4), retries (AH-LIFE-5),
// budgets (AH-LIFE-4) and the final answer.
import { z } from 'zod';
import { Count } from './common.js';

/** The counters a provider reported for one attempt; an absent counter stays absent. */
export const ReportedUsage = z.strictObject({
  input_tokens: z.number().optional(),
  output_tokens: z.number().optional(),
  cache_read_input_tokens: z.number().optional(),
  cache_creation_input_tokens: z.number().optional(),
});

export const NoEstimateReason = z.enum([
  'unsupported_pricing',
  'missing_provider_detail',
  'invalid_counters',
]);

export const AttemptEstimate = z.union([
  z.strictObject({ attemptId: z.string(), estimated: z.number(), pricedAs: z.string().optional() }),
  z.strictObject({ attemptId: z.string(), omitted: NoEstimateReason }),
]);

export const BudgetName = z.enum([
  'max_model_turns',
  'max_tool_calls',
  'max_parallel_tool_calls',
  'max_wall_time_seconds',
  'max_input_tokens',
  'max_output_tokens',
  'max_total_cost',
]);

export const BudgetExceeded = z.strictObject({
  budget: BudgetName,
  limit: z.number(),
  used: z.number(),
  unpriced: z.literal(true).optional(),
  /** Refused before the request was sent: the worst case it would have added. */
  reserved: z.number().optional(),
});

export const modelEvents = {
  model_call_started: z.strictObject({
    attemptId: z.string().min(1),
    adapter: z.string(),
    /**
     * The route this attempt went to (provider, endpoint, model, wire, credential by
     * reference: AH-INV-2); the same on every attempt of a run (AH-INV-5).
     */
    route: z.record(z.string(), z.string()).optional(),
    /** The request's max_tokens: the model's cap, lowered to what the budgets leave. */
    maxTokens: z.number().int().positive().optional(),
    /** What was reserved against the budgets before the request (AH-LIFE-4). */
    reserved: z
      .strictObject({
        inputTokens: Count,
        counted: z.enum(['provider', 'bound']),
        cost: z.number().nonnegative().optional(),
      })
      .optional(),
  }),
  model_call_completed: z.strictObject({
    attemptId: z.string().min(1),
    adapter: z.string(),
    model: z.string(),
    stopReason: z.string(),
    usage: ReportedUsage,
    costEstimate: AttemptEstimate.optional(),
  }),
  /** A gateway retry of a transient error, inside the attempt it belongs to. */
  model_retry: z.strictObject({ attempt: z.number().int().positive(), reason: z.string() }),
  final_answer_produced: z.strictObject({ chars: Count }),
  budget_exceeded: BudgetExceeded,
} as const;
