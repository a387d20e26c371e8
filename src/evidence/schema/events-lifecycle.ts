// Events every run writes: the evidence files entering the chain, creation, cancellation,
// a containment failure and the terminal record (AH-LIFE-1/2, AH-ART-1).
import { z } from 'zod';
import { Count, Sha256Hex, TerminalStatus } from './common.js';
import { ResumedFrom } from './resume.js';

export const lifecycleEvents = {
  /** An evidence file as written (or, for a streamed one, sealed): path relative to the run directory. */
  artifact_written: z.strictObject({
    file: z.string().min(1),
    sha256: Sha256Hex,
    bytes: Count.optional(),
  }),
  run_created: z.strictObject({
    kind: z.enum(['command', 'agent']),
    profile: z.string(),
    imageId: z.string(),
  }),
  /** A resumed run's link to the old chain (AH-ART-4/5), before its first model request. */
  run_resumed: ResumedFrom,
  cancelled: z.strictObject({ signal: z.enum(['SIGINT', 'SIGTERM', 'SIGHUP', 'abort']) }),
  /** What the engine mounted or a source did not match what cfh checked (AH-TOOL-6). */
  containment_failure: z.strictObject({
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
  }),
  /**
   * The terminal record. `reportSha256` binds report.json (without its `lastEvent`) into the
   * chain: sha256 of its canonical JSON.
   */
  run_finished: z.strictObject({
    status: TerminalStatus,
    terminalReason: z.string().min(1),
    exitCode: z.number().int(),
    reportSha256: Sha256Hex.optional(),
  }),
} as const;
