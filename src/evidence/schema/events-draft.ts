// Events of draft mode (the governance extension's draft/commit split): the run works on a
// copy of the workspace, its changes become a patch in the chain, and `cfh runs apply`
// commits it later, appending `applied` after run_finished: the only event a finished run
// may gain (src/evidence/run-amend.ts). Nested records are left open (looseObject) for the
// draft code to tighten.
import { z } from 'zod';
import { Count, IsoTime, Milliseconds, Sha256Hex } from './common.js';

const Summary = z.looseObject({
  added: Count,
  modified: Count,
  removed: Count,
  mode: Count,
  notApplied: Count,
});

export const draftEvents = {
  draft_prepared: z.looseObject({
    hostWorkspace: z.string(),
    dir: z.string(),
    source: z.string(),
    baseline: z.looseObject({ file: z.string(), sha256: Sha256Hex }),
    /** The copy's bound (bytes of contents) and the patch's (new contents kept). */
    bounds: z
      .looseObject({
        copyMaxBytes: Count,
        patchMaxBytes: Count,
        /** The same bound held during the run: a walk every max(minIntervalMs, costFactor × last walk). */
        live: z
          .strictObject({ maxBytes: Count, minIntervalMs: Count, costFactor: Count })
          .optional(),
      })
      .optional(),
    ms: Milliseconds,
  }),
  patch_written: z.looseObject({
    file: z.string(),
    sha256: Sha256Hex,
    summary: Summary,
    unsupported: Count,
    blobs: Count,
    /** Baseline contents kept of modified and removed files (draft-baseline.ts). */
    baselines: z.strictObject({ kept: Count, bytes: Count, overBound: Count }).optional(),
    /** The end walk's budgets (read, in bytes and time; text inlined) and what was used. */
    bounds: z
      .looseObject({
        readMaxBytes: Count,
        readMaxMs: Count,
        readBytes: Count,
        diffMaxBytes: Count,
        diffInlinedBytes: Count,
      })
      .optional(),
    reached: z.looseObject({ read: z.boolean(), diff: z.boolean() }).optional(),
    /** Set when the walk stopped reading: the patch is listed, never applied. */
    incomplete: z.string().optional(),
    ms: Milliseconds,
  }),
  draft_discarded: z.looseObject({ dir: z.string(), ms: Milliseconds }),
  /** The patch committed to the host, by whom, after the run (`cfh runs apply`). */
  applied: z.looseObject({
    /** The person at the host who applied it, and where they said yes. */
    approver: z.looseObject({
      user: z.string(),
      uid: z.number().int(),
      host: z.string(),
      surface: z.enum(['cli-terminal-prompt', 'cli-flag-yes']),
    }),
    approvedAt: IsoTime,
    hostWorkspace: z.string(),
    patch: z.strictObject({ file: z.string(), sha256: Sha256Hex }),
    applied: Summary,
    paths: z.array(z.string()),
    /** `runs apply --3way`: files written as the merge of the host's and the run's changes. */
    merged: z
      .array(z.strictObject({ path: z.string(), hostSha256: Sha256Hex, mergedSha256: Sha256Hex }))
      .optional(),
    /** Class 9: changes at paths a host tool obeys that this apply left out, not named. */
    heldBack: z.array(z.string()).optional(),
    /** `--host-obeyed PATH`: what the operator named, so that those were written. */
    named: z.array(z.string()).optional(),
  }),
  /**
   * A draft session's own tools on its surface (`cfh mcp`: runs_diff, runs_apply), cfh's
   * code on the host: advertised apart from the profile's sandbox tools, as host tools are.
   */
  draft_tools_ready: z.strictObject({ tools: z.array(z.string()) }),
  /**
   * A session's client applied the draft's changes to the host while the run went on
   * (`runs_apply` over `cfh mcp`): the call that did it (its approval is in its decision),
   * the changes it named, and the baseline later diffs and the run's patch are taken from.
   */
  draft_applied: z.looseObject({
    callId: z.string(),
    hostWorkspace: z.string(),
    patch: z.strictObject({ sha256: Sha256Hex }),
    applied: Summary,
    paths: z.array(z.string()),
    baseline: z.strictObject({ file: z.string(), sha256: Sha256Hex }),
    /** Class 9: changes at paths a host tool obeys, never applied by a session's client. */
    heldBack: z.array(z.string()).optional(),
    /** The run's containers held still (paused) while the copy was read and applied. */
    frozen: Count,
    ms: Milliseconds,
  }),
} as const;

/** Event types a finished run may gain after run_finished. */
export const AFTER_TERMINAL: readonly string[] = ['applied'];
