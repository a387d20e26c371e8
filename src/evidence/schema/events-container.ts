// Events of a command run's container (`cfh sandbox run -- CMD`): its life, its exit, the
// limits it reached (AH-LIFE-3/4).
import { z } from 'zod';
import { Count, Sha256Hex } from './common.js';

/** One output stream as OutputCapture counted it. */
export const CaptureRecord = z.strictObject({
  name: z.enum(['stdout', 'stderr']),
  file: z.string(),
  bytesSeen: Count,
  bytesKept: Count,
  truncated: z.boolean(),
  liveDropped: Count,
});

export const containerEvents = {
  container_created: z.strictObject({
    containerId: z.string().min(1),
    name: z.string(),
    seccompSha256: Sha256Hex,
  }),
  container_started: z.strictObject({ containerId: z.string().min(1) }),
  container_exited: z.strictObject({
    containerId: z.string().min(1),
    exitCode: z.number().int(),
    oomKilled: z.boolean(),
    signal: z.number().int().nullable(),
    stdout: CaptureRecord,
    stderr: CaptureRecord,
  }),
  limit_reached: z.discriminatedUnion('limit', [
    z.strictObject({ limit: z.literal('wall_time'), limitMs: Count }),
    z.strictObject({ limit: z.literal('memory'), memoryBytes: Count }),
    z.strictObject({
      limit: z.literal('output_bytes'),
      stream: z.enum(['stdout', 'stderr']),
      bytesSeen: Count,
      bytesKept: Count,
    }),
    /** The draft copy's allocated bytes passed its bound during the run (draft-watch.ts). */
    z.strictObject({ limit: z.literal('draft_bytes'), maxBytes: Count, bytes: Count }),
    /** The draft root's free space fell under its floor during the run. */
    z.strictObject({ limit: z.literal('draft_free_space'), floorBytes: Count, freeBytes: Count }),
  ]),
  live_output_dropped: z.strictObject({ stream: z.enum(['stdout', 'stderr']), bytes: Count }),
  container_removed: z.strictObject({ containerId: z.string().min(1) }),
  container_remove_failed: z.strictObject({ containerId: z.string().min(1), error: z.string() }),
} as const;
