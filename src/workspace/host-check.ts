// Before a patch is applied: is the host still as the run found it, where the patch
// touches it? Every file the patch modifies, removes or re-modes must have the contents
// and executable bit the baseline recorded; every path it adds must be absent; every
// directory on the way to a touched path must be a real directory (never a symlink: a
// host link there would carry the write out of the workspace); a directory the patch
// removes may hold only what the patch removes too. What was seen is kept (device, inode,
// size, times) so the commit can tell if a file changed again after this check.
import type { BigIntStats } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { WorkspaceError } from '../errors.js';
import { isExecutable } from './tree.js';
import type { PatchChange } from './patch.js';
import { hashFile, isCode } from './walk.js';

export interface HostConflict {
  readonly path: string;
  readonly reason: string;
}

/** What the check saw of a host entry the patch replaces or removes. */
export interface Seen {
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

export interface HostCheck {
  readonly conflicts: readonly HostConflict[];
  /** By path: the host entries the patch replaces or removes, as seen. */
  readonly seen: ReadonlyMap<string, Seen>;
}

export function seenOf(s: BigIntStats): Seen {
  return {
    dev: s.dev,
    ino: s.ino,
    size: s.size,
    mtimeNs: s.mtimeNs,
    ctimeNs: s.ctimeNs,
    mode: Number(s.mode & 0o7777n),
    uid: Number(s.uid),
    gid: Number(s.gid),
  };
}

export function sameEntry(a: Seen, b: Seen): boolean {
  return (
    a.dev === b.dev &&
    a.ino === b.ino &&
    a.size === b.size &&
    a.mtimeNs === b.mtimeNs &&
    a.ctimeNs === b.ctimeNs
  );
}

export async function checkHost(
  root: string,
  changes: readonly PatchChange[],
  signal: AbortSignal,
): Promise<HostCheck> {
  const applied = changes.filter((c) => c.applicable);
  const conflicts: HostConflict[] = [];
  const seen = new Map<string, Seen>();
  const addedDirs = new Set(
    applied.filter((c) => c.kind === 'added' && c.after?.type === 'directory').map((c) => c.path),
  );
  const removed = new Set(applied.filter((c) => c.kind === 'removed').map((c) => c.path));
  const ancestorsOk = new Map<string, string | undefined>();
  for (const c of applied) {
    signal.throwIfAborted();
    const parent = await checkAncestors(root, c.path, addedDirs, ancestorsOk);
    if (parent !== undefined) {
      conflicts.push({ path: c.path, reason: parent });
      continue;
    }
    const abs = path.join(root, c.path);
    const now = await lstatOrUndefined(abs);
    if (c.before === null) {
      // A type change removes the old entry at this path first; that removal is checked.
      if (removed.has(c.path)) continue;
      if (now !== undefined) conflicts.push({ path: c.path, reason: 'exists on the host now' });
      continue;
    }
    if (now === undefined) {
      conflicts.push({ path: c.path, reason: 'gone from the host' });
      continue;
    }
    if (c.before.type === 'directory') {
      if (!now.isDirectory()) conflicts.push({ path: c.path, reason: 'no longer a directory' });
      else {
        const extra = await unexpectedChildren(abs, c.path, removed);
        if (extra !== undefined)
          conflicts.push({ path: c.path, reason: `holds '${extra}', which the run never saw` });
        else seen.set(c.path, seenOf(now));
      }
      continue;
    }
    if (!now.isFile()) {
      conflicts.push({ path: c.path, reason: 'no longer a regular file' });
      continue;
    }
    const { sha256 } = await hashFile(abs, now);
    if (sha256 !== c.before.sha256)
      conflicts.push({ path: c.path, reason: 'contents changed on the host since the run' });
    else if (isExecutable(Number(now.mode)) !== isExecutable(c.before.mode))
      conflicts.push({ path: c.path, reason: 'executable bit changed on the host since the run' });
    else seen.set(c.path, seenOf(now));
  }
  return { conflicts, seen };
}

/** The first reason a directory on the way to `p` is not a real one; undefined: all are. */
async function checkAncestors(
  root: string,
  p: string,
  addedDirs: ReadonlySet<string>,
  memo: Map<string, string | undefined>,
): Promise<string | undefined> {
  const parts = p.split('/');
  for (let i = 1; i < parts.length; i += 1) {
    const prefix = parts.slice(0, i).join('/');
    // Made by the patch itself: its own check wants it absent, and so is all below it.
    if (addedDirs.has(prefix)) return undefined;
    if (!memo.has(prefix)) {
      const s = await lstatOrUndefined(path.join(root, prefix));
      memo.set(
        prefix,
        s === undefined
          ? `directory '${prefix}' is gone from the host`
          : s.isSymbolicLink()
            ? `'${prefix}' is a symlink on the host`
            : s.isDirectory()
              ? undefined
              : `'${prefix}' is not a directory on the host`,
      );
    }
    const reason = memo.get(prefix);
    if (reason !== undefined) return reason;
  }
  return undefined;
}

async function unexpectedChildren(
  abs: string,
  rel: string,
  removed: ReadonlySet<string>,
): Promise<string | undefined> {
  for (const name of await readdir(abs)) {
    const child = `${rel}/${name}`;
    if (!removed.has(child)) return child;
  }
  return undefined;
}

/** The refusal when the host differs from what the patch expects: nothing is applied. */
export function hostChangedError(
  conflicts: readonly HostConflict[],
  hint?: string,
): WorkspaceError {
  const shown = conflicts
    .slice(0, 10)
    .map((c) => `${c.path}: ${c.reason}`)
    .join('; ');
  const more = conflicts.length > 10 ? ` (and ${conflicts.length - 10} more)` : '';
  return new WorkspaceError(
    'host_changed',
    `the host workspace changed since the run where the patch touches it: ${shown}${more}; nothing was applied${hint === undefined ? '' : `; ${hint}`}`,
    { conflicts },
  );
}

export async function lstatOrUndefined(abs: string): Promise<BigIntStats | undefined> {
  try {
    return await lstat(abs, { bigint: true });
  } catch (error) {
    if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return undefined;
    throw error;
  }
}
