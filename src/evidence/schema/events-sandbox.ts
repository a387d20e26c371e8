// Events of the host-side end walk of a run's rw mounts: the set-id sweep (AH-CONT-2) and
// the host-obeyed paths it found (class 9).
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
    // Directories the walk could not open or list (absent from evidence of an older cfh).
    unreached: Count.optional(),
    stoppedBy: z.enum(['entry-cap', 'time-cap', 'aborted']).optional(),
    setidBeforeRun: Count,
    ms: Milliseconds,
  }),
  // Class 9: host-obeyed paths (src/host-obeyed.ts) the run created or changed in its host
  // rw mounts where nothing held them read-only, found by the same end walk.
  host_obeyed_changed: z.strictObject({
    mode: z.enum(['ro', 'rw']),
    paths: z.array(
      z.strictObject({
        root: z.string(),
        path: z.string(),
        type: z.enum(['file', 'directory', 'symlink', 'other']),
      }),
    ),
    omitted: Count,
    entries: Count,
    complete: z.boolean(),
  }),
} as const;
