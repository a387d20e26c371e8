// Who could replace a mount source between cfh's check and the engine's mount (AH-CONT-1).
// A source is swapped by renaming an entry on its path, which needs write permission on a
// directory of that path (src/path-trust.ts names who could). Two consequences:
// - a mount source inside another rw mount of the same run can be replaced by the sandbox
//   itself (between two tool containers, say): refused at planning;
// - a source another host user could replace is mounted only where cfh can verify what the
//   engine mounted (runc: the start gate compares device and inode); under runsc, whose
//   sandbox shows virtual inodes, such a source is refused.
// POSIX ACLs are not read (Node has no API for them): a write grant through an ACL on an
// ancestor is not seen here (docs/conformance.md, deviations). Under runc the gate still
// catches the swap.
import { ConfigError } from '../errors.js';
import { isWithin } from './mount-policy.js';
import { swapperOf, type Swapper } from '../path-trust.js';
import { liesIn, sharedTree, type SourceTrees } from '../host-trees.js';
import type { SpecMount } from '../substrate/container-spec.js';

/** The trees of the mount at `mount.target` (resolveMounts placed every one). */
function treesAt(trees: readonly SourceTrees[], mount: SpecMount): SourceTrees {
  const found = trees.find((t) => t.target === mount.target);
  if (found === undefined) throw new Error(`mount ${mount.target} was not placed`);
  return found;
}

/**
 * A mount source inside the source of an rw mount of the same run: the sandbox could
 * replace it (or a directory on its path) with a symlink before a later container mounts it.
 * Inside by identity, not by spelling (host-trees.ts): named through a bind mount of the rw
 * source, it is inside all the same. Lying in a tree mounted beneath it counts too: the host
 * sees one tree there, and the refusal does not rest on the engine's binds staying
 * non-recursive. The rw source itself under another name is only a second view, as under
 * its own.
 */
export function checkNotInsideWritableMount(
  mounts: readonly SpecMount[],
  trees: readonly SourceTrees[],
): void {
  for (const m of mounts) {
    for (const rw of mounts) {
      if (rw === m || rw.mode !== 'rw') continue;
      const how = liesIn(treesAt(trees, m), treesAt(trees, rw), { same: false });
      if (how === undefined) continue;
      throw new ConfigError(
        'mount_source_in_writable_mount',
        `mount '${m.source}' at ${m.target} lies inside '${rw.source}', which is mounted rw at ${rw.target} (one host tree: ${how}): the sandbox could replace it before a later container mounts it; mount a path outside the writable mount`,
        { field: 'mounts', value: m.source },
      );
    }
  }
}

/**
 * A workspace the profile says is read-only or draft is written through no other mount: an
 * rw mount of the workspace itself, of a path inside it or of a tree mounted beneath it,
 * under any name, would write the host workspace the mode promises to leave alone (a
 * draft's changes reach it only through apply). A mount holding the workspace is refused by
 * checkNotInsideWritableMount. This also holds a child run to its parent's promise: a child
 * plans over its parent's workspace (AH-DEL-1).
 */
export function checkWorkspaceWrittenOnlyByMode(
  mounts: readonly SpecMount[],
  trees: readonly SourceTrees[],
  workspace: SpecMount,
  mode: 'ro' | 'rw' | 'draft',
): void {
  if (mode === 'rw') return;
  const ws = treesAt(trees, workspace);
  for (const m of mounts) {
    if (m === workspace || m.mode !== 'rw') continue;
    const shared = sharedTree(treesAt(trees, m), ws);
    if (shared === undefined) continue;
    throw new ConfigError(
      'mount_writes_workspace',
      `mount '${m.source}' at ${m.target} is rw and writes the workspace '${workspace.source}', whose mode is ${mode} (one host tree: ${shared.how}); mount it ro, mount a path outside the workspace, or use workspace mode rw`,
      { field: 'mounts', value: m.source },
    );
  }
}

/**
 * A child run mounts nothing that holds or lies in a path of the runs that delegated it
 * (their run directories and draft copies): read, it is their evidence or work in
 * progress; written, it would be their change or a forged record (AH-DEL-1, AH-DEL-3).
 */
export function checkClearOfAncestors(
  mounts: readonly (SpecMount & { readonly origin?: string })[],
  ancestors: readonly string[],
): void {
  for (const m of mounts) {
    const hit = ancestors.find((a) => isWithin(m.source, a) || isWithin(a, m.source));
    if (hit === undefined) continue;
    throw new ConfigError(
      'mount_overlaps_parent_run',
      `mount '${m.source}' at ${m.target} overlaps '${hit}', which belongs to a run that delegated this one (its evidence or its draft copy); a child mounts none of it`,
      { field: 'mounts', value: m.source },
    );
  }
}

/**
 * Under runsc cfh cannot verify what the engine mounted (the sandbox sees virtual inodes),
 * so every source must lie on a path only root and cfh's user can change.
 */
export function checkSwappable(
  mounts: readonly SpecMount[],
  runtime: 'runc' | 'runsc',
  trustedUid: number,
): readonly { readonly target: string; readonly swapper: Swapper }[] {
  const swappable = mounts.flatMap((m) => {
    const swapper = swapperOf(m.source, trustedUid);
    return swapper === undefined ? [] : [{ target: m.target, swapper }];
  });
  const first = swappable[0];
  if (runtime === 'runsc' && first !== undefined) {
    const m = mounts.find((x) => x.target === first.target);
    throw new ConfigError(
      'mount_source_swappable',
      `runtime runsc: the mount at ${first.target} ('${m?.source ?? ''}') could be replaced by ${first.swapper.who} (through ${first.swapper.directory}) before gVisor mounts it, and cfh cannot verify what gVisor mounted; use runc, or a source on a path only root and you can change`,
      { field: 'mounts', value: m?.source },
    );
  }
  return swappable;
}
