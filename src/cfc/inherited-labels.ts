// A host tree a delegating run hands its child keeps at least the parent's label there
// (AH-CFC-12, AH-DEL-1): the child's CFC plan joins its own label of each mount with the
// parent's label of every parent source sharing a file with it, and the parent's workspace
// label for the workspace it is handed. Trees are compared by identity, as the mount-alias
// check compares them (host-trees.ts sharedTree), never by how their paths are spelled.
import { sharedTree, type SourceTrees } from '../host-trees.js';
import { join, sameLabel, type Label } from './label.js';
import { targetOf } from './mount-target.js';

/**
 * What a delegating run hands its child with the trees it mounts: a child profile labelling
 * one of them lower would otherwise launder what the parent's label protects.
 */
export interface InheritedLabels {
  /** The runs that delegated to the child, the nearest (its parent) last. */
  readonly ancestry?: readonly string[] | undefined;
  /** The parent's workspace label: the child's workspace is the parent's (its copy, in draft). */
  readonly workspace: Label | undefined;
  /**
   * What the parent may write into its workspace (its clearance there, itself capped by its
   * own parents): the most a child may write there. Absent: the label's confidentiality.
   */
  readonly workspaceClearance?: readonly string[] | undefined;
  /** Each of the parent's mount sources, by identity (host-trees.ts), with its label there. */
  readonly trees: readonly {
    readonly tree: SourceTrees;
    readonly label: Label | undefined;
    readonly clearance?: readonly string[] | undefined;
  }[];
}

/** How a parent holds a tree it hands on: the label it reads it under, what it may write. */
export interface HeldTree {
  readonly label: Label | undefined;
  readonly clearance?: readonly string[] | undefined;
}

/**
 * What a run hands a child of the trees it mounts: its own labels of them. `mounts` are its
 * CFC plan's (the workspace first, targets as targetOf compares them).
 */
export function inheritedFrom(
  mounts: readonly {
    readonly target: string;
    readonly label: Label | undefined;
    readonly clearance: readonly string[];
  }[],
  trees: readonly SourceTrees[],
): InheritedLabels {
  const byTarget = new Map(mounts.map((m) => [m.target, m]));
  return {
    workspace: mounts[0]?.label,
    workspaceClearance: mounts[0]?.clearance,
    // A source the plan does not list (none should be) hands on nothing vouched: unlabelled.
    trees: trees.map((tree) => {
      const m = byTarget.get(targetOf(tree.target));
      return { tree, label: m?.label, clearance: m?.clearance };
    }),
  };
}

/**
 * The parent's labels of the tree a child mounts at `target`: the parent's workspace label
 * for the child's workspace, and the label of every parent source sharing a file with the
 * child's source there (`hostSources`: the child's, by identity).
 */
export function parentLabels(
  target: string,
  isWorkspace: boolean,
  inherited: InheritedLabels | undefined,
  hostSources: readonly SourceTrees[] | undefined,
): HeldTree[] {
  if (inherited === undefined) return [];
  const own = hostSources?.find((t) => targetOf(t.target) === target);
  return [
    ...(isWorkspace
      ? [{ label: inherited.workspace, clearance: inherited.workspaceClearance }]
      : []),
    ...(own === undefined
      ? []
      : inherited.trees.filter((p) => sharedTree(own, p.tree) !== undefined)),
  ];
}

/**
 * The join of a child's own label with its parent's (more secret, less trusted); a tree
 * either side leaves unlabelled stays unlabelled, of unknown confidentiality.
 */
export function atLeast(
  own: Label | undefined,
  parents: readonly (Label | undefined)[],
): Label | undefined {
  let out = own;
  for (const p of parents) {
    if (out === undefined || p === undefined) return undefined;
    out = join(out, p);
  }
  return out;
}

/** The label a child mounts a tree under, and whether the parent's raised its own. */
export function raisedBy(
  own: Label | undefined,
  parents: readonly (Label | undefined)[],
): { label: Label | undefined; raised: boolean } {
  if (parents.length === 0) return { label: own, raised: false };
  const l = atLeast(own, parents);
  const same = l === undefined || own === undefined ? l === own : sameLabel(l, own);
  return { label: l, raised: !same };
}

/**
 * What a child may write into a tree its parent hands on: at most what the parent may write
 * there (its clearance, itself capped by its own parents: so a grandchild is held to what
 * every ancestor reads the tree under, not to a middle child's label). A child cleared
 * higher there would write a value an ancestor then reads under its lower label (AH-CFC-12,
 * AH-DEL-1). A tree the parent leaves unlabelled caps nothing: the child's label of it is
 * unlabelled.
 */
export function cappedByParents(
  clearance: readonly string[],
  parents: readonly HeldTree[],
): string[] {
  const capped = parents.some((p) => p.label === undefined)
    ? clearance
    : clearance.filter((a) =>
        parents.every((p) => (p.clearance ?? p.label?.confidentiality ?? []).includes(a)),
      );
  return [...new Set(capped)].sort();
}
