// The draft copy of a host workspace (governance extension, "Draft vs commit policy"): the
// sandbox works on this copy and the host tree is only ever read. Each file is read once,
// hashed as it is copied, so the baseline records exactly the bytes the sandbox started
// from. Symlinks are copied as links (never followed), set-id and sticky bits are dropped,
// sockets, FIFOs and devices are not copied (listed as skipped), and everything the copy
// holds is given to the sandbox user.
import { constants, type BigIntStats } from 'node:fs';
import {
  chmod,
  chown,
  lchown,
  lstat,
  lutimes,
  mkdir,
  open,
  readlink,
  symlink,
  utimes,
} from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { WorkspaceError } from '../errors.js';
import type { SkippedEntry, TreeEntry, TreeListing } from './tree.js';
import { isCode, openSeenFile, readBuffer, readableBy, sortEntries, visitTree } from './walk.js';

export interface CopyOptions {
  readonly signal: AbortSignal;
  /**
   * Owner of everything copied (cfh runs as root); undefined: cfh's own user. The copy
   * holds only what that owner could read on the host: nothing else is copied (`unreadable`).
   */
  readonly owner?: { readonly uid: number; readonly gid: number } | undefined;
  /**
   * How many bytes of file contents the copy may hold: past it the copy stops with
   * `draft_too_large` (a workspace, or a sparse file in it, must not fill the host's disk).
   */
  readonly maxBytes?: number;
}

export interface CopyResult extends TreeListing {
  readonly bytes: number;
  /** Permission bits of the source root. */
  readonly rootMode: number;
}

/** Copies the tree below `source` into `dest`, an existing empty directory. */
export async function copyTree(
  source: string,
  dest: string,
  options: CopyOptions,
): Promise<CopyResult> {
  const entries: TreeEntry[] = [];
  const skipped: SkippedEntry[] = [];
  const directories: { abs: string; stats: BigIntStats }[] = [];
  let bytes = 0;
  const owner = options.owner;
  await visitTree(
    source,
    {
      signal: options.signal,
      ...(owner === undefined ? {} : { mayRead: (s: BigIntStats) => readableBy(owner, s) }),
    },
    async ({ path: rel, abs, stats }) => {
      const target = path.join(dest, rel);
      const mode = Number(stats.mode & 0o7777n);
      if (stats.isDirectory()) {
        // Writable by cfh while it fills it; its own mode is set once it is full.
        await mkdir(target, { mode: 0o700 });
        directories.push({ abs: target, stats });
        entries.push({ path: rel, type: 'directory', mode });
      } else if (stats.isSymbolicLink()) {
        const link = await readlink(abs);
        await symlink(link, target);
        if (options.owner !== undefined) await lchown(target, options.owner.uid, options.owner.gid);
        await lutimes(target, seconds(stats.atimeNs), seconds(stats.mtimeNs));
        entries.push({ path: rel, type: 'symlink', mode, target: link });
      } else {
        let copied: { sha256: string; size: number };
        // Reserved before the copy (files are copied side by side), settled after it.
        const size = Number(stats.size);
        const max = options.maxBytes ?? Number.MAX_SAFE_INTEGER;
        if (bytes + size > max) throw tooLarge(rel, max);
        bytes += size;
        try {
          copied = await copyFile(abs, stats, target, options, max - bytes + size, rel);
        } catch (error) {
          bytes -= size;
          if (!isCode(error, 'EACCES')) throw error;
          skipped.push({ path: rel, reason: 'unreadable' });
          return;
        }
        bytes += copied.size - size;
        entries.push({ path: rel, type: 'file', mode, size: copied.size, sha256: copied.sha256 });
      }
    },
    skipped,
  );
  // Deepest first, so a read-only directory is closed only after everything inside it.
  for (const d of directories.reverse()) await finishDirectory(d.abs, d.stats, options);
  const root = await lstat(source, { bigint: true });
  await finishDirectory(dest, root, options);
  return {
    entries: sortEntries(entries),
    skipped: sortEntries(skipped),
    bytes,
    rootMode: Number(root.mode & 0o7777n),
  };
}

function tooLarge(rel: string, maxBytes: number): WorkspaceError {
  return new WorkspaceError(
    'draft_too_large',
    `workspace mode draft: the copy would hold more than ${String(maxBytes)} bytes (at ${rel}); a sparse or huge file counts at its full size (CFH_DRAFT_MAX_BYTES, and the draft root's free space, bound it)`,
    { path: rel, maxBytes },
  );
}

async function copyFile(
  abs: string,
  stats: BigIntStats,
  target: string,
  options: CopyOptions,
  left: number,
  rel: string,
): Promise<{ sha256: string; size: number }> {
  const from = await openSeenFile(abs, stats);
  const hash = createHash('sha256');
  let size = 0;
  try {
    const to = await open(
      target,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      const buffer = readBuffer(Number(stats.size));
      for (;;) {
        options.signal.throwIfAborted();
        const { bytesRead } = await from.read(buffer, 0, buffer.length, size);
        if (bytesRead === 0) break;
        const chunk = buffer.subarray(0, bytesRead);
        hash.update(chunk);
        await to.write(chunk, 0, bytesRead, size);
        size += bytesRead;
        // A file that grows while it is copied counts as it grows.
        if (size > left) throw tooLarge(rel, options.maxBytes ?? 0);
        if (bytesRead < buffer.length) break;
      }
      if (options.owner !== undefined) await to.chown(options.owner.uid, options.owner.gid);
      // After chown, which clears set-id bits anyway: none is copied.
      await to.chmod(Number(stats.mode & 0o777n));
      await to.utimes(seconds(stats.atimeNs), seconds(stats.mtimeNs));
    } finally {
      await to.close();
    }
  } finally {
    await from.close();
  }
  return { sha256: hash.digest('hex'), size };
}

async function finishDirectory(
  abs: string,
  stats: BigIntStats,
  options: CopyOptions,
): Promise<void> {
  if (options.owner !== undefined) await chown(abs, options.owner.uid, options.owner.gid);
  await chmod(abs, Number(stats.mode & 0o777n));
  await utimes(abs, seconds(stats.atimeNs), seconds(stats.mtimeNs));
}

function seconds(ns: bigint): number {
  return Number(ns) / 1e9;
}
