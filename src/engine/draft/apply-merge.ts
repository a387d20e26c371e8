// `cfh runs apply --3way` (governance extension, "Draft vs commit policy"): where the host
// changed a file the run also changed, the run's change is merged into the host's version
// instead of refused, as `git apply --3way` would. Planned before anything is approved or
// written, all or nothing: every such file merges cleanly, or the apply is refused with
// each conflicting hunk and nothing is written. A merge only rewrites a change the patch
// already makes (a file modified, or re-moded): what the host added, removed or turned into
// something else, a link on the way, a directory: all stay refusals, as without --3way.
// Each input is digest-checked: the baseline and the run's contents are the blobs the chain
// recorded, and the host's is hashed as read; the rewritten change names the host's digest
// as its `before`, so the commit's own check (host-check.ts) refuses a host that changed
// again after the merge was planned.
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { WorkspaceError } from '../../errors.js';
import type { Authority } from '../../workspace/authority.js';
import type { HostConflict } from '../../workspace/host-check.js';
import { conflictLines, merge3 } from '../../workspace/merge3.js';
import type { PatchChange } from '../../workspace/patch.js';
import { MAX_TEXT_BYTES, isBinary, quote } from '../../workspace/patch-text.js';
import { isExecutable } from '../../workspace/tree.js';
import { openSeenFile } from '../../workspace/walk.js';

/** Host conflicts a merge can resolve: the file is still a file, its contents or bit moved. */
const MERGEABLE = new Set([
  'contents changed on the host since the run',
  'executable bit changed on the host since the run',
]);

/** Whether `--3way` could resolve a conflict of this kind (said as a hint without it). */
export function mergeable(conflict: HostConflict): boolean {
  return MERGEABLE.has(conflict.reason);
}

export interface MergedFile {
  readonly path: string;
  readonly hostSha256: string;
  readonly mergedSha256: string;
}

export interface MergePlan {
  /** The applicable changes with each merged one rewritten against the host's version. */
  readonly changes: readonly PatchChange[];
  /** The merged contents by digest, handed to the commit in place of a blob. */
  readonly contents: ReadonlyMap<string, Buffer>;
  readonly merged: readonly MergedFile[];
}

export interface MergeInput {
  readonly runId: string;
  readonly root: string;
  readonly blobsDir: string;
  readonly applicable: readonly PatchChange[];
  readonly conflicts: readonly HostConflict[];
  /** Digests of the blobs the chain recorded. */
  readonly recorded: ReadonlySet<string>;
  readonly authority: Authority;
}

/** Lines of conflict text shown at most per apply (the rest are counted). */
const MAX_SHOWN_LINES = 400;

export async function planMerge(input: MergeInput): Promise<MergePlan> {
  const byPath = new Map(input.applicable.map((c) => [c.path, c]));
  const refused: string[] = [];
  const shown: string[] = [];
  const contents = new Map<string, Buffer>();
  const merged: MergedFile[] = [];
  const rewritten = new Map<string, PatchChange | null>();
  for (const conflict of input.conflicts) {
    const c = byPath.get(conflict.path);
    const fileChange =
      c !== undefined &&
      (c.kind === 'modified' || c.kind === 'mode') &&
      c.before?.type === 'file' &&
      c.after?.type === 'file';
    if (!fileChange || !MERGEABLE.has(conflict.reason)) {
      refused.push(`${quote(conflict.path)}: ${conflict.reason} (not a file --3way can merge)`);
      continue;
    }
    const outcome = await mergeOne(c, input);
    if ('problem' in outcome) {
      refused.push(`${quote(c.path)}: ${outcome.problem}`);
      if (outcome.lines !== undefined) shown.push(`--- ${quote(c.path)}`, ...outcome.lines);
      continue;
    }
    rewritten.set(c.path, outcome.change);
    if (outcome.content !== undefined && outcome.change !== null) {
      contents.set(outcome.change.after?.sha256 ?? '', outcome.content);
      merged.push({
        path: c.path,
        hostSha256: outcome.change.before?.sha256 ?? '',
        mergedSha256: outcome.change.after?.sha256 ?? '',
      });
    }
  }
  if (refused.length > 0) {
    const cut = shown.length > MAX_SHOWN_LINES;
    throw new WorkspaceError(
      'merge_conflict',
      `--3way: ${refused.length} file(s) the host changed since the run do not merge: ${refused.slice(0, 10).join('; ')}${refused.length > 10 ? ` (and ${refused.length - 10} more)` : ''}; nothing was applied`,
      {
        refused,
        hunks: cut
          ? [...shown.slice(0, MAX_SHOWN_LINES), `… ${shown.length - MAX_SHOWN_LINES} more lines`]
          : shown,
      },
    );
  }
  const changes = input.applicable.flatMap((c) => {
    const r = rewritten.get(c.path);
    return r === undefined ? [c] : r === null ? [] : [r];
  });
  return { changes, contents, merged };
}

type OneMerge =
  | { readonly change: PatchChange | null; readonly content?: Buffer }
  | { readonly problem: string; readonly lines?: readonly string[] };

async function mergeOne(c: PatchChange, input: MergeInput): Promise<OneMerge> {
  const before = c.before;
  const after = c.after;
  if (before === null || after === null) return { problem: 'not a file on both sides' };
  const host = await input.authority
    .asWriter(() => readHost(path.join(input.root, c.path)))
    .catch((e: unknown) => ({ problem: `cannot read it on the host: ${String(e)}` }));
  if ('problem' in host) return host;
  const runChangedBit = isExecutable(before.mode) !== isExecutable(after.mode);
  const executable = runChangedBit ? isExecutable(after.mode) : isExecutable(host.mode);
  let text: Buffer;
  if (c.kind === 'mode' || host.sha256 === after.sha256) text = host.data;
  else if (host.sha256 === before.sha256) {
    const run = await readBlob(input, after.sha256 ?? '');
    if ('problem' in run) return run;
    text = run.data;
  } else {
    if (!input.recorded.has(before.sha256 ?? ''))
      return {
        problem:
          'its baseline contents were not kept (changed on the host during the run, or past the bound), so there is nothing to merge against',
      };
    const base = await readBlob(input, before.sha256 ?? '');
    if ('problem' in base) return base;
    const run = await readBlob(input, after.sha256 ?? '');
    if ('problem' in run) return run;
    if ([base.data, host.data, run.data].some((d) => isBinary(d)))
      return { problem: 'binary (or larger than a text file cfh merges): not merged' };
    const result = merge3(
      base.data.toString('utf8'),
      host.data.toString('utf8'),
      run.data.toString('utf8'),
    );
    if (!result.ok)
      return {
        problem: `${result.conflicts.length} conflicting hunk(s)`,
        lines: result.conflicts.flatMap((h) => conflictLines(h, input.runId)),
      };
    text = Buffer.from(result.text, 'utf8');
  }
  const mergedSha = createHash('sha256').update(text).digest('hex');
  const hostSide = {
    type: 'file' as const,
    mode: host.mode,
    size: host.data.length,
    sha256: host.sha256,
  };
  const mode = executable ? host.mode | 0o100 : host.mode & ~0o111;
  // Nothing left to do: the host already holds what the merge gives.
  if (mergedSha === host.sha256 && isExecutable(mode) === isExecutable(host.mode))
    return { change: null };
  const change: PatchChange = {
    ...c,
    kind: mergedSha === host.sha256 ? 'mode' : 'modified',
    before: hostSide,
    after: { type: 'file', mode, size: text.length, sha256: mergedSha },
    note: 'merged with the host changes (--3way)',
  };
  return mergedSha === host.sha256 ? { change } : { change, content: text };
}

interface Read {
  readonly data: Buffer;
  readonly sha256: string;
  readonly mode: number;
}

/** At most MAX_TEXT_BYTES + 1 bytes: past that a file is not merged (binary or too large). */
async function readBounded(handle: FileHandle): Promise<Buffer> {
  const buffer = Buffer.alloc(MAX_TEXT_BYTES + 1);
  let at = 0;
  while (at < buffer.length) {
    const { bytesRead } = await handle.read(buffer, at, buffer.length - at, at);
    if (bytesRead === 0) break;
    at += bytesRead;
  }
  return buffer.subarray(0, at);
}

async function readHost(abs: string): Promise<Read | { problem: string }> {
  const stats = await lstat(abs, { bigint: true });
  if (!stats.isFile()) return { problem: 'no longer a regular file on the host' };
  const handle = await openSeenFile(abs, stats);
  try {
    const data = await readBounded(handle);
    if (data.length > MAX_TEXT_BYTES) return { problem: 'larger than a text file cfh merges' };
    return {
      data,
      sha256: createHash('sha256').update(data).digest('hex'),
      mode: Number(stats.mode & 0o7777n),
    };
  } finally {
    await handle.close();
  }
}

/** A blob the chain recorded, read through no link and checked against its name. */
async function readBlob(
  input: MergeInput,
  sha256: string,
): Promise<{ data: Buffer } | { problem: string }> {
  if (!input.recorded.has(sha256)) return { problem: `contents ${sha256} not kept by the run` };
  const handle = await input.authority.asSelf(() =>
    open(path.join(input.blobsDir, sha256), constants.O_RDONLY | constants.O_NOFOLLOW),
  );
  try {
    const data = await readBounded(handle);
    if (data.length > MAX_TEXT_BYTES) return { problem: 'larger than a text file cfh merges' };
    if (createHash('sha256').update(data).digest('hex') !== sha256)
      return { problem: `the run's copy ${sha256} does not match its digest` };
    return { data };
  } finally {
    await handle.close();
  }
}
