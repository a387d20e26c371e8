// The removal of a tree by descriptor (remove-tree.ts is its entry point). Node has no
// openat or unlinkat, but a path through /proc/self/fd/N is resolved from the directory
// descriptor N holds, never by its name again: `/proc/self/fd/N/name` is openat(N, name).
// Every directory is held by an O_PATH|O_NOFOLLOW descriptor whose dev/ino is checked
// against what lstat saw; every entry is lstat'ed, unlinked or rmdir'ed relative to its
// parent's descriptor; a symbolic link is never followed (it is an entry like a file), and
// another file system is never entered. So whoever can rename entries in the tree while it
// goes can turn the removal nowhere outside it.
//
// Self-contained (node: imports and erasable TypeScript only): remove-tree.ts runs this very
// file as a child process with the uid of a directory's owner, when cfh is root and the tree
// is someone else's, so the removal also has only the authority of whoever could write it.
import { constants } from 'node:fs';
import { chmod, lstat, open, readdir, rename, rmdir, stat, unlink } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';

/** Not in Node's constants: Linux's O_PATH (a descriptor that names, never reads). */
const O_PATH = 0o10000000;
const DIR_FLAGS = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/**
 * Descriptors held at once along one branch: deeper directories are moved up to the top
 * (under a name of cfh's), so a tree nested past PATH_MAX or past the descriptor limit goes
 * as well as a flat one.
 */
const MAX_DEPTH = 64;
/** Listings of one directory before a tree that keeps changing is given up on. */
const MAX_PASSES = 10_000;
/** The descriptor a delegated removal receives its directory on. */
export const CHILD_FD = 3;

/** What to do with a directory another user owns (cfh as root): remove its contents as them. */
export type Delegate = (fd: number, owner: { uid: number; gid: number }) => Promise<void>;

interface Top {
  readonly fd: number;
  readonly dev: bigint;
  flattened: number;
}

export function fdPath(fd: number, name?: Buffer): Buffer {
  const dir = Buffer.from(`/proc/self/fd/${String(fd)}`);
  return name === undefined ? dir : Buffer.concat([dir, Buffer.from('/'), name]);
}

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

/** The entry moved or changed kind since it was looked at: the next listing sees what it is. */
const CHANGED = new Set(['ENOENT', 'ELOOP', 'ENOTDIR', 'ENOTEMPTY', 'EISDIR']);

function changedUnder(error: unknown): boolean {
  return CHANGED.has(codeOf(error) ?? '');
}

/**
 * Empties the directory held by `fd` (an O_PATH or ordinary descriptor). `delegate`, given
 * only when this process is root, takes each directory whose owner is another user.
 */
export async function emptyDirectory(fd: number, delegate?: Delegate): Promise<void> {
  // stat, not lstat: /proc/self/fd/N itself is a link, to the directory held.
  const st = await stat(fdPath(fd), { bigint: true });
  await openUp(fd, st);
  await emptyAt(fd, { fd, dev: st.dev, flattened: 0 }, 0, delegate);
}

/**
 * Removes the entry `name` of the directory held by `parent`, and everything in it: the
 * tree's root, whichever file system it is on; nothing below it on another.
 */
export async function removeRoot(parent: number, name: Buffer, delegate?: Delegate): Promise<void> {
  const at = fdPath(parent, name);
  const st = await lstat(at, { bigint: true });
  if (!st.isDirectory()) {
    await unlink(at);
    return;
  }
  const root = await open(at, DIR_FLAGS);
  try {
    const held = await root.stat({ bigint: true });
    if (held.dev !== st.dev || held.ino !== st.ino)
      throw new Error(`${name.toString()} was replaced while it was opened`);
    await emptyHeld(root.fd, held, { fd: root.fd, dev: held.dev, flattened: 0 }, 0, delegate);
  } finally {
    await root.close();
  }
  await rmdir(at);
}

/** The contents of a directory held open: by its owner when that is another user. */
async function emptyHeld(
  fd: number,
  held: BigIntStats,
  top: Top,
  depth: number,
  delegate?: Delegate,
): Promise<void> {
  if (delegate !== undefined && process.geteuid?.() === 0 && held.uid !== 0n) {
    await delegate(fd, { uid: Number(held.uid), gid: Number(held.gid) });
    return;
  }
  await openUp(fd, held);
  await emptyAt(fd, top, depth, delegate);
}

async function emptyAt(fd: number, top: Top, depth: number, delegate?: Delegate): Promise<void> {
  for (let pass = 0; pass < MAX_PASSES; pass += 1) {
    // Names as bytes: a name that is not UTF-8 is still the name to unlink.
    const names = await readdir(fdPath(fd), { encoding: 'buffer' });
    if (names.length === 0) return;
    for (const name of names) await removeEntry(fd, name, top, depth, delegate);
  }
  throw new Error(`the tree kept changing through ${String(MAX_PASSES)} listings`);
}

/** Removes `name` in the directory held by `parent`: a directory with all it holds. */
async function removeEntry(
  parent: number,
  name: Buffer,
  top: Top,
  depth: number,
  delegate?: Delegate,
): Promise<void> {
  const at = fdPath(parent, name);
  let st: BigIntStats;
  try {
    st = await lstat(at, { bigint: true });
  } catch (error) {
    if (changedUnder(error)) return;
    throw error;
  }
  try {
    if (!st.isDirectory()) {
      await unlink(at);
      return;
    }
    if (st.dev !== top.dev) throw new Error(`a mount point in the tree: ${name.toString()}`);
    if (depth + 1 >= MAX_DEPTH && top.fd !== parent) {
      // Moved up, not descended into: the top's next listing takes it from depth 0.
      top.flattened += 1;
      await rename(at, fdPath(top.fd, Buffer.from(`.cfh-flat-${String(top.flattened)}`)));
      return;
    }
    const child = await open(at, DIR_FLAGS);
    try {
      const held = await child.stat({ bigint: true });
      // Swapped between the lstat and the open: the next listing sees what is there now.
      if (held.dev !== st.dev || held.ino !== st.ino) return;
      await emptyHeld(child.fd, held, top, depth + 1, delegate);
    } finally {
      await child.close();
    }
    await rmdir(at);
  } catch (error) {
    if (changedUnder(error)) return;
    throw error;
  }
}

/** A directory its owner made unreadable or unwritable: given back to them (chmod is theirs). */
async function openUp(fd: number, st: BigIntStats): Promise<void> {
  if ((st.mode & 0o700n) === 0o700n) return;
  const euid = process.geteuid?.();
  if (euid !== 0 && BigInt(euid ?? -1) !== st.uid) return;
  // Through the descriptor's link: the inode held, nothing a name now leads to.
  await chmod(fdPath(fd), Number((st.mode & 0o7777n) | 0o700n));
}

/** The child process's work: empty the directory on CHILD_FD; a failure is one line, exit 1. */
export async function childMain(): Promise<void> {
  try {
    await emptyDirectory(CHILD_FD);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
