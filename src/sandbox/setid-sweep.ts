// After a run: find set-user-ID and set-group-ID files and directories the run left in its
// rw mounts, strip the bits, and say so (AH-CONT-2: what the sandbox writes to an rw mount
// is untrusted). The seccomp filter refuses S_ISUID/S_ISGID in every mode-setting call
// (src/seccomp/argument-rules.ts); this is the evidence and the backstop for what a filter
// cannot see: a directory that inherits S_ISGID from a set-gid parent, io_uring's
// IORING_OP_OPENAT under allowIoUring, a runtime that does not apply the filter.
//
// Race-safe against a tree that changes under the walk (a sandbox still running, or any
// other writer): every directory is opened (O_PATH | O_DIRECTORY | O_NOFOLLOW) and checked
// against the dev/ino its parent's listing showed before it is walked, and its entries
// are reached as `/proc/self/fd/<dir fd>/<name>`, so no path component is ever resolved
// again and no symlink is followed below a root. A candidate is opened O_PATH|O_NOFOLLOW
// (no open side effects, a symlink stays a symlink), compared by dev/ino/type with what the
// walk saw, and chmod'ed through its own descriptor's /proc/self/fd link. A root may itself
// be a /proc/self/fd/N path of a pinned directory; that one link is followed.
import { constants } from 'node:fs';
import { chmod, lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import { performance } from 'node:perf_hooks';

/** Linux O_PATH (not in fs.constants): a descriptor for the inode without opening it. */
const O_PATH = 0o10000000;
const SETID = 0o6000n;
const PERMISSIONS = 0o7777n;
/** Entries lstat'ed at once in one directory (the libuv pool has four threads). */
const BATCH = 16;

export const DEFAULT_MAX_ENTRIES = 200_000;
export const DEFAULT_MAX_MS = 10_000;

export interface SetidSweepOptions {
  /** Host paths of the run's rw mount roots, or /proc/self/fd/N paths of pinned ones. */
  readonly roots: readonly string[];
  /**
   * The run's start: files whose ctime (inode change: creation, chmod, rename, link), and
   * directories whose birth time, is at or after it are the run's (changedAt below). Take
   * it before the container starts: file timestamps come from the kernel's coarse clock,
   * a few ms behind the wall clock.
   */
  readonly since: Date;
  readonly signal: AbortSignal;
  /** Stop after this many entries (complete: false); default 200 000. */
  readonly maxEntries?: number;
  /** Stop after this many milliseconds (complete: false); default 10 000. */
  readonly maxMs?: number;
  /**
   * Sees each entry the walk reaches (the root as given, the entry's relative path, what
   * lstat said), before its bits are looked at: the one walk of the rw mounts serves other
   * end-of-run checks too (host-obeyed-watch.ts). `skip` leaves the entry alone and keeps
   * the walk out of it (a subtree the sandbox had read-only).
   */
  readonly visit?: (root: string, path: string, st: BigIntStats) => 'skip' | undefined;
}

export interface SetidStripped {
  /** The root as given in `roots`. */
  readonly root: string;
  /** Relative to the root, `/`-separated. */
  readonly path: string;
  readonly type: 'file' | 'directory';
  /** Permission bits (mode & 0o7777) before and after. */
  readonly modeBefore: number;
  readonly modeAfter: number;
  readonly dev: number;
  readonly ino: number;
}

export interface SetidSkipped {
  readonly root: string;
  readonly path: string;
  /** `replaced`: not the inode the walk saw when it came to strip it; else an errno code. */
  readonly reason: string;
}

export interface SetidSweepResult {
  readonly stripped: readonly SetidStripped[];
  readonly skipped: readonly SetidSkipped[];
  readonly stats: {
    /** Directory entries examined, roots excluded. */
    readonly entries: number;
    /**
     * Every entry below every root was examined: no bound stopped the walk and no directory
     * was left unread (`unreached`).
     */
    readonly complete: boolean;
    /**
     * Directories the walk could not open or list (EACCES on a 0311 directory the sandbox
     * made, one replaced under the walk): what is below them was not seen, so the walk is
     * not complete. A directory gone since its parent was listed holds nothing: not counted.
     */
    readonly unreached: number;
    /** Why the sweep stopped early, when it did. */
    readonly stoppedBy?: 'entry-cap' | 'time-cap' | 'aborted';
    /** Set-id entries left alone because they are from before `since`. */
    readonly setidBeforeRun: number;
    readonly ms: number;
  };
}

type Stop = 'entry-cap' | 'time-cap' | 'aborted';

class Sweep {
  readonly stripped: SetidStripped[] = [];
  readonly skipped: SetidSkipped[] = [];
  entries = 0;
  unreached = 0;
  setidBeforeRun = 0;
  stoppedBy: Stop | undefined;
  private readonly started = performance.now();
  private readonly sinceNs: bigint;
  private readonly maxEntries: number;
  private readonly maxMs: number;

  constructor(private readonly options: SetidSweepOptions) {
    this.sinceNs = BigInt(options.since.getTime()) * 1_000_000n;
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.maxMs = options.maxMs ?? DEFAULT_MAX_MS;
  }

  elapsed(): number {
    return performance.now() - this.started;
  }

  /** Whether to stop before the next entry; records why. */
  stopping(): boolean {
    if (this.stoppedBy !== undefined) return true;
    if (this.options.signal.aborted) this.stoppedBy = 'aborted';
    else if (this.entries >= this.maxEntries) this.stoppedBy = 'entry-cap';
    else if (this.elapsed() >= this.maxMs) this.stoppedBy = 'time-cap';
    return this.stoppedBy !== undefined;
  }

  async root(root: string): Promise<void> {
    let dir: FileHandle;
    try {
      // The root's own path is followed (it may be a /proc/self/fd/N link to a pinned dir).
      dir = await open(root, O_PATH | constants.O_DIRECTORY);
    } catch (error) {
      this.unread(root, '.', error);
      return;
    }
    try {
      await this.directory(root, dir, '');
    } finally {
      await dir.close();
    }
  }

  /** A directory not walked: recorded, and the walk is not complete unless it is gone. */
  private unread(root: string, rel: string, error: unknown): void {
    const reason = typeof error === 'string' ? error : codeOf(error);
    this.skipped.push({ root, path: rel, reason });
    if (reason !== 'ENOENT') this.unreached += 1;
  }

  private async directory(root: string, dir: FileHandle, rel: string): Promise<void> {
    const here = `/proc/self/fd/${dir.fd}`;
    let names: string[];
    try {
      names = await readdir(here);
    } catch (error) {
      this.unread(root, rel || '.', error);
      return;
    }
    for (let at = 0; at < names.length; at += BATCH) {
      const batch: { name: string; st: BigIntStats | undefined }[] = [];
      for (const name of names.slice(at, at + BATCH)) {
        if (this.stopping()) break;
        this.entries += 1;
        batch.push({ name, st: undefined });
      }
      await Promise.all(
        batch.map(async (entry) => {
          entry.st = await lstat(`${here}/${entry.name}`, { bigint: true }).catch(() => undefined);
        }),
      );
      for (const { name, st } of batch) {
        if (st === undefined) continue; // gone since the listing
        const child = rel === '' ? name : `${rel}/${name}`;
        if (this.options.visit?.(root, child, st) === 'skip') continue;
        const isDir = st.isDirectory();
        if ((isDir || st.isFile()) && (st.mode & SETID) !== 0n) {
          if (changedAt(st) < this.sinceNs) this.setidBeforeRun += 1;
          else {
            const outcome = await stripSetidAt(here, name, st);
            if (outcome.stripped) {
              const { type, modeBefore, modeAfter, dev, ino } = outcome;
              this.stripped.push({ root, path: child, type, modeBefore, modeAfter, dev, ino });
            } else if (outcome.reason !== 'unchanged') {
              this.skipped.push({ root, path: child, reason: outcome.reason });
            }
          }
        }
        if (isDir && !this.stopping()) await this.descend(root, here, name, child, st);
      }
      if (this.stoppedBy !== undefined) return;
    }
  }

  private async descend(
    root: string,
    here: string,
    name: string,
    child: string,
    seen: BigIntStats,
  ): Promise<void> {
    let dir: FileHandle;
    try {
      dir = await open(`${here}/${name}`, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    } catch (error) {
      // ENOTDIR/ELOOP: replaced by a file or a symlink since it was listed.
      this.unread(root, child, error);
      return;
    }
    try {
      if (!sameInode(await dir.stat({ bigint: true }), seen)) {
        this.unread(root, child, 'replaced');
        return;
      }
      await this.directory(root, dir, child);
    } finally {
      await dir.close();
    }
  }
}

export type StripOutcome =
  | {
      readonly stripped: true;
      readonly type: 'file' | 'directory';
      readonly modeBefore: number;
      readonly modeAfter: number;
      readonly dev: number;
      readonly ino: number;
    }
  | { readonly stripped: false; readonly reason: string };

/**
 * Strips S_ISUID/S_ISGID from `dir/name` if it is still the inode `seen` describes (same
 * dev, ino and type) and still has one of them; never follows a symlink in `name`.
 * `reason` `replaced` when it is another inode now, `unchanged` when the bits are gone.
 */
export async function stripSetidAt(
  dir: string,
  name: string,
  seen: BigIntStats,
): Promise<StripOutcome> {
  let handle: FileHandle;
  try {
    handle = await open(`${dir}/${name}`, O_PATH | constants.O_NOFOLLOW);
  } catch (error) {
    return { stripped: false, reason: codeOf(error) };
  }
  try {
    const now = await handle.stat({ bigint: true });
    if (!sameInode(now, seen)) return { stripped: false, reason: 'replaced' };
    if ((now.mode & SETID) === 0n) return { stripped: false, reason: 'unchanged' };
    const before = now.mode & PERMISSIONS;
    // chmod through the descriptor's own link: the inode opened above, nothing else.
    await chmod(`/proc/self/fd/${handle.fd}`, Number(before & ~SETID));
    const after = (await handle.stat({ bigint: true })).mode & PERMISSIONS;
    return {
      stripped: true,
      type: now.isDirectory() ? 'directory' : 'file',
      modeBefore: Number(before),
      modeAfter: Number(after),
      dev: Number(now.dev),
      ino: Number(now.ino),
    };
  } catch (error) {
    return { stripped: false, reason: codeOf(error) };
  } finally {
    await handle.close();
  }
}

/**
 * When an entry became what it is. A file: its ctime (creation, chmod, rename, link; a
 * write by anyone without CAP_FSETID clears the bits itself). A directory: its birth time
 * where the filesystem keeps one (statx btime; 0 where it does not, then its ctime),
 * because a directory's ctime moves whenever an entry is added in it, and the owner's own
 * set-gid directory must not lose its bit because the run wrote a file there. S_ISGID on
 * a directory grants nothing on exec; the ones a run makes are inherited at mkdir, so
 * they are born during it.
 */
function changedAt(st: BigIntStats): bigint {
  return st.isDirectory() && st.birthtimeNs > 0n ? st.birthtimeNs : st.ctimeNs;
}

function sameInode(a: BigIntStats, b: BigIntStats): boolean {
  return a.dev === b.dev && a.ino === b.ino && (a.mode & 0o170000n) === (b.mode & 0o170000n);
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'error';
}

/**
 * Strips S_ISUID and S_ISGID from every regular file and directory below `roots` that the
 * run made or changed (at or after `since`: changedAt), and reports each. Bounded by an entry cap and a time cap;
 * an abort also stops the walk. None of these throws: the result says `complete: false`
 * and why, and keeps every record of what was already changed, because the evidence of a
 * change must not be lost with the walk that made it.
 */
export async function sweepSetid(options: SetidSweepOptions): Promise<SetidSweepResult> {
  const sweep = new Sweep(options);
  for (const root of options.roots) {
    if (sweep.stopping()) break;
    await sweep.root(root);
  }
  const stoppedBy = sweep.stoppedBy;
  return {
    stripped: sweep.stripped,
    skipped: sweep.skipped,
    stats: {
      entries: sweep.entries,
      complete: stoppedBy === undefined && sweep.unreached === 0,
      unreached: sweep.unreached,
      ...(stoppedBy === undefined ? {} : { stoppedBy }),
      setidBeforeRun: sweep.setidBeforeRun,
      ms: Math.round(sweep.elapsed()),
    },
  };
}
