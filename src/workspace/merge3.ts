// A 3-way line merge for `cfh runs apply --3way` (governance extension, "Draft vs commit
// policy": the commit changes the host as approved, never more): the run changed a file
// from its baseline, the host changed it too; where the two changed different lines both
// are kept, where they changed the same lines (or lines next to each other, as git does)
// the file is a conflict and nothing is merged. Written here rather than taken from a
// library: it is fifty lines over the Myers diff cfh already has (unified-diff.ts), cfh does
// not require git on the host, and a merge that decides what reaches the host is kept in
// code this repository reviews and tests. Pure: texts in, merged text or conflicts out.
//
// The algorithm is diff3's (Khanna, Kuber, Pierce, "A formal investigation of diff3"):
// align the baseline with each side, walk the lines all three share in the same order
// (stable), and between two stable lines take the one side that changed, or both when
// they made the same change, else report a conflict. Lines are compared with their line
// feed, so a last line without one is a line of its own; the merged text is byte-exact.
import { matchedLines } from './unified-diff.js';

export interface ConflictHunk {
  /** 1-based first line of the hunk in each text (the line after, for an empty range). */
  readonly baseLine: number;
  readonly hostLine: number;
  readonly runLine: number;
  readonly base: readonly string[];
  readonly host: readonly string[];
  readonly run: readonly string[];
}

export type MergeResult =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly conflicts: readonly ConflictHunk[] };

/** The lines of `text`, each with its line feed; a last line without one as it is. */
export function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

export function merge3(base: string, host: string, run: string): MergeResult {
  const o = splitLines(base);
  const a = splitLines(host);
  const b = splitLines(run);
  // Baseline line → its line in each side, where the alignment keeps it.
  const inA = new Map(matchedLines(o, a).map(([i, j]) => [i, j]));
  const inB = new Map(matchedLines(o, b).map(([i, j]) => [i, j]));
  const out: string[] = [];
  const conflicts: ConflictHunk[] = [];
  let io = 0;
  let ia = 0;
  let ib = 0;
  while (io < o.length || ia < a.length || ib < b.length) {
    if (io < o.length && inA.get(io) === ia && inB.get(io) === ib) {
      out.push(o[io] ?? '');
      io += 1;
      ia += 1;
      ib += 1;
      continue;
    }
    // The next baseline line both sides kept: the end of this unstable chunk.
    let end = io;
    while (end < o.length && !(inA.has(end) && inB.has(end))) end += 1;
    const endA = end < o.length ? (inA.get(end) ?? a.length) : a.length;
    const endB = end < o.length ? (inB.get(end) ?? b.length) : b.length;
    const chunkO = o.slice(io, end);
    const chunkA = a.slice(ia, endA);
    const chunkB = b.slice(ib, endB);
    if (same(chunkA, chunkO)) out.push(...chunkB);
    else if (same(chunkB, chunkO) || same(chunkA, chunkB)) out.push(...chunkA);
    else
      conflicts.push({
        baseLine: io + 1,
        hostLine: ia + 1,
        runLine: ib + 1,
        base: chunkO,
        host: chunkA,
        run: chunkB,
      });
    io = end;
    ia = endA;
    ib = endB;
  }
  return conflicts.length === 0 ? { ok: true, text: out.join('') } : { ok: false, conflicts };
}

function same(x: readonly string[], y: readonly string[]): boolean {
  return x.length === y.length && x.every((line, i) => line === y[i]);
}

/** A conflict as diff3 shows one (`git merge-file --diff3`), one line an entry, no line feeds. */
export function conflictLines(hunk: ConflictHunk, runId: string): string[] {
  const strip = (lines: readonly string[]): string[] =>
    lines.map((l) => (l.endsWith('\n') ? l.slice(0, -1) : `${l} (no newline at end)`));
  return [
    `<<<<<<< host (line ${hunk.hostLine})`,
    ...strip(hunk.host),
    `||||||| baseline (line ${hunk.baseLine})`,
    ...strip(hunk.base),
    '=======',
    ...strip(hunk.run),
    `>>>>>>> run ${runId} (line ${hunk.runLine})`,
  ];
}
