// Which host trees two mount sources share, compared by identity, not by how their paths are
// spelled (AH-CONT-1, AH-CFC-2). A path is one name of a directory among many: a bind mount
// makes a tree reachable under another path (`ws/alias` bound from `/srv/secrets`), so two
// sources whose paths share no prefix may hold the same files. What no spelling changes:
// - an object's device and inode (read from the descriptor cfh resolved it by);
// - a directory's place: its file system and its path from that file system's root. A
//   directory has exactly one (directories have no hard links), and the kernel's mount table
//   says for every mounted tree where in its file system the tree starts, so a directory has
//   the same place through every bind mount that reaches it (sandbox/mount-table.ts);
// - the trees mounted beneath a source, from the same table: a bind mount of X below S makes
//   X's tree reachable through S (draft mode's copy reads through it, as does anything on the
//   host that reads the source).
// One tree holds another when both lie on one file system and one's place is at or below the
// other's. A file may have other names (hard links) anywhere on its file system, which only a
// walk of every tree could find: a file source with more than one name is taken to share
// files with every tree on its file system. Nothing here walks a tree; the work is bounded by
// the sources and the mount points the table lists beneath them.

/** Where a tree starts: its file system (`major:minor`) and the path from that one's root. */
export interface TreePlace {
  readonly device: string;
  readonly path: string;
}

/** A tree mounted beneath a source: reachable through it. */
export interface MountedTree {
  /** The mount point, as the host names it. */
  readonly at: string;
  readonly place: TreePlace;
}

/** A resolved mount source, by identity. */
export interface SourceTrees {
  readonly target: string;
  /** The host path it was resolved to: for errors only, never compared. */
  readonly source: string;
  readonly identity: { readonly dev: string; readonly ino: string };
  readonly kind: 'directory' | 'file';
  /** How many names the object has: a file with more may be reached through any of them. */
  readonly names: number;
  readonly place: TreePlace;
  readonly beneath: readonly MountedTree[];
}

/** Two sources that share files: `inner`'s are readable through `outer`, as `how` says. */
export interface SharedTree {
  readonly inner: SourceTrees;
  readonly outer: SourceTrees;
  readonly how: string;
}

/** Whether `outer`'s tree holds `inner`'s place (the same place included). */
export function holds(outer: TreePlace, inner: TreePlace): boolean {
  if (outer.device !== inner.device) return false;
  const prefix = outer.path.endsWith('/') ? outer.path : `${outer.path}/`;
  return inner.path === outer.path || inner.path.startsWith(prefix);
}

function where(p: TreePlace): string {
  return `${p.path} on file system ${p.device}`;
}

function sameObject(a: SourceTrees, b: SourceTrees): boolean {
  return (
    (a.identity.dev === b.identity.dev && a.identity.ino === b.identity.ino) ||
    (a.kind === 'directory' &&
      b.kind === 'directory' &&
      holds(a.place, b.place) &&
      holds(b.place, a.place))
  );
}

/** A file with other names on a file system `outer` reaches: one of them may lie in it. */
function otherNames(inner: SourceTrees, outer: SourceTrees): string | undefined {
  if (inner.kind !== 'file' || inner.names < 2) return undefined;
  const reached = [outer.place, ...outer.beneath.map((b) => b.place)];
  if (!reached.some((p) => p.device === inner.place.device)) return undefined;
  return `'${inner.source}' is a file with ${inner.names} names on file system ${inner.place.device}, which '${outer.source}' reaches, and another name may lie in it (cfh does not search trees for them)`;
}

/**
 * How the whole of `inner` lies in a tree reachable through `outer`: `outer`'s own tree
 * (below it; the same object too when `same` says so) or a tree mounted beneath it; or a
 * file of `inner`'s with another name on their file system. Undefined: it does not.
 */
export function liesIn(
  inner: SourceTrees,
  outer: SourceTrees,
  options: { readonly same: boolean },
): string | undefined {
  if (sameObject(inner, outer))
    return options.same
      ? `'${inner.source}' is the same ${inner.kind} as '${outer.source}'`
      : undefined;
  if (holds(outer.place, inner.place))
    return `'${inner.source}' is ${where(inner.place)}, inside ${outer.place.path}`;
  for (const b of outer.beneath)
    if (holds(b.place, inner.place))
      return `'${inner.source}' is reachable through '${outer.source}': the tree mounted at '${b.at}' is ${where(b.place)}`;
  return otherNames(inner, outer);
}

/**
 * Whether `a` and `b` share any file, either way: one lies in a tree the other reaches, a
 * tree mounted beneath one holds part of the other, or trees mounted beneath both overlap.
 */
export function sharedTree(a: SourceTrees, b: SourceTrees): SharedTree | undefined {
  for (const [inner, outer] of [
    [a, b],
    [b, a],
  ] as const) {
    const how = liesIn(inner, outer, { same: true });
    if (how !== undefined) return { inner, outer, how };
  }
  for (const [inner, outer] of [
    [a, b],
    [b, a],
  ] as const)
    for (const x of outer.beneath) {
      if (holds(inner.place, x.place))
        return {
          inner,
          outer,
          how: `part of '${inner.source}' is reachable through '${outer.source}': the tree mounted at '${x.at}' is ${where(x.place)}`,
        };
      for (const y of inner.beneath)
        if (holds(x.place, y.place) || holds(y.place, x.place))
          return {
            inner,
            outer,
            how: `the trees mounted at '${y.at}' and '${x.at}' overlap (${where(y.place)}; ${x.place.path})`,
          };
    }
  return undefined;
}
