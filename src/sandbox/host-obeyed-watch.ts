// Class 9, what cannot be held: at the end of a run, once every container is gone, the walk
// of the rw mounts (setid-sweep.ts, one walk for both) finds every host-obeyed path
// (src/host-obeyed.ts) the run created or changed where nothing held it read-only: a `.git`
// where there was none (a workspace inside a repository, a nested repository), a `.envrc`
// in a subdirectory, a submodule's `.git` file. A path is the run's when its inode changed
// at or after the run's start (ctime: creation, rename, link, a write or a chmod; the
// sandbox cannot set it back), so no listing is taken before the run. What the top-level
// mounts held read-only (host-obeyed-mounts.ts) is left out, by device and inode: the
// sandbox could not write it, and a host tool refreshing `.git/index` meanwhile is not the
// sandbox planting anything.
import type { BigIntStats } from 'node:fs';
import { hostObeyedPrefix } from '../host-obeyed.js';
import { underHeld } from '../host-obeyed-git.js';
import { GIT_DIRECTORY_MARKS, gitDirectoriesAbove } from '../host-obeyed-gitdir.js';
import type { SpecMount } from '../substrate/container-spec.js';

/** The most paths a finding names; the count is always whole. */
export const MAX_NAMED = 100;

export interface HostObeyedPath {
  /** The rw mount's host path. */
  readonly root: string;
  /** Relative to it, `/`-separated. */
  readonly path: string;
  readonly type: 'file' | 'directory' | 'symlink' | 'other';
}

export interface HostObeyedFinding {
  /** Changed entries, the shallowest of each subtree (below one named, only counted). */
  readonly paths: readonly HostObeyedPath[];
  /** Every changed entry, named or not. */
  readonly count: number;
  /** Named entries past MAX_NAMED. */
  readonly omitted: number;
}

export class HostObeyedWatch {
  readonly #roots: ReadonlySet<string>;
  readonly #held: ReadonlySet<string>;
  readonly #sinceNs: bigint;
  /** Per root, the paths its repository sends git to (host-obeyed-git.ts). */
  readonly #repository: ReadonlyMap<string, readonly string[]>;
  /** Entries that can make a directory a git directory (`root\0rel`, lower-cased). */
  readonly #marks = new Set<string>();
  /** Every entry the run created or changed, in the walk's order (parents first). */
  readonly #changed: (HostObeyedPath & { readonly obeyed: boolean })[] = [];

  /**
   * `roots`: the host rw mounts to watch (a draft copy is not one: its changes reach the
   * host only through an apply, which names them). `held`: the read-only mounts over
   * host-obeyed entries. `since`: before any container of the run.
   */
  constructor(
    roots: readonly string[],
    held: readonly SpecMount[],
    since: Date,
    repository: readonly { readonly source: string; readonly paths: readonly string[] }[] = [],
  ) {
    this.#roots = new Set(roots);
    this.#repository = new Map(repository.map((r) => [r.source, r.paths]));
    this.#held = new Set(
      held.flatMap((m) =>
        m.identity === undefined ? [] : [`${m.identity.dev}:${m.identity.ino}`],
      ),
    );
    this.#sinceNs = BigInt(since.getTime()) * 1_000_000n;
  }

  /** The sweep's visitor (SetidSweepOptions.visit). */
  readonly visit = (root: string, rel: string, st: BigIntStats): 'skip' | undefined => {
    if (!this.#roots.has(root)) return undefined;
    if (!rel.includes('/') && this.#held.has(`${String(st.dev)}:${String(st.ino)}`)) return 'skip';
    const lower = rel.toLowerCase();
    if (GIT_DIRECTORY_MARKS.has(lower.slice(lower.lastIndexOf('/') + 1)))
      this.#marks.add(`${root}\0${lower}`);
    if (st.ctimeNs < this.#sinceNs) return undefined;
    const obeyed =
      hostObeyedPrefix(rel) !== undefined ||
      underHeld(rel, this.#repository.get(root) ?? []) !== undefined;
    this.#changed.push({ root, path: rel, type: typeOf(st), obeyed });
    return undefined;
  };

  /**
   * What the run changed that a host tool obeys: a listed name, a path the repository sends
   * git to, or an entry at or below a directory git takes for a repository as the walk saw
   * the tree (host-obeyed-gitdir.ts, the apply gate's predicate): known only once the walk
   * has seen a directory's every entry, so judged here.
   */
  finding(): HostObeyedFinding {
    const gitDirs = new Map<string, string[]>();
    for (const root of this.#roots) {
      const has = (rel: string): boolean => this.#marks.has(`${root}\0${rel.toLowerCase()}`);
      const changed = this.#changed.filter((c) => c.root === root).map((c) => c.path);
      gitDirs.set(root, [...gitDirectoriesAbove(changed, has)]);
    }
    const named = new Set<string>();
    const paths: HostObeyedPath[] = [];
    let count = 0;
    let omitted = 0;
    for (const c of this.#changed) {
      if (!c.obeyed && underHeld(c.path, gitDirs.get(c.root) ?? []) === undefined) continue;
      count += 1;
      const parts = c.path.split('/');
      const below = parts.some(
        (_, i) => i > 0 && named.has(`${c.root}\0${parts.slice(0, i).join('/')}`),
      );
      if (below) continue;
      named.add(`${c.root}\0${c.path}`);
      if (paths.length >= MAX_NAMED) omitted += 1;
      else paths.push({ root: c.root, path: c.path, type: c.type });
    }
    return { paths, count, omitted };
  }
}

function typeOf(st: BigIntStats): HostObeyedPath['type'] {
  if (st.isDirectory()) return 'directory';
  if (st.isFile()) return 'file';
  if (st.isSymbolicLink()) return 'symlink';
  return 'other';
}
