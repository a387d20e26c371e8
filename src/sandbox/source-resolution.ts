// What a host path names, resolved once, atomically (AH-CONT-1). A path is a sequence of
// directory entries, and anyone who may write one of those directories can change what the
// path names between two system calls: resolving it (realpath) and then asking what it is
// (stat) may describe two different objects, the checked path and someone else's symlink
// target. So the path is opened once (O_PATH, which needs no read permission) and the
// object's path and identity both come from that one descriptor: the kernel's name for it
// (/proc/self/fd) and fstat. A walk of the path as spelled then names every symlink it went
// through, so a caller can refuse a path another user could point elsewhere; the walk must
// end where the kernel did, or the path changed while cfh looked and is refused. What the
// walk read of each entry (owner, mode) is kept, so who could replace a link is judged on
// the link that led to the object, not on whatever a later look finds in its place.
import {
  closeSync,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readlinkSync,
  statSync,
  type BigIntStats,
} from 'node:fs';
import path from 'node:path';
import { pseudoFileSystemAt } from '../config/pseudo-fs.js';
import type { MountIdentity } from '../substrate/container-spec.js';
import type { EntryOwnership } from '../path-trust.js';

/** Linux's O_PATH (the same value on x86-64 and arm64); Node does not export it. */
const O_PATH = 0o10000000;
const O_CLOEXEC = 0o2000000;
/** Linux gives up after 40 symlinks in one resolution (ELOOP); so does the walk. */
const MAX_LINKS = 40;

export type ObjectKind = 'directory' | 'file' | 'socket' | 'other';

export interface ResolvedObject {
  /** The object's absolute path, as the kernel names the descriptor cfh opened. */
  readonly real: string;
  /** Device and inode of that same descriptor. */
  readonly identity: MountIdentity;
  readonly kind: ObjectKind;
  /**
   * The mount the descriptor lay on, as the kernel numbers it (/proc/self/fdinfo `mnt_id`):
   * where in which file system the object lies is read from that mount (mount-table.ts).
   */
  readonly mountId: number;
  /** How many names (hard links) the object has. */
  readonly names: number;
  /**
   * Every symlink the spelled path went through, each named by its resolved directory and
   * its own name (`/home/u/link`): whoever may replace one of them chooses the object.
   */
  readonly links: readonly string[];
  /** What each of `links` said when the walk read it (its target, as written). */
  readonly targets: ReadonlyMap<string, string>;
  /** Owner, group and mode of every entry the walk read, by path: links and directories. */
  readonly entries: ReadonlyMap<string, EntryOwnership>;
  /** The kernel pseudo file system the object lies on (`proc`, `sysfs`, ...), if any. */
  readonly pseudoFileSystem: string | undefined;
}

/**
 * Why a path could not be resolved: it names nothing, it changed while cfh looked, or its
 * name cannot be passed on (not UTF-8, which the engine's API takes; longer than the
 * kernel will name).
 */
export class ResolutionError extends Error {
  constructor(
    readonly reason: 'missing' | 'changed' | 'unnamable',
    message: string,
  ) {
    super(message);
    this.name = 'ResolutionError';
  }
}

export function resolveObject(spelled: string): ResolvedObject {
  const absolute = path.isAbsolute(spelled) ? spelled : `${process.cwd()}/${spelled}`;
  let fd: number;
  try {
    fd = openSync(absolute, O_PATH | O_CLOEXEC);
  } catch (error) {
    const code = codeOf(error);
    throw new ResolutionError(
      code === 'ENAMETOOLONG' ? 'unnamable' : 'missing',
      `'${spelled}' does not exist (${code})`,
    );
  }
  let name: Buffer;
  let st: BigIntStats;
  let pseudoFileSystem: string | undefined;
  let mountId: number;
  try {
    st = fstatSync(fd, { bigint: true });
    const self = `/proc/self/fd/${fd}`;
    // statfs follows the descriptor's magic link: the file system of the object opened.
    pseudoFileSystem = pseudoFileSystemAt(self);
    name = readlinkSync(self, { encoding: 'buffer' });
    mountId = mountIdOf(fd, spelled);
  } catch (error) {
    if (error instanceof ResolutionError) throw error;
    throw new ResolutionError(
      codeOf(error) === 'ENAMETOOLONG' ? 'unnamable' : 'missing',
      `'${spelled}' cannot be named (${codeOf(error)})`,
    );
  } finally {
    closeSync(fd);
  }
  const real = name.toString('utf8');
  if (!Buffer.from(real, 'utf8').equals(name)) {
    throw new ResolutionError(
      'unnamable',
      `'${spelled}' resolves to a path that is not valid UTF-8, which the engine cannot be given`,
    );
  }
  const identity = { dev: String(st.dev), ino: String(st.ino) };
  const walked = walk(absolute);
  // The walk reads the same entries again: ending elsewhere, or at another object (an entry
  // renamed since the open, a deleted object's "(deleted)" name), means the path moved.
  const now = walked === undefined ? undefined : lstatOrUndefined(walked.real);
  if (
    walked?.real !== real ||
    now === undefined ||
    String(now.dev) !== identity.dev ||
    String(now.ino) !== identity.ino
  ) {
    throw new ResolutionError(
      'changed',
      `'${spelled}' changed while cfh resolved it (it named '${real}', then '${walked?.real ?? 'nothing'}')`,
    );
  }
  return {
    real,
    identity,
    kind: kindOf(st),
    mountId,
    names: Number(st.nlink),
    links: walked.links,
    targets: walked.targets,
    entries: walked.entries,
    pseudoFileSystem,
  };
}

/** The path followed entry by entry as the kernel would, naming each symlink on the way. */
function walk(absolute: string):
  | {
      real: string;
      links: string[];
      targets: Map<string, string>;
      entries: Map<string, EntryOwnership>;
    }
  | undefined {
  const links: string[] = [];
  const targets = new Map<string, string>();
  const entries = new Map<string, EntryOwnership>();
  const rest = absolute.split('/').filter((c) => c !== '');
  let here = '/';
  while (rest.length > 0) {
    const name = rest.shift() as string;
    if (name === '.') continue;
    // `..` after a symlink leaves the link's target, not the link's directory: `here` is
    // always a resolved directory, so its parent is what the kernel would take.
    if (name === '..') {
      here = path.dirname(here);
      continue;
    }
    const entry = here === '/' ? `/${name}` : `${here}/${name}`;
    const st = lstatOrUndefined(entry);
    if (st === undefined) return undefined;
    entries.set(entry, { uid: Number(st.uid), gid: Number(st.gid), mode: Number(st.mode) });
    if (!st.isSymbolicLink()) {
      here = entry;
      continue;
    }
    if (links.length >= MAX_LINKS) return undefined;
    links.push(entry);
    let bytes: Buffer;
    try {
      bytes = readlinkSync(entry, { encoding: 'buffer' });
    } catch {
      return undefined;
    }
    const target = bytes.toString('utf8');
    if (!Buffer.from(target, 'utf8').equals(bytes)) {
      throw new ResolutionError(
        'unnamable',
        `the symlink '${entry}' points to a path that is not valid UTF-8`,
      );
    }
    targets.set(entry, target);
    rest.unshift(...target.split('/').filter((c) => c !== ''));
    if (target.startsWith('/')) here = '/';
  }
  return { real: here, links, targets, entries };
}

/**
 * The working directory as the operator spelled it: the shell's PWD when it is an absolute,
 * normalized path naming this process's working directory (same device and inode), else the
 * kernel's name. The kernel's name has every link on the way already followed, so a `cd`
 * through a link a sandbox left would hide it from the walk; PWD keeps it (AH-CONT-1). A PWD
 * that names something else says nothing about how cfh got here and is ignored.
 */
export function spelledWorkingDirectory(pwd: string | undefined, cwd = process.cwd()): string {
  if (pwd === undefined || !path.isAbsolute(pwd) || path.posix.normalize(pwd) !== pwd) return cwd;
  try {
    const a = statSync(pwd, { bigint: true });
    const b = statSync(cwd, { bigint: true });
    return a.dev === b.dev && a.ino === b.ino ? pwd : cwd;
  } catch {
    return cwd;
  }
}

/** The id of the mount descriptor `fd` lies on (Linux 3.15 and later list it). */
function mountIdOf(fd: number, spelled: string): number {
  const found = /^mnt_id:\s*(\d+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
  if (found?.[1] === undefined)
    throw new ResolutionError(
      'unnamable',
      `'${spelled}': the kernel does not say which mount it lies on (/proc/self/fdinfo has no mnt_id)`,
    );
  return Number(found[1]);
}

function kindOf(st: BigIntStats): ObjectKind {
  if (st.isDirectory()) return 'directory';
  if (st.isFile()) return 'file';
  if (st.isSocket()) return 'socket';
  return 'other';
}

function lstatOrUndefined(p: string): BigIntStats | undefined {
  try {
    return lstatSync(p, { bigint: true });
  } catch {
    return undefined;
  }
}

function codeOf(error: unknown): string {
  return error instanceof Error && 'code' in error ? String(error.code) : 'error';
}
