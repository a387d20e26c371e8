// The draft's bound while the run goes on (governance extension, "Draft vs commit policy";
// AH-LIFE-4 names the limit): the copy is bounded at copy time, and the sandbox then writes
// into it on the host's file system. While the work runs this watch measures what the copy
// allocates and the draft root's free space, and stops the run as a limit when either is
// passed. Between two measurements the sandbox can write for one interval past the bound.
import type { BigIntStats } from 'node:fs';
import { lstat, readdir, statfs } from 'node:fs/promises';
import type { Logger } from '../../log.js';
import { errorMessage } from '../../errors.js';
import { MAX_TREE_ENTRIES } from '../../workspace/walk.js';

/** The shortest interval between two walks; the interval grows with what a walk costs. */
export const WATCH_MIN_INTERVAL_MS = 250;
/** A walk takes at most this share of one core: interval = max(min, 10 × last walk). */
export const WATCH_COST_FACTOR = 10;
/** The draft root keeps at least min(5 % of its size, 1 GiB) free while a draft runs. */
const FREE_FLOOR_SHARE = 0.05;
const FREE_FLOOR_MAX = 1024 ** 3;

export type DraftLimit =
  | { readonly limit: 'draft_bytes'; readonly maxBytes: number; readonly bytes: number }
  | { readonly limit: 'draft_free_space'; readonly floorBytes: number; readonly freeBytes: number };

/**
 * The copy's allocated bytes: st_blocks × 512 (a sparse file costs its blocks), each inode
 * once. Names are read as bytes, so a name that is not UTF-8 (which the patch walk skips) is
 * measured like any other: the sandbox cannot hide what it writes behind one. No link is
 * followed (lstat; only a directory is descended into); past MAX_TREE_ENTRIES the copy
 * cannot be measured and the error says so (tree_too_large), which the watch counts as past
 * the bound.
 */
export async function allocatedBytes(root: string, signal: AbortSignal): Promise<number> {
  const seen = new Set<string>();
  let bytes = 0;
  let entries = 0;
  const visit = async (dir: Buffer): Promise<void> => {
    signal.throwIfAborted();
    let names: Buffer[];
    try {
      names = await readdir(dir, { encoding: 'buffer' });
    } catch (error) {
      // Gone since its parent was read (the sandbox removed it), or not readable by cfh's
      // user, or nested past PATH_MAX: not counted (docs/conformance.md, deviations).
      if (UNCOUNTED.has(codeOf(error) ?? '')) return;
      throw error;
    }
    for (const name of names) {
      entries += 1;
      if (entries > MAX_TREE_ENTRIES)
        throw Object.assign(new Error(`${root} holds more than ${MAX_TREE_ENTRIES} entries`), {
          code: 'tree_too_large',
        });
      const child = Buffer.concat([dir, SLASH, name]);
      let st: BigIntStats;
      try {
        st = await lstat(child, { bigint: true });
      } catch (error) {
        if (UNCOUNTED.has(codeOf(error) ?? '')) continue;
        throw error;
      }
      const key = `${String(st.dev)}:${String(st.ino)}`;
      if (!seen.has(key)) {
        seen.add(key);
        bytes += Number(st.blocks) * 512;
      }
      if (st.isDirectory()) await visit(child);
    }
  };
  await visit(Buffer.from(root));
  return bytes;
}

const SLASH = Buffer.from('/');
const UNCOUNTED = new Set(['ENOENT', 'ENOTDIR', 'EACCES', 'ENAMETOOLONG']);

function codeOf(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

export async function freeFloor(root: string): Promise<{ floorBytes: number; freeBytes: number }> {
  const s = await statfs(root);
  const floorBytes = Math.min(FREE_FLOOR_MAX, Math.floor(s.blocks * s.bsize * FREE_FLOOR_SHARE));
  return { floorBytes, freeBytes: s.bavail * s.bsize };
}

export class DraftWatch implements AsyncDisposable {
  readonly #source: string;
  readonly #root: string;
  readonly #maxBytes: number;
  readonly #log: Logger;
  readonly #stop = new AbortController();
  readonly #controller = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #startBytes: number | undefined;
  /** The limit passed, once it is. */
  tripped: DraftLimit | undefined;
  /** The interval last chosen (ms), and the walks made: the watch's own cost. */
  intervalMs = WATCH_MIN_INTERVAL_MS;
  walks = 0;

  /** `source`: the copy; `root`: the draft root whose file system it fills. */
  constructor(source: string, root: string, maxBytes: number, log: Logger) {
    this.#source = source;
    this.#root = root;
    this.#maxBytes = maxBytes;
    this.#log = log;
    this.#schedule(0);
  }

  /** Aborts when a limit is passed: the work stops as it does on a cancellation. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  #schedule(ms: number): void {
    if (this.#stop.signal.aborted || this.tripped !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#check();
    }, ms);
  }

  async #check(): Promise<void> {
    const t0 = performance.now();
    await this.#measure(this.#stop.signal);
    this.intervalMs = Math.max(
      WATCH_MIN_INTERVAL_MS,
      Math.round(WATCH_COST_FACTOR * (performance.now() - t0)),
    );
    this.#schedule(this.intervalMs);
  }

  async #measure(signal: AbortSignal): Promise<void> {
    try {
      const bytes = await allocatedBytes(this.#source, signal);
      this.#startBytes ??= bytes;
      this.walks += 1;
      if (bytes > this.#maxBytes) {
        this.#trip({ limit: 'draft_bytes', maxBytes: this.#maxBytes, bytes });
        return;
      }
      const free = await freeFloor(this.#root);
      // Only a run whose copy grew is stopped for the host's free space: a disk another
      // process fills does not end a run that wrote nothing.
      if (free.freeBytes < free.floorBytes && bytes > this.#startBytes) {
        this.#trip({ limit: 'draft_free_space', ...free });
        return;
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof Error && 'code' in error && error.code === 'tree_too_large') {
        // Past the entry bound the copy cannot be measured: that is past the bound too.
        this.#trip({ limit: 'draft_bytes', maxBytes: this.#maxBytes, bytes: this.#maxBytes + 1 });
        return;
      }
      // A name the sandbox removed mid-walk: measured again next time.
      this.#log.debug({ err: errorMessage(error) }, 'draft watch: walk failed; retrying');
    }
  }

  #trip(limit: DraftLimit): void {
    this.tripped = limit;
    this.#log.info({ ...limit }, 'draft limit reached; stopping the run');
    this.#controller.abort(new Error(limit.limit));
  }

  /** Stops watching (every container is gone, or the run ended): before the patch walk. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#stop.abort();
    clearTimeout(this.#timer);
    await this.#running;
    // Once more with every container gone: what the sandbox wrote last (gVisor writes back
    // lazily) reaches the host now, and a copy past its bound never ends a run as completed.
    if (this.tripped === undefined) await this.#measure(new AbortController().signal);
  }
}
