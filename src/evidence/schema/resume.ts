// A resumed run's link to the run it continues (AH-ART-4/5): in its snapshot and, the same
// record, as its `run_resumed` event, before its first model request. `cfh audit` checks
// the link against the old run's chain (audit/checks-resume.ts).
import { z } from 'zod';
import { Count, RunIdString, Sha256Hex } from './common.js';

/** The rebuilt context of a resumed run, one transcript message a line, in its chain. */
export const RESUMED_CONTEXT_FILE = 'resumed-context.jsonl';

export const ResumedFrom = z.strictObject({
  runId: RunIdString,
  /** How the old run had ended; `abandoned`: not terminal, and its cfh was gone. */
  status: z.enum(['completed', 'failed', 'cancelled', 'abandoned']),
  /** The last event of the old chain and its hash: the chain the context comes from. */
  finalSeq: z.number().int().positive(),
  finalHash: Sha256Hex,
  /** The old snapshot's schema and profile digest, as read. */
  snapshotSchema: z.string(),
  profileDigest: z.string(),
  /** The old transcript, by digest; `anchored: false`: an abandoned run's, never sealed. */
  transcript: z.strictObject({ sha256: Sha256Hex, messages: Count, anchored: z.boolean() }),
  /** The narrowing overrides the resume was given (flag → value); each was checked. */
  overrides: z.record(z.string(), z.string()),
  /** `fresh`: a new --prompt with its own capture record; `none`: no direct command. */
  prompt: z.enum(['fresh', 'none']),
});
export type ResumedFrom = z.infer<typeof ResumedFrom>;
