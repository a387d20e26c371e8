// The build context of a Dockerfile image, read by cfh and packed into a tar stream for the
// engine's build API: regular files and directories only, read by descriptor so no name
// swapped in while it is read leads outside the context (a path through /proc/self/fd/N is
// resolved from the directory descriptor N, never by name again, as in remove-tree-walk.ts).
// A symbolic link, device, FIFO or socket is refused, neither followed nor skipped: a link
// would carry a host file into the image or have to be judged. Bounded in entries and bytes,
// and deterministic (sorted, fixed owner and time), so its digest addresses the content.
// Synchronous: the run plan resolves the image's tag before any side effect (AH-INV-4).
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
} from 'node:fs';
import type { BigIntStats } from 'node:fs';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { ConfigError } from '../errors.js';

const O_PATH = 0o10000000;
const DIR_FLAGS = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

export interface ContextLimits {
  readonly maxBytes: number;
  readonly maxEntries: number;
  readonly maxDepth: number;
}
export const CONTEXT_LIMITS: ContextLimits = {
  maxBytes: 64 * 1024 * 1024,
  maxEntries: 10_000,
  maxDepth: 32,
};
export const DOCKERFILE_MAX_BYTES = 1024 * 1024;
/** The name the Dockerfile travels under in the context (refused if the context has it). */
export const DOCKERFILE_ENTRY = '.cfh-Dockerfile';

export interface ContextEntry {
  readonly name: string;
  readonly type: 'file' | 'directory';
  readonly mode: number;
  readonly data?: Buffer;
}

export interface ReadContext {
  readonly entries: readonly ContextEntry[];
  /** sha256 over every entry's name, type, mode and content digest. */
  readonly digest: string;
  readonly bytes: number;
}

function refuse(what: string, field = 'image.context'): never {
  throw new ConfigError('image_context_refused', `image: ${what}`, { field });
}

function same(a: BigIntStats, b: BigIntStats): boolean {
  return a.ino === b.ino && a.dev === b.dev;
}

/** Reads one regular file, held to what lstat saw: no link followed, no swap, bounded. */
export function readRegularFile(
  file: string,
  maxBytes: number,
  field: string,
  shown = file,
): Buffer {
  let seen: BigIntStats;
  try {
    seen = lstatSync(file, { bigint: true });
  } catch {
    refuse(`${shown} cannot be read`, field);
  }
  if (!seen.isFile()) refuse(`${shown} is not a regular file`, field);
  if (seen.size > BigInt(maxBytes))
    refuse(`${shown} is larger than ${String(maxBytes)} bytes`, field);
  let fd: number;
  try {
    fd = openSync(file, FILE_FLAGS);
  } catch {
    refuse(`${shown} cannot be opened`, field);
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile() || !same(st, seen)) refuse(`${shown} changed while it was read`, field);
    const data = readFileSync(fd);
    if (data.length > maxBytes) refuse(`${shown} grew past ${String(maxBytes)} bytes`, field);
    return data;
  } finally {
    closeSync(fd);
  }
}

export function readContext(contextDir: string, limits = CONTEXT_LIMITS): ReadContext {
  let seen: BigIntStats;
  try {
    seen = lstatSync(contextDir, { bigint: true });
  } catch {
    refuse(`context ${contextDir} does not exist`);
  }
  if (!seen.isDirectory())
    refuse(`context ${contextDir} is not a directory (a link is not followed)`);
  const entries: ContextEntry[] = [];
  const state = { bytes: 0, entries, limits, contextDir };
  const fd = openSync(contextDir, DIR_FLAGS);
  try {
    checkSame(fd, seen, contextDir);
    walk(fd, '', 0, state);
  } finally {
    closeSync(fd);
  }
  const hash = createHash('sha256');
  for (const e of entries) {
    const content = e.data === undefined ? '' : createHash('sha256').update(e.data).digest('hex');
    hash.update(`${e.type} ${e.mode.toString(8)} ${content} ${e.name}\0`);
  }
  return { entries, digest: hash.digest('hex'), bytes: state.bytes };
}

function checkSame(fd: number, seen: BigIntStats, shown: string): void {
  if (!same(lstatSync(`/proc/self/fd/${String(fd)}/.`, { bigint: true }), seen))
    refuse(`${shown} changed while the context was read`);
}

interface WalkState {
  bytes: number;
  readonly entries: ContextEntry[];
  readonly limits: ContextLimits;
  readonly contextDir: string;
}

function walk(dirFd: number, prefix: string, depth: number, w: WalkState): void {
  if (depth > w.limits.maxDepth)
    refuse(`context is deeper than ${String(w.limits.maxDepth)} directories`);
  const base = `/proc/self/fd/${String(dirFd)}`;
  for (const name of readdirSync(base).sort()) {
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    const shown = `${w.contextDir}/${rel}`;
    if (rel === DOCKERFILE_ENTRY)
      refuse(`context has an entry named ${DOCKERFILE_ENTRY}, which cfh reserves`);
    if (w.entries.length >= w.limits.maxEntries)
      refuse(`context has more than ${String(w.limits.maxEntries)} entries`);
    const st = lstatSync(`${base}/${name}`, { bigint: true });
    // No set-id bits and nothing world-writable reaches the image from a context.
    const mode = Number(st.mode & 0o755n);
    if (st.isDirectory()) {
      w.entries.push({ name: rel, type: 'directory', mode });
      const child = openSync(`${base}/${name}`, DIR_FLAGS);
      try {
        checkSame(child, st, shown);
        walk(child, rel, depth + 1, w);
      } finally {
        closeSync(child);
      }
    } else if (st.isFile()) {
      const room = w.limits.maxBytes - w.bytes;
      if (st.size > BigInt(room))
        refuse(`context is larger than ${String(w.limits.maxBytes)} bytes`);
      const data = readRegularFile(`${base}/${name}`, room, 'image.context', shown);
      w.bytes += data.length;
      w.entries.push({ name: rel, type: 'file', mode, data });
    } else {
      const kind = st.isSymbolicLink() ? 'a symbolic link' : 'not a regular file or directory';
      refuse(
        `context entry ${shown} is ${kind}; a context holds regular files and directories only`,
      );
    }
  }
}

/** The tar stream the engine receives: the entries read, then the Dockerfile. */
export function contextTar(context: ReadContext, dockerfile: Buffer): Readable {
  const pack = tar.pack();
  const fixed = { mtime: new Date(0), uid: 0, gid: 0 };
  for (const e of context.entries) {
    if (e.type === 'directory')
      pack.entry({ name: e.name, type: 'directory', mode: e.mode, ...fixed });
    else pack.entry({ name: e.name, mode: e.mode, ...fixed }, e.data ?? Buffer.alloc(0));
  }
  pack.entry({ name: DOCKERFILE_ENTRY, mode: 0o644, ...fixed }, dockerfile);
  pack.finalize();
  return Readable.from(pack);
}
