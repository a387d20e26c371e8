// What a run says about itself when it ends, for both kinds of run: the draft's patch as
// `--json` and the summary line give it. The counts are patch.json's; `changes` is what
// `cfh runs apply` would apply.
import type { PatchSummary } from './draft-workspace.js';

/** Past this many paths `--json` lists no more (patch.json lists them all). */
const MAX_LISTED_FILES = 1000;

export interface PatchReport {
  /** Changes `cfh runs apply` applies. */
  readonly changes: number;
  readonly added: number;
  readonly modified: number;
  readonly removed: number;
  readonly mode: number;
  /** Listed in the patch, never applied (a symbolic link, a special file). */
  readonly notApplied: number;
  /** Relative to the run directory. */
  readonly file: string;
  readonly diff: string;
  readonly files: readonly {
    readonly path: string;
    readonly kind: string;
    readonly applicable: boolean;
  }[];
  /** Paths left out of `files` past its bound. */
  readonly filesOmitted: number;
}

export function patchReport(patch: PatchSummary | undefined): PatchReport | null {
  if (patch === undefined) return null;
  const { summary } = patch;
  return {
    changes: patch.files.filter((f) => f.applicable).length,
    added: summary.added,
    modified: summary.modified,
    removed: summary.removed,
    mode: summary.mode,
    notApplied: summary.notApplied,
    file: patch.file,
    diff: patch.diff,
    files: patch.files.slice(0, MAX_LISTED_FILES),
    filesOmitted: Math.max(0, patch.files.length - MAX_LISTED_FILES),
  };
}
