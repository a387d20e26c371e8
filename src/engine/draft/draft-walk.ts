// Reading a draft copy against its baseline (governance extension, "Draft vs commit
// policy"): the walk of the copy, the changes, the new contents kept in the run directory
// (patch/blobs, content-addressed, in the hash chain) and the diff text. One walk for the
// patch a run leaves at its end (draft-workspace.ts) and for a session's live diff and apply
// (draft-live.ts), so both list, bound and show a change alike.
//
// What the sandbox can make cfh do here it does not pay for (hard links, sparse files,
// many names), so the walk has one budget (endWalkBudget), in bytes read and in time, and
// the run's cancellation ends it too: each inode is read once, a file with holes
// (allocated < size) is listed by size and never read, and once the budget is spent nothing
// more is read: the rest is listed by size and the walk is marked incomplete, which an
// apply refuses whole.
import { lstat, readFile } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import path from 'node:path';
import { WorkspaceError } from '../../errors.js';
import { RUN_FILES, type RunDirectory } from '../../evidence/run-directory.js';
import type { Authority } from '../../workspace/authority.js';
import {
  diffTrees,
  neededBlobs,
  type BaselineDocument,
  type PatchChange,
} from '../../workspace/patch.js';
import {
  MAX_DIFF_BYTES,
  MAX_TEXT_BYTES,
  quote,
  renderPatch,
  type ContentReader,
} from '../../workspace/patch-text.js';
import type { SkippedEntry, TreeEntry } from '../../workspace/tree.js';
import { hashHandle, inodeKey, listTree, openSeenFile } from '../../workspace/walk.js';

/** New contents larger than this (a file the sandbox grew or made) are never read. */
export const MAX_READ_BYTES = 256 * 1024 * 1024;

export interface DraftWalkInput {
  /** The copy (what the sandbox wrote). */
  readonly source: string;
  readonly baseline: BaselineDocument;
  /** What the host tree cost to copy: the read budget grows with it. */
  readonly baselineBytes: number;
  /** With whose authority the copy and the host tree are read. */
  readonly as: Authority;
  /** The most bytes of new contents kept; past it nothing is kept (`patch_too_large`). */
  readonly patchMaxBytes: number;
  readonly dir: RunDirectory;
  /** Ends the reading early (the walk is then incomplete), never the listing. */
  readonly signal: AbortSignal;
}

export interface DraftWalk {
  /** The changes, rendered (binary and unavailable notes set). */
  readonly changes: readonly PatchChange[];
  readonly text: string;
  readonly inline: { readonly maxBytes: number; readonly bytes: number; readonly reached: boolean };
  /** The copy as walked: what a rebased baseline takes its entries from. */
  readonly entries: readonly TreeEntry[];
  readonly unsupported: readonly SkippedEntry[];
  readonly incomplete: string | undefined;
  /** The sha256 of every new content kept under patch/blobs. */
  readonly stored: ReadonlySet<string>;
  /** Bytes of new contents the changes need. */
  readonly needed: number;
  readonly budget: { readonly bytes: number; readonly ms: number };
  readonly readBytes: number;
}

export async function walkDraft(input: DraftWalkInput): Promise<DraftWalk> {
  const { dir, as, signal } = input;
  const t0 = performance.now();
  const budget = endWalkBudget(input.baselineBytes);
  const sizes = new Map(input.baseline.entries.map((e) => [e.path, e.size]));
  let read = 0;
  let incomplete: string | undefined;
  const byInode = new Map<string, Promise<{ sha256: string; size: number }>>();
  const mayHash = (p: string, size: number, stats: BigIntStats): boolean => {
    if (byInode.has(inodeKey(stats))) return true;
    // Holes cost the sandbox no disk: such a file is never read (a copy is made dense).
    if (Number(stats.blocks) * 512 < size) return false;
    if (size > MAX_READ_BYTES && sizes.get(p) !== size) return false;
    if (incomplete === undefined) {
      if (signal.aborted) incomplete = 'the run was cancelled while its draft was read';
      else if (performance.now() - t0 > budget.ms)
        incomplete = `reading the draft took more than ${String(budget.ms)} ms`;
      else if (read + size > budget.bytes)
        incomplete = `the draft's files hold more than ${String(budget.bytes)} bytes to read`;
    }
    if (incomplete !== undefined) return false;
    read += size;
    return true;
  };
  // The walk itself (names, lstat) is bounded by MAX_TREE_ENTRIES; it is not cut short,
  // so the changes still list every path the sandbox touched.
  const end = await as.asWriter(() =>
    listTree(input.source, {
      signal: new AbortController().signal,
      repairPermissions: true,
      mayHash,
      byInode,
    }),
  );
  const changes = diffTrees(input.baseline.entries, end.entries);
  // The whole patch or none: past its bound nothing is kept, so no part of a run's
  // changes is ever offered for apply as if it were all of them.
  const limit = input.patchMaxBytes;
  const needed = new Map<string, number>();
  for (const c of changes) for (const sha of neededBlobs([c])) needed.set(sha, c.after?.size ?? 0);
  const total = [...needed.values()].reduce((a, b) => a + b, 0);
  if (total > limit) {
    throw new WorkspaceError(
      'patch_too_large',
      `workspace mode draft: the patch's new contents are ${String(total)} bytes, more than ${String(limit)}; no patch is kept (CFH_DRAFT_PATCH_MAX_BYTES bounds it)`,
      { bytes: total, maxBytes: limit },
    );
  }
  const stored = new Set<string>();
  for (const c of changes) {
    const sha = c.after?.sha256;
    if (sha === undefined || stored.has(sha) || !needed.has(sha)) continue;
    await storeBlob(input, c);
    stored.add(sha);
  }
  const reader = draftReader(input.baseline.hostWorkspace, dir, as);
  const rendered = await renderPatch(changes, reader, Math.min(MAX_DIFF_BYTES, limit));
  return {
    changes: rendered.changes,
    text: rendered.text,
    inline: rendered.inline,
    entries: end.entries,
    unsupported: end.skipped,
    incomplete,
    stored,
    needed: total,
    budget,
    readBytes: read,
  };
}

async function storeBlob(input: DraftWalkInput, c: PatchChange): Promise<void> {
  const abs = path.join(input.source, c.path);
  // Opened as the copy's writer, kept in the run directory as cfh.
  const handle = await input.as.asWriter(async () =>
    openSeenFile(abs, await lstat(abs, { bigint: true }), { repairPermissions: true }),
  );
  try {
    const blob = await input.dir.storeBlob(handle);
    if (blob.sha256 !== c.after?.sha256) {
      throw new WorkspaceError(
        'draft_changed',
        `${c.path} changed in the draft while its patch was written`,
        { path: c.path },
      );
    }
  } finally {
    await handle.close();
  }
}

/** Old contents from the host (only if still what the baseline recorded), new from the run. */
function draftReader(host: string, dir: RunDirectory, as: Authority): ContentReader {
  return async (c, side) => {
    const s = side === 'before' ? c.before : c.after;
    if (s === null) return Buffer.alloc(0);
    if (s.sha256 === undefined) return { unavailable: `${quote(c.path)}: ${c.note ?? 'not read'}` };
    if ((s.size ?? 0) > MAX_TEXT_BYTES) return { binary: true };
    if (side === 'after') {
      return readFile(dir.path(`${RUN_FILES.blobs}/${s.sha256}`)).catch(() => ({
        unavailable: `${quote(c.path)}: ${c.note ?? 'new contents not kept'}`,
      }));
    }
    const abs = path.join(host, c.path);
    try {
      const handle = await as.asWriter(async () =>
        openSeenFile(abs, await lstat(abs, { bigint: true })),
      );
      try {
        const { sha256 } = await hashHandle(handle);
        if (sha256 === s.sha256) return await handle.readFile();
      } finally {
        await handle.close();
      }
    } catch {
      // gone or unreadable: said below
    }
    return {
      unavailable: `${quote(c.path)} changed on the host during the run; its old text is not shown`,
    };
  };
}

/**
 * The walk's budget: what the host tree already cost to copy, plus one file at the
 * per-file bound, and a time that grows with it (at a slow 32 MiB/s, never under a minute).
 */
export function endWalkBudget(baselineBytes: number): { bytes: number; ms: number } {
  const bytes = baselineBytes + MAX_READ_BYTES;
  return { bytes, ms: Math.max(60_000, Math.ceil(bytes / (32 * 1024))) };
}
