// Events of the host-side set-id sweep of a run's rw mounts (AH-CONT-2).
import { z } from 'zod';
import { Count, Milliseconds } from './common.js';

export const sandboxEvents = {
  setid_stripped: z.strictObject({
    root: z.string(),
    path: z.string(),
    type: z.enum(['file', 'directory']),
    modeBefore: Count,
    modeAfter: Count,
    dev: Count,
    ino: Count,
  }),
  setid_sweep: z.strictObject({
    roots: z.array(z.string()),
    stripped: Count,
    skipped: z.array(z.strictObject({ root: z.string(), path: z.string(), reason: z.string() })),
    entries: Count,
    complete: z.boolean(),
    stoppedBy: z.enum(['entry-cap', 'time-cap', 'aborted']).optional(),
    setidBeforeRun: Count,
    ms: Milliseconds,
  }),
} as const;
