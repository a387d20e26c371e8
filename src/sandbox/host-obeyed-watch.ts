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
  readonly #named = new Set<string>();
  readonly #paths: HostObeyedPath[] = [];
  #count = 0;
  #omitted = 0;

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
    const obeyed =
      hostObeyedPrefix(rel) !== undefined ||
      underHeld(rel, this.#repository.get(root) ?? []) !== undefined;
    if (!obeyed || st.ctimeNs < this.#sinceNs) return undefined;
    this.#count += 1;
    const key = `${root}\0${rel}`;
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i += 1) {
      if (this.#named.has(`${root}\0${parts.slice(0, i).join('/')}`)) return undefined;
    }
    this.#named.add(key);
    if (this.#paths.length >= MAX_NAMED) this.#omitted += 1;
    else this.#paths.push({ root, path: rel, type: typeOf(st) });
    return undefined;
  };

  finding(): HostObeyedFinding {
    return { paths: [...this.#paths], count: this.#count, omitted: this.#omitted };
  }
}

function typeOf(st: BigIntStats): HostObeyedPath['type'] {
  if (st.isDirectory()) return 'directory';
  if (st.isFile()) return 'file';
  if (st.isSymbolicLink()) return 'symlink';
  return 'other';
}
