// What a run says about itself when it ends, for both kinds of run: the draft's patch as
// `--json` and the summary line give it. The counts are patch.json's; `changes` is what
// `cfh runs apply` would apply.
import type { PatchSummary } from '../draft/draft-workspace.js';

/** Past this many paths `--json` lists no more (patch.json lists them all). */
const MAX_LISTED_FILES = 1000;

export interface PatchReport {
  /** Changes `cfh runs apply` applies (held-back ones not counted). */
  readonly changes: number;
  /**
   * Class 9: changes at paths a host tool obeys (src/host-obeyed.ts), which `cfh runs apply`
   * writes only when each is named (`--host-obeyed PATH`); their paths, each once.
   */
  readonly heldBack: readonly string[];
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
    readonly heldBack?: true;
  }[];
  /** Paths left out of `files` past its bound. */
  readonly filesOmitted: number;
}

export function patchReport(patch: PatchSummary | undefined): PatchReport | null {
  if (patch === undefined) return null;
  const { summary } = patch;
  const heldBack = new Set(patch.heldBack);
  const held = (f: { path: string; applicable: boolean }): boolean =>
    f.applicable && heldBack.has(f.path);
  return {
    changes: patch.files.filter((f) => f.applicable && !held(f)).length,
    heldBack: patch.heldBack,
    added: summary.added,
    modified: summary.modified,
    removed: summary.removed,
    mode: summary.mode,
    notApplied: summary.notApplied,
    file: patch.file,
    diff: patch.diff,
    files: patch.files
      .slice(0, MAX_LISTED_FILES)
      .map((f) => (held(f) ? { ...f, heldBack: true as const } : f)),
    filesOmitted: Math.max(0, patch.files.length - MAX_LISTED_FILES),
  };
}
