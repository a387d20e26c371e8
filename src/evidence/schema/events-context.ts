// Events of context compaction (AH-LIFE-6/7): each compaction is `compaction_started`, then
// exactly one of `compaction_completed` or `compaction_failed` with the same `n`, before the
// next model request of the run (audit: context.compaction-ordered).
import { z } from 'zod';
import { Count, Sha256Hex } from './common.js';
import { LabelRecord } from './events-cfc.js';

export const CompactionMechanism = z.enum(['summary-request']);

export const contextEvents = {
  /** The context passed the threshold before a model request: compaction `n` begins. */
  compaction_started: z.strictObject({
    n: z.number().int().positive(),
    /** The context as measured, and how: the last reported usage plus an estimate of what came after, or an estimate alone. */
    measuredTokens: Count,
    measured: z.enum(['reported', 'estimate']),
    thresholdTokens: z.number().int().positive(),
    messages: Count,
    /** Earlier failures this compaction retries (AH-LIFE-7). */
    retryOf: Count,
  }),
  compaction_completed: z.strictObject({
    n: z.number().int().positive(),
    mechanism: CompactionMechanism,
    /** The summarising request (its model_call_* events; counted in usage and budgets). */
    attemptId: z.string().min(1),
    /** Messages replaced by the summary, prompt-slot messages kept verbatim, tail kept. */
    summarised: Count,
    keptSlots: Count,
    keptTail: Count,
    messagesBefore: Count,
    messagesAfter: Count,
    estimatedTokensAfter: Count,
    summary: z.strictObject({ chars: Count, sha256: Sha256Hex }),
    /**
     * The CFC label the summary carries: the join of the context it summarises (the context's
     * label is never lowered by compaction), and the authority the context still carries.
     * Absent with CFC disabled.
     */
    label: LabelRecord.optional(),
    authority: z.string().nullable().optional(),
  }),
  compaction_failed: z.strictObject({
    n: z.number().int().positive(),
    attemptId: z.string().min(1).optional(),
    reason: z.string().min(1),
    /** Consecutive failures so far. */
    failures: z.number().int().positive(),
    /** `next_request`: tried again before the next model request; `none`: the run fails. */
    retry: z.enum(['next_request', 'none']),
  }),
} as const;
