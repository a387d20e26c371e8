// Class 9, the rw side: the sandbox must not plant code the host runs later. In every rw
// directory mount (the workspace first), each entry at its top whose name is on the one
// list (src/host-obeyed.ts: `.git`, `.envrc`, `.vscode`, ...) is bind-mounted over itself
// read-only, unless the operator named them writable (profile `hostObeyed: rw`,
// `--host-obeyed rw`). These mounts are cfh's own, nested in the rw mount they guard, and
// named in the spec's mount table like any other (AH-CONT-2: the evidence says what the
// container got); like any source, each is the object checked here, by device and inode,
// in every container of the run (AH-CONT-1: the re-check before each create, runc's gate).
//
// Why only the top: an entry there is a mount point in every container of the run, and its
// directory is the mount's own root, so the sandbox can neither rename nor unlink it
// (EBUSY) nor replace the directory holding it. A mount deeper down could be carried away
// with a directory above it, and a later container would then mount whatever took its
// place; so what lies below the top, and what did not exist at planning (a `.git` where
// there was none), is not held but watched: the end of the run finds what was created or
// changed (host-obeyed-watch.ts) and says so. Holding a name that does not exist would
// need a mount point in the host workspace, which would outlive a killed run.
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  readdirSync,
  realpathSync,
} from 'node:fs';
import path from 'node:path';
import { ConfigError, ContainmentError } from '../errors.js';
import { hostObeyedName } from '../host-obeyed.js';
import { gitHeldPathsSync, type GitHeldPath } from '../host-obeyed-git.js';
import { namedHeldPaths } from '../host-obeyed-named.js';
import { refuseOtherNames } from './host-obeyed-links.js';
import type { HostObeyedMode } from '../config/profile-schema.js';
import type { SpecMount } from '../substrate/container-spec.js';
import { isWithin } from './mount-policy.js';

/** Linux O_PATH (not in fs.constants). */
const O_PATH = 0o10000000;
/** A `.git` file is one line (`gitdir: PATH`); past this it is not one git wrote. */
const GITFILE_MAX_BYTES = 4096;

export interface HostObeyedPlan {
  readonly mode: HostObeyedMode;
  /** The read-only mounts over each host-obeyed entry at the top of an rw mount. */
  readonly mounts: readonly SpecMount[];
  /** The rw mounts' targets whose top was looked at (all rw directory mounts). */
  readonly guarded: readonly string[];
  /**
   * Per rw mount (by host source), the paths its repository sends git to beyond the listed
   * names (host-obeyed-git.ts), relative to it: held through their top entry, and watched;
   * and the paths a listed configuration at its top names as code to run
   * (host-obeyed-named.ts: a `yarnPath`): watched.
   */
  readonly repository: readonly { readonly source: string; readonly paths: readonly string[] }[];
}

const HINT =
  'remove or rename it, use --workspace-mode draft (an apply names each such path), or name them writable with --host-obeyed rw';

/**
 * The read-only mounts that hold the host-obeyed entries at the top of each rw directory
 * mount in `mounts` (already resolved and checked: mount-policy.ts), in `ro` mode; none in
 * `rw` mode. Refuses (125, before anything exists) an entry cfh cannot hold read-only: a
 * symbolic link, a special file, a file with another name (writable through it), a `.git`
 * file naming a git directory inside the rw mount.
 */
export function holdHostObeyed(mounts: readonly SpecMount[], mode: HostObeyedMode): HostObeyedPlan {
  const writable = mounts.filter((m) => m.mode === 'rw' && isDirectory(m.source));
  const guarded = writable.map((m) => m.target);
  // Where the host's git looks, read at run start from the repository as git reads it.
  const repository = writable.map((m) => ({
    source: m.source,
    git: gitHeldPathsSync(m.source),
  }));
  // What a held configuration names (`.yarn/releases/yarn-4.5.0.cjs`) is watched, not held
  // nor refused: holding it would take its whole top entry read-only (`.yarn`, where the
  // sandbox's own installs write), and refusing would refuse every such project in rw mode.
  const paths = repository.map((r) => ({
    source: r.source,
    paths: [...r.git.map((g) => g.path), ...namedHeldPaths(r.source).map((n) => n.path)],
  }));
  if (mode === 'rw') return { mode, mounts: [], guarded: [], repository: paths };
  return {
    mode,
    mounts: writable.flatMap((m, i) => holdTop(m, repository[i]?.git ?? [])),
    guarded,
    repository: paths,
  };
}

/**
 * What the repository sends git to, outside the listed names (`core.hooksPath tools/hooks`,
 * a gitdir `.bare`, an included file) is refused, as a `.git` file naming a git directory
 * inside the mount is: holding it would take a read-only mount over its whole top entry
 * (a deeper one could be carried away with a directory above it), making part of the
 * project itself read-only behind the operator's back. Under a listed name (`.husky/_`,
 * `.git/hooks`) it is held already.
 */
function refuseRepositoryPaths(rw: SpecMount, git: readonly GitHeldPath[]): void {
  for (const g of git) {
    const top = g.path.split('/')[0] ?? '';
    if (top !== '' && hostObeyedName(top) !== undefined) continue;
    throw new ConfigError(
      'host_obeyed_unheld',
      `'${path.join(rw.source, g.path)}' (at ${path.posix.join(rw.target, g.path)}) is where the host's git looks (${g.why}), outside the names cfh holds read-only, so the sandbox could plant what git runs there`,
      { field: 'hostObeyed', value: path.join(rw.source, g.path) },
      HINT,
    );
  }
}

function isDirectory(source: string): boolean {
  try {
    return lstatSync(source).isDirectory();
  } catch {
    return false;
  }
}

function holdTop(rw: SpecMount, git: readonly GitHeldPath[]): SpecMount[] {
  let dir: number;
  try {
    dir = openSync(rw.source, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    throw changed(rw, `cannot be opened (${codeOf(error)})`);
  }
  try {
    // The listing is of the object planning checked, not of whatever the path names now.
    const s = fstatSync(dir, { bigint: true });
    if (
      rw.identity !== undefined &&
      (String(s.dev) !== rw.identity.dev || String(s.ino) !== rw.identity.ino)
    )
      throw changed(rw, 'is no longer the object cfh checked');
    const here = `/proc/self/fd/${dir}`;
    const held = readdirSync(here)
      .filter((name) => hostObeyedName(name) !== undefined)
      .sort();
    const entries = held.map((name) => holdEntry(rw, here, name));
    refuseRepositoryPaths(rw, git);
    refuseOtherNames(rw, here, held);
    return entries;
  } finally {
    closeSync(dir);
  }
}

function holdEntry(rw: SpecMount, here: string, name: string): SpecMount {
  const source = path.join(rw.source, name);
  const target = path.posix.join(rw.target, name);
  const s = lstatSync(`${here}/${name}`, { bigint: true });
  const refuse = (what: string): ConfigError =>
    new ConfigError(
      'host_obeyed_unheld',
      `'${source}' (at ${target}) is ${what}, so cfh cannot hold it read-only, and a tool on the host obeys it (src/host-obeyed.ts)`,
      { field: 'hostObeyed', value: source },
      HINT,
    );
  if (s.isSymbolicLink()) throw refuse('a symbolic link');
  if (!s.isDirectory() && !s.isFile()) throw refuse('neither a directory nor a regular file');
  if (s.isFile() && s.nlink > 1n)
    throw refuse(
      `a file with ${String(s.nlink)} names (the sandbox could write it through another)`,
    );
  if (s.isFile() && name.toLowerCase() === '.git') refuseGitdirInside(rw, here, name, refuse);
  return { source, target, mode: 'ro', identity: { dev: String(s.dev), ino: String(s.ino) } };
}

/**
 * A `.git` file (a worktree's, a submodule's) names the git directory git obeys. Held
 * read-only, the pointer cannot be changed; the directory it names must lie outside the rw
 * mount too, or the sandbox would write the hooks and config through it.
 */
function refuseGitdirInside(
  rw: SpecMount,
  here: string,
  name: string,
  refuse: (what: string) => ConfigError,
): void {
  const fd = openSync(
    `${here}/${name}`,
    constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
  );
  let text: string;
  try {
    if (!fstatSync(fd).isFile()) throw refuse('no longer a regular file');
    const buffer = Buffer.alloc(GITFILE_MAX_BYTES);
    text = buffer.subarray(0, readSync(fd, buffer, 0, GITFILE_MAX_BYTES, 0)).toString('utf8');
  } finally {
    closeSync(fd);
  }
  const gitdir = /^gitdir: (.+)$/m.exec(text)?.[1]?.trim();
  if (gitdir === undefined) return;
  const resolved = path.resolve(rw.source, gitdir);
  // Lexically and as the kernel resolves it: a link on the way may lead back inside.
  if (isWithin(resolved, rw.source) || isWithin(realOrSelf(resolved), rw.source))
    throw refuse(`a .git file naming '${gitdir}', a git directory inside the writable mount`);
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

function changed(rw: SpecMount, what: string): ContainmentError {
  return new ContainmentError(
    'mount_source_changed',
    `mount source '${rw.source}' (at ${rw.target}) ${what}; refusing to plan the run`,
    { source: rw.source, target: rw.target },
  );
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'error';
}
