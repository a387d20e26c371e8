// `cfh runs prune`: remove run directories older than a duration, keeping the newest N,
// never one still being written. A run's age is its run id's time (the directory name,
// which cfh gave it when the run began). Before removing, prune takes the run directory's
// lock itself: a writer that holds it (heartbeat fresher than 30 s) keeps the run, and no
// writer can start on a directory prune is removing.
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { ConfigError } from '../errors.js';
import { removeTree } from '../remove-tree.js';
import { RUN_FILES } from './run-directory.js';
import { isRunId } from './run-id.js';

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** `90s`, `30m`, `12h`, `7d`, `2w` in milliseconds. */
export function parseDuration(text: string, field: string): number {
  const m = /^(\d+)([smhdw])$/.exec(text.trim());
  const unit = m?.[2] === undefined ? undefined : UNITS[m[2]];
  if (m?.[1] === undefined || unit === undefined)
    throw new ConfigError(
      'invalid_duration',
      `${field}: '${text}' is not a duration like 7d, 12h, 30m, 90s`,
      { field, value: text },
    );
  return Number(m[1]) * unit * 1000;
}

/** When a run began, from its id (`YYYYMMDDTHHMMSSZ-…`). */
export function runStartedAt(runId: string): Date {
  const s = runId.slice(0, 16);
  return new Date(
    `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}T${s.slice(9, 11)}:${s.slice(11, 13)}:${s.slice(13, 15)}Z`,
  );
}

export type PruneAction =
  'removed' | 'would-remove' | 'kept-newest' | 'kept-young' | 'kept-writing' | 'failed';

export interface PruneEntry {
  readonly runId: string;
  readonly startedAt: string;
  readonly action: PruneAction;
  readonly detail?: string;
}

export interface PruneOptions {
  readonly olderThanMs: number;
  readonly keep: number;
  readonly dryRun: boolean;
  readonly now?: Date;
}

export async function pruneRuns(root: string, options: PruneOptions): Promise<PruneEntry[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  // Newest first: the first `keep` are kept whatever their age.
  const runs = names.filter(isRunId).sort().reverse();
  const now = (options.now ?? new Date()).getTime();
  const out: PruneEntry[] = [];
  for (const [i, runId] of runs.entries()) {
    const startedAt = runStartedAt(runId);
    const base = { runId, startedAt: startedAt.toISOString() };
    const dir = path.join(root, runId);
    const entry = await lstat(dir).catch(() => undefined);
    // Not a run directory cfh made: a link, a file, or another user's entry (in a sticky
    // artifact root such as /tmp anyone may make one, and a recursive removal by cfh's
    // authority of what they control could be turned, by a swap mid-removal, on files
    // elsewhere). What cfh's user or root owns there, nobody else may change inside.
    if (entry === undefined || !entry.isDirectory() || !ownedByUs(entry.uid)) continue;
    if (i < options.keep) out.push({ ...base, action: 'kept-newest' });
    else if (now - startedAt.getTime() < options.olderThanMs)
      out.push({ ...base, action: 'kept-young' });
    else out.push({ ...base, ...(await removeRun(dir, options.dryRun)) });
  }
  return out;
}

function ownedByUs(uid: number): boolean {
  return uid === 0 || uid === (process.getuid?.() ?? 0);
}

async function removeRun(
  dir: string,
  dryRun: boolean,
): Promise<{ action: PruneAction; detail?: string }> {
  const lockPath = path.join(dir, RUN_FILES.lock);
  if (dryRun) {
    const writing = await lockfile
      .check(dir, { lockfilePath: lockPath, realpath: false, stale: 30_000 })
      .catch(() => false);
    return writing ? { action: 'kept-writing' } : { action: 'would-remove' };
  }
  let release: () => Promise<void>;
  try {
    // Held from here on: a writer that still runs keeps its run; a stale lock is taken over.
    release = await lockfile.lock(dir, {
      lockfilePath: lockPath,
      realpath: false,
      stale: 30_000,
      // The lock goes with the directory; its heartbeat must not throw when it finds it gone.
      onCompromised: () => undefined,
    });
  } catch {
    return { action: 'kept-writing', detail: 'its writer holds the lock' };
  }
  try {
    await removeTree(dir);
    return { action: 'removed' };
  } catch (error) {
    return { action: 'failed', detail: error instanceof Error ? error.message : String(error) };
  } finally {
    await release().catch(() => undefined);
  }
}
