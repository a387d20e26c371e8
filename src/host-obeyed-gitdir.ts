// Class 9, a directory git takes for a repository whatever it is named: the one predicate the
// apply gate (workspace/host-obeyed-gate.ts, over a patch's after state and the host) and the
// rw end walk (sandbox/host-obeyed-watch.ts, over what the walk saw) both ask, so the two
// ends cannot disagree on what a repository is.
//
// How git decides, run in a directory (setup.c, `setup_git_directory_gently`): it tries the
// directory's `.git` (a directory, or a file `gitdir: X`, X then checked the same way), then
// the directory itself as a bare repository, then each parent. `is_git_directory(D)` holds
// when D has a valid `HEAD`, an `objects` directory and a `refs` directory, the latter two
// read in the common directory when D has a `commondir` file (a linked worktree's git
// directory). So two shapes make git obey what a directory holds (its `config`: core.fsmonitor,
// aliases, its `hooks`):
// - a git directory: `HEAD` with `objects` or `commondir` (the `refs` check left out: a
//   directory one entry short of being a repository is held too, fail closed);
// - a common directory a `commondir` file names: `objects` and `refs`, no `HEAD` needed; git
//   reads its `config` and runs its `hooks`.
// Names are compared without regard to case (a case-insensitive file system finds `head` as
// `HEAD`, as host-obeyed.ts compares its names).
import path from 'node:path';

/** The entries of a directory that can make it a git directory, lower-cased. */
export const GIT_DIRECTORY_MARKS: ReadonlySet<string> = new Set([
  'head',
  'objects',
  'commondir',
  'refs',
]);

/** Whether a directory whose entries `has` answers for is one git takes for a repository. */
export function isGitDirectoryShape(has: (name: string) => boolean): boolean {
  return (has('HEAD') && (has('objects') || has('commondir'))) || (has('objects') && has('refs'));
}

const join = (dir: string, name: string): string => (dir === '' ? name : `${dir}/${name}`);

/**
 * The directories, among `paths` and each of their ancestors up to the top (`''`), that git
 * takes for a repository, as `has` (relative, `/`-separated paths) sees the tree: what is held
 * at and below each. Each directory is asked once.
 */
export function gitDirectoriesAbove(
  paths: Iterable<string>,
  has: (rel: string) => boolean,
): Set<string> {
  const shaped = new Set<string>();
  const seen = new Set<string>();
  for (const p of paths) {
    for (let d = p; ; d = path.posix.dirname(d)) {
      const dir = d === '.' ? '' : d;
      if (seen.has(dir)) break;
      seen.add(dir);
      if (isGitDirectoryShape((name) => has(join(dir, name)))) shaped.add(dir);
      if (dir === '') break;
    }
  }
  return shaped;
}
