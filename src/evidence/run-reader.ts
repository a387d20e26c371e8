// The one way cfh reads a run directory back (AH-ART-1, AH-ART-3): its files are ones a
// sandbox, a host tool or another user may have replaced since cfh wrote them, so nothing is
// trusted of what stands at a path. The directory is opened without following a link and
// every file is resolved relative to that descriptor, one component at a time, each opened
// O_NOFOLLOW (a link anywhere on the way is reported, never followed); a file is read only
// when fstat says it is a regular file no bigger than its bound (the size the evidence
// declares for it, or a cap by kind), and never more than that bound is read, so a link to
// /dev/zero, a FIFO, a directory or a file grown huge each ends in a problem named in words,
// at once. Opens are O_NONBLOCK (a FIFO put in place cannot hold open(2)) and O_NOCTTY;
// libuv adds O_CLOEXEC to every open. Directories are listed with lstat, links not followed,
// within a bound on entries and depth.
import { createHash } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import { ArtifactError, errorMessage } from '../errors.js';

const MiB = 1024 * 1024;

/** The most cfh reads of each kind of evidence file when the evidence declares no size. */
export const READ_CAPS = {
  /** events.jsonl: thousands of calls are a few MiB. */
  events: 128 * MiB,
  transcript: 128 * MiB,
  /** snapshot, state, report, signature, baseline, patch.json. */
  document: 16 * MiB,
  /** patch/patch.diff, printed by `runs diff`. */
  diff: 256 * MiB,
  /** An output or a blob whose record carries no size: digested, never held. */
  digest: 16 * 1024 * MiB,
} as const;

/** How far a listing goes: cfh writes at most three levels and a few thousand entries. */
const LIST_MAX_ENTRIES = 100_000;
const LIST_MAX_DEPTH = 8;

const FILE_FLAGS =
  constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const DIR_FLAGS =
  constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_DIRECTORY | constants.O_NONBLOCK;

export type EntryKind =
  | 'file'
  | 'directory'
  | 'symlink'
  | 'fifo'
  | 'socket'
  | 'character device'
  | 'block device'
  | 'other';

export interface RunEntry {
  /** Relative to the run directory, `/`-separated. */
  readonly rel: string;
  /** A directory is listed as an entry only where a file was expected (run-evidence.ts). */
  readonly kind: EntryKind;
  readonly bytes: number;
}

export type Read<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly missing: boolean; readonly problem: string };

export interface Listing {
  readonly entries: readonly RunEntry[];
  /** Why the listing is incomplete (a link or an unreadable directory on the way, a bound). */
  readonly problems: readonly string[];
}

export function kindOf(st: Stats): EntryKind {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isFIFO()) return 'fifo';
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice()) return 'character device';
  if (st.isBlockDevice()) return 'block device';
  return 'other';
}

export const describeKind = (kind: EntryKind): string =>
  kind === 'other' ? 'an unknown entry' : kind === 'symlink' ? 'a symbolic link' : `a ${kind}`;

function openProblem(rel: string, error: unknown): { missing: boolean; problem: string } {
  const code = error instanceof Error && 'code' in error ? String(error.code) : '';
  if (code === 'ENOENT') return { missing: true, problem: `${rel}: missing` };
  if (code === 'ELOOP' || code === 'EMLINK')
    return {
      missing: false,
      problem: `${rel}: a symbolic link, not followed`,
    };
  if (code === 'ENOTDIR')
    return { missing: false, problem: `${rel}: a directory on its way is not a directory` };
  return { missing: false, problem: `${rel}: cannot be opened (${code || errorMessage(error)})` };
}

/** A relative evidence path that cannot leave the directory it is resolved in. */
function partsOf(rel: string): string[] | undefined {
  const parts = rel.split('/');
  if (rel === '' || rel.includes('\0') || parts.some((p) => p === '' || p === '.' || p === '..'))
    return undefined;
  return parts;
}

export class RunReader implements AsyncDisposable {
  readonly dir: string;
  readonly #handle: FileHandle;

  private constructor(dir: string, handle: FileHandle) {
    this.dir = dir;
    this.#handle = handle;
  }

  /** Opens `dir` itself without following a link; ArtifactError when it is no directory. */
  static async open(dir: string): Promise<RunReader> {
    try {
      return new RunReader(dir, await open(dir, DIR_FLAGS));
    } catch (error) {
      // O_DIRECTORY|O_NOFOLLOW on a link fails ENOTDIR: lstat says what stands there.
      const found = await lstat(dir).catch(() => undefined);
      const { problem } =
        found === undefined || kindOf(found) === 'directory'
          ? openProblem(dir, error)
          : {
              problem: `${dir}: ${describeKind(kindOf(found))}, not a run directory; not followed`,
            };
      throw new ArtifactError(
        'evidence_unreadable',
        problem.replace(/: missing$/, ': no such run directory'),
        error,
      );
    }
  }

  /** The descriptor's path: what is opened under it resolves in the directory opened. */
  get #base(): string {
    return `/proc/self/fd/${this.#handle.fd}`;
  }

  /**
   * Opens `rel` (a file) with every directory on its way opened O_NOFOLLOW in turn, and
   * checks what was opened: a regular file of at most `maxBytes`.
   */
  async #openFile(
    rel: string,
    maxBytes: number,
  ): Promise<Read<{ handle: FileHandle; bytes: number }>> {
    const parts = partsOf(rel);
    if (parts === undefined)
      return {
        ok: false,
        missing: false,
        problem: `${JSON.stringify(rel)}: not a path inside the run directory`,
      };
    const parents: FileHandle[] = [];
    try {
      let base = this.#base;
      for (const part of parts.slice(0, -1)) {
        const next = await open(`${base}/${part}`, DIR_FLAGS);
        parents.push(next);
        base = `/proc/self/fd/${next.fd}`;
      }
      const handle = await open(`${base}/${parts.at(-1) ?? ''}`, FILE_FLAGS);
      const st = await handle.stat();
      const kind = kindOf(st);
      let problem: string | undefined;
      if (kind !== 'file') problem = `${rel}: ${describeKind(kind)}, not a regular file; not read`;
      else if (st.size > maxBytes)
        problem = `${rel}: ${st.size} bytes, more than the ${maxBytes} it may hold; not read`;
      if (problem !== undefined) {
        await handle.close();
        return { ok: false, missing: false, problem };
      }
      return { ok: true, value: { handle, bytes: st.size } };
    } catch (error) {
      const way = await this.#onTheWay(rel, parts);
      return { ok: false, ...(way === undefined ? openProblem(rel, error) : way) };
    } finally {
      for (const p of parents) await p.close().catch(() => undefined);
    }
  }

  /**
   * What on the way to `rel` is not a directory (a link, a file), named: O_DIRECTORY with
   * O_NOFOLLOW fails ENOTDIR on a link, which says too little.
   */
  async #onTheWay(
    rel: string,
    parts: readonly string[],
  ): Promise<{ missing: boolean; problem: string } | undefined> {
    for (let i = 1; i < parts.length; i += 1) {
      const prefix = parts.slice(0, i).join('/');
      const st = await lstat(`${this.#base}/${prefix}`).catch(() => undefined);
      if (st === undefined) return { missing: true, problem: `${rel}: missing` };
      const kind = kindOf(st);
      if (kind !== 'directory')
        return {
          missing: false,
          problem:
            kind === 'symlink'
              ? `${rel}: a symbolic link on its way (${prefix}), not followed`
              : `${rel}: ${prefix} on its way is ${describeKind(kind)}, not a directory`,
        };
    }
    return undefined;
  }

  /** `rel`'s bytes: a regular file of at most `maxBytes`, read through one descriptor. */
  async read(rel: string, maxBytes: number): Promise<Read<Buffer>> {
    const opened = await this.#openFile(rel, maxBytes);
    if (!opened.ok) return opened;
    const { handle, bytes } = opened.value;
    try {
      // One byte more than the bound tells a file that grew after the fstat.
      const buffer = Buffer.alloc(Math.min(bytes, maxBytes) + 1);
      let length = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
        if (bytesRead === 0) break;
        length += bytesRead;
        if (length > maxBytes)
          return {
            ok: false,
            missing: false,
            problem: `${rel}: grew past ${maxBytes} bytes while it was read`,
          };
        if (length === buffer.length) break;
      }
      if (length > bytes)
        return { ok: false, missing: false, problem: `${rel}: grew while it was read` };
      return { ok: true, value: buffer.subarray(0, length) };
    } catch (error) {
      return {
        ok: false,
        missing: false,
        problem: `${rel}: cannot be read (${errorMessage(error)})`,
      };
    } finally {
      await handle.close();
    }
  }

  /** `rel` as UTF-8 text (a document, the log). */
  async readText(rel: string, maxBytes: number): Promise<Read<string>> {
    const read = await this.read(rel, maxBytes);
    return read.ok ? { ok: true, value: read.value.toString('utf8') } : read;
  }

  /** The first `maxBytes` of a regular file (a preview), whatever its size. */
  async head(
    rel: string,
    maxBytes: number,
  ): Promise<Read<{ text: string; bytes: number; read: number }>> {
    const opened = await this.#openFile(rel, Number.MAX_SAFE_INTEGER);
    if (!opened.ok) return opened;
    const { handle, bytes } = opened.value;
    try {
      const buffer = Buffer.alloc(Math.min(maxBytes, bytes));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      return {
        ok: true,
        value: { text: buffer.subarray(0, bytesRead).toString('utf8'), bytes, read: bytesRead },
      };
    } finally {
      await handle.close();
    }
  }

  /** sha256 and size of a regular file of at most `maxBytes`, streamed, never held. */
  async digest(rel: string, maxBytes: number): Promise<Read<{ sha256: string; bytes: number }>> {
    const opened = await this.#openFile(rel, maxBytes);
    if (!opened.ok) return opened;
    const { handle } = opened.value;
    try {
      const hash = createHash('sha256');
      const buffer = Buffer.allocUnsafe(MiB);
      let bytes = 0;
      for (;;) {
        const want = Math.min(buffer.length, maxBytes + 1 - bytes);
        const { bytesRead } = await handle.read(buffer, 0, want, bytes);
        if (bytesRead === 0) break;
        bytes += bytesRead;
        if (bytes > maxBytes)
          return {
            ok: false,
            missing: false,
            problem: `${rel}: grew past ${maxBytes} bytes while it was read`,
          };
        hash.update(buffer.subarray(0, bytesRead));
      }
      return { ok: true, value: { sha256: hash.digest('hex'), bytes } };
    } catch (error) {
      return {
        ok: false,
        missing: false,
        problem: `${rel}: cannot be read (${errorMessage(error)})`,
      };
    } finally {
      await handle.close();
    }
  }

  /** What stands at `rel` (lstat: a link is a link), or undefined when nothing does. */
  async entryKind(rel: string): Promise<EntryKind | undefined> {
    if (partsOf(rel) === undefined) return undefined;
    return lstat(`${this.#base}/${rel}`).then(
      (st) => kindOf(st),
      () => undefined,
    );
  }

  /**
   * Every entry under the directory but `skip`, relative, sorted: directories descended
   * (each opened O_NOFOLLOW), links and special files listed as what they are.
   */
  async list(skip: ReadonlySet<string> = new Set()): Promise<Listing> {
    const entries: RunEntry[] = [];
    const problems: string[] = [];
    const walk = async (base: string, prefix: string, depth: number): Promise<void> => {
      let names: string[];
      try {
        names = await readdir(base);
      } catch (error) {
        problems.push(`${prefix || '.'}: cannot be listed (${errorMessage(error)})`);
        return;
      }
      for (const name of names.sort()) {
        if (entries.length >= LIST_MAX_ENTRIES) {
          problems.push(`more than ${LIST_MAX_ENTRIES} entries; the listing stops there`);
          return;
        }
        const rel = prefix === '' ? name : `${prefix}/${name}`;
        if (skip.has(rel)) continue;
        let st: Stats;
        try {
          st = await lstat(`${base}/${name}`);
        } catch {
          continue; // gone since readdir
        }
        const kind = kindOf(st);
        if (kind !== 'directory') {
          entries.push({ rel, kind, bytes: kind === 'file' ? st.size : 0 });
          continue;
        }
        if (depth >= LIST_MAX_DEPTH) {
          problems.push(`${rel}: nested deeper than ${LIST_MAX_DEPTH} levels; not listed`);
          continue;
        }
        let sub: FileHandle;
        try {
          sub = await open(`${base}/${name}`, DIR_FLAGS);
        } catch (error) {
          problems.push(openProblem(rel, error).problem);
          continue;
        }
        try {
          await walk(`/proc/self/fd/${sub.fd}`, rel, depth + 1);
        } finally {
          await sub.close();
        }
      }
    };
    await walk(this.#base, '', 0);
    entries.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
    return { entries, problems };
  }

  async close(): Promise<void> {
    await this.#handle.close().catch(() => undefined);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** Reads with a reader opened on `dir` for the duration of `fn`. */
export async function withRunReader<T>(
  dir: string,
  fn: (reader: RunReader) => Promise<T>,
): Promise<T> {
  await using reader = await RunReader.open(dir);
  return await fn(reader);
}
