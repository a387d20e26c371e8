// Events of delegation (AH-DEL-3/5, AH-USAGE-2): the parent's chain names each child run it
// started, and when it ended, the child's terminal state, the hash its own chain ended on,
// the digest of what came back and what the child used. The child's raw transcript,
// outputs and failure detail stay in its own run directory, RUN/children/<childId>/.
import { z } from 'zod';
import { Count, Milliseconds, RunIdString, Sha256Hex } from './common.js';

/** Where a run keeps its child runs' directories: RUN/children/<childId>/. */
export const CHILDREN_DIR = 'children';

/** What a child run used, on its own (its descendants are counted in their own records). */
export const ChildUsage = z.strictObject({
  modelTurns: Count,
  toolCalls: Count,
  inputTokens: Count,
  outputTokens: Count,
  /** Estimated cost in the rate card's currency; null when an attempt could not be priced. */
  estimatedCost: z.number().nonnegative().nullable(),
});
export type ChildUsage = z.infer<typeof ChildUsage>;

/** The budget slice a child runs under: the least of its profile's and the parent's left. */
export const ChildSlice = z.strictObject({
  maxModelTurns: Count,
  maxToolCalls: Count,
  maxInputTokens: Count,
  maxOutputTokens: Count,
  maxWallTimeSeconds: z.number().nonnegative(),
  maxTotalCost: z.number().nonnegative().nullable(),
});
export type ChildSlice = z.infer<typeof ChildSlice>;

export const childEvents = {
  child_started: z.strictObject({
    callId: z.string(),
    childId: RunIdString,
    /** The child profile's name in the parent's `children:`. */
    profile: z.string(),
    /** The resolved profile's own name and digest (its snapshot has the rest). */
    profileName: z.string(),
    profileDigest: Sha256Hex,
    /** Relative to the parent's run directory. */
    dir: z.string(),
    depth: Count,
    slice: ChildSlice,
    /** The task and inputs as the child received them (quoted material): digests only. */
    taskSha256: Sha256Hex,
    inputsSha256: Sha256Hex.nullable(),
  }),
  /** Refused before a child run existed (unknown profile, ceiling, depth, no budget left). */
  child_refused: z.strictObject({
    callId: z.string(),
    profile: z.string(),
    code: z.string(),
    message: z.string(),
  }),
  child_finished: z.strictObject({
    callId: z.string(),
    childId: RunIdString,
    profile: z.string(),
    status: z.enum(['completed', 'failed', 'cancelled']),
    terminalReason: z.string(),
    /** The last hash of the child's events.jsonl chain, and how many records it holds. */
    finalHash: Sha256Hex,
    events: Count,
    /** What reached the parent: `returned` (validated), or the typed failure it got. */
    outcome: z.enum(['returned', 'return_invalid', 'failed']),
    returnSha256: Sha256Hex.nullable(),
    returnChars: Count,
    /** The typed failure, when the outcome is not `returned`. */
    error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
    usage: ChildUsage,
    ms: Milliseconds,
  }),
} as const;
