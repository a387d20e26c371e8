// Walking a tree without following anything: every entry is lstat'ed, a symlink stays a
// symlink, a regular file is opened O_NOFOLLOW | O_NONBLOCK and checked to be the inode the
// walk saw, so a FIFO or a swapped name is never read. Names that are not lossless UTF-8,
// and entries that are neither file, directory nor symlink, are skipped and said so.
import { createHash } from 'node:crypto';
import { constants, type BigIntStats } from 'node:fs';
import { chmod, lstat, open, readdir, readlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { WorkspaceError } from '../errors.js';
import {
  compareTreePaths,
  componentOf,
  joinTreePath,
  type SkippedEntry,
  type TreeEntry,
  type TreeListing,
} from './tree.js';

const CHUNK = 1024 * 1024;

/** A tree with more entries than this is not walked (a copy, a patch): `tree_too_large`. */
export const MAX_TREE_ENTRIES = 500_000;

export interface WalkOptions {
  readonly signal: AbortSignal;
  /**
   * Whether the entry may be taken at all (the sandbox user could read it); no: skipped as
   * `unreadable`. Entries the walker itself may not read (EACCES) are skipped the same way.
   */
  readonly mayRead?: (stats: BigIntStats) => boolean;
  /**
   * Whether to read a file of this size at this path (its stats, for what a size does not
   * say: holes, the inode); no: listed by size, without digest.
   */
  readonly mayHash?: (path: string, size: number, stats: BigIntStats) => boolean;
  /**
   * Digests by inode (`dev:ino`): a file with several names in the tree is read once, so
   * hard links do not multiply what a walk reads.
   */
  readonly byInode?: Map<string, Promise<{ sha256: string; size: number }>>;
  /**
   * The tree is cfh's own scratch copy (a draft): a directory or file its owner made
   * unreadable is made readable (the mode recorded is the one found) so the walk is
   * complete even when cfh runs as that owner rather than as root.
   */
  readonly repairPermissions?: boolean;
}

export interface VisitedEntry {
  readonly path: string;
  readonly abs: string;
  readonly stats: BigIntStats;
}

/**
 * Visits every entry below `root`: a directory before its contents, files of one directory
 * several at once (so in no fixed order: sort what the visits collect).
 */
export async function visitTree(
  root: string,
  options: WalkOptions,
  visit: (entry: VisitedEntry) => Promise<void>,
  skipped: SkippedEntry[],
): Promise<void> {
  let count = 0;
  const walk = async (rel: string, abs: string): Promise<void> => {
    options.signal.throwIfAborted();
    let names: Buffer[];
    try {
      names = await listDirectory(abs, options);
    } catch (error) {
      if (rel === '' || !isCode(error, 'EACCES')) throw error;
      skipped.push({ path: `${rel}/*`, reason: 'unreadable' });
      return;
    }
    count += names.length;
    if (count > MAX_TREE_ENTRIES) {
      throw new WorkspaceError(
        'tree_too_large',
        `${root} holds more than ${MAX_TREE_ENTRIES} entries; draft mode copies and compares whole trees`,
        { root },
      );
    }
    const children: { name: string; raw: Buffer }[] = [];
    for (const raw of names) {
      const name = componentOf(raw);
      if (name === undefined) {
        skipped.push({ path: joinTreePath(rel, raw.toString('utf8')), reason: 'name-not-utf8' });
        continue;
      }
      children.push({ name, raw });
    }
    children.sort((a, b) => compareTreePaths(a.name, b.name));
    const seen = await inBatches(children, async ({ name }) => {
      const childAbs = path.join(abs, name);
      const childRel = joinTreePath(rel, name);
      try {
        return { path: childRel, abs: childAbs, stats: await lstat(childAbs, { bigint: true }) };
      } catch (error) {
        if (!isCode(error, 'EACCES')) throw error;
        return { path: childRel, abs: childAbs, stats: undefined };
      }
    });
    const leaves: VisitedEntry[] = [];
    const dirs: VisitedEntry[] = [];
    for (const entry of seen) {
      const { stats } = entry;
      if (
        stats === undefined ||
        (options.mayRead !== undefined && !stats.isSymbolicLink() && !options.mayRead(stats))
      ) {
        skipped.push({ path: entry.path, reason: 'unreadable' });
        continue;
      }
      const visited = { ...entry, stats };
      if (stats.isDirectory()) dirs.push(visited);
      else if (stats.isFile() || stats.isSymbolicLink()) leaves.push(visited);
      else skipped.push({ path: entry.path, reason: kindOf(stats) });
    }
    // Files side by side (the thread pool has four threads; one file's syscalls are small),
    // then each directory before what is inside it.
    await inBatches(leaves, visit);
    for (const d of dirs) {
      await visit(d);
      await walk(d.path, d.abs);
    }
  };
  await walk('', root);
}

const BATCH = 8;

async function inBatches<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += BATCH)
    out.push(...(await Promise.all(items.slice(i, i + BATCH).map(fn))));
  return out;
}

/** The listing of a tree, every regular file hashed. */
export async function listTree(root: string, options: WalkOptions): Promise<TreeListing> {
  const entries: TreeEntry[] = [];
  const skipped: SkippedEntry[] = [];
  await visitTree(
    root,
    options,
    async ({ path: rel, abs, stats }) => {
      entries.push(await entryOf(rel, abs, stats, options));
    },
    skipped,
  );
  return { entries: sortEntries(entries), skipped: sortEntries(skipped) };
}

export function sortEntries<T extends { readonly path: string }>(entries: T[]): T[] {
  return entries.sort((a, b) => compareTreePaths(a.path, b.path));
}

export async function entryOf(
  rel: string,
  abs: string,
  stats: BigIntStats,
  options: WalkOptions,
): Promise<TreeEntry> {
  const mode = Number(stats.mode & 0o7777n);
  if (stats.isDirectory()) return { path: rel, type: 'directory', mode };
  if (stats.isSymbolicLink())
    return { path: rel, type: 'symlink', mode, target: await readlink(abs) };
  // Not opened at all: its size is all the patch will say of it.
  if (options.mayHash?.(rel, Number(stats.size), stats) === false)
    return { path: rel, type: 'file', mode, size: Number(stats.size) };
  // Looked up and set with no await between the check above and here: two names of one
  // inode in the same batch share the one read.
  const key = inodeKey(stats);
  let digest = options.byInode?.get(key);
  if (digest === undefined) {
    digest = hashFile(abs, stats, options);
    options.byInode?.set(key, digest);
  }
  const { sha256, size } = await digest;
  return { path: rel, type: 'file', mode, size, sha256 };
}

export function inodeKey(stats: BigIntStats): string {
  return `${String(stats.dev)}:${String(stats.ino)}`;
}

/** Opens a regular file the walk saw, refusing anything else at that name now. */
export async function openSeenFile(
  abs: string,
  stats: BigIntStats,
  options: Pick<WalkOptions, 'repairPermissions'> = {},
): Promise<FileHandle> {
  const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  let handle: FileHandle;
  try {
    handle = await open(abs, flags);
  } catch (error) {
    if (!(options.repairPermissions === true && isCode(error, 'EACCES'))) throw error;
    await chmod(abs, Number(stats.mode & 0o7777n) | 0o400);
    handle = await open(abs, flags);
  }
  const now = await handle.stat({ bigint: true });
  if (!now.isFile() || now.ino !== stats.ino || now.dev !== stats.dev) {
    await handle.close();
    throw new Error(`${abs}: no longer the file the walk saw`);
  }
  return handle;
}

export async function hashFile(
  abs: string,
  stats: BigIntStats,
  options: Pick<WalkOptions, 'repairPermissions'> = {},
): Promise<{ sha256: string; size: number }> {
  const handle = await openSeenFile(abs, stats, options);
  try {
    return await hashHandle(handle, Number(stats.size));
  } finally {
    await handle.close();
  }
}

export async function hashHandle(
  handle: FileHandle,
  expected?: number,
): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  const buffer = readBuffer(expected);
  let size = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, size);
    if (bytesRead === 0) break;
    hash.update(buffer.subarray(0, bytesRead));
    size += bytesRead;
    // A short read of a regular file is its end: no second call to hear it.
    if (bytesRead < buffer.length) break;
  }
  return { sha256: hash.digest('hex'), size };
}

/**
 * A buffer one byte larger than the file is expected to be (so one read finds its end),
 * at most 1 MiB: one 1 MiB allocation for each small file would cost more than its read.
 */
export function readBuffer(expected: number | undefined): Buffer {
  return Buffer.allocUnsafe(Math.min(CHUNK, Math.max(4096, (expected ?? CHUNK) + 1)));
}

async function listDirectory(abs: string, options: WalkOptions): Promise<Buffer[]> {
  if (options.repairPermissions === true) {
    // Reading names needs r, reaching the entries needs x: the owner gets both back.
    const stats = await lstat(abs);
    if ((stats.mode & 0o700) !== 0o700) await chmod(abs, (stats.mode & 0o7777) | 0o700);
  }
  return readdir(abs, { encoding: 'buffer' });
}

function kindOf(stats: BigIntStats): string {
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  if (stats.isCharacterDevice()) return 'character-device';
  if (stats.isBlockDevice()) return 'block-device';
  return 'unknown-type';
}

/** Whether `user` (uid:gid, no other groups: what a sandbox process has) could read it. */
export function readableBy(user: { uid: number; gid: number }, stats: BigIntStats): boolean {
  if (user.uid === 0) return true;
  const mode = Number(stats.mode);
  const bits =
    Number(stats.uid) === user.uid
      ? (mode >> 6) & 7
      : Number(stats.gid) === user.gid
        ? (mode >> 3) & 7
        : mode & 7;
  const need = stats.isDirectory() ? 5 : 4;
  return (bits & need) === need;
}

export function isCode(error: unknown, code: string): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === code;
}
