// Where a draft copy of the workspace may live (governance extension, "Draft vs commit
// policy"; AH-CONT-1, AH-CONT-5). Each draft is a fresh private directory
// (`cfh-draft-<run>-<random>`, mode 0700, cfh's own) under the draft root, holding the copy
// the sandbox mounts. Checked at planning: the draft root lies outside every mount source
// (or another mount would show the copy, and the copy of a workspace could land inside
// itself) and outside the artifact root (the sandbox never reaches the evidence); and cfh
// must be able to give the copy to the sandbox user and take it back: as root it chowns
// the copy, as anyone else the sandbox must run as cfh's own user.
import { lstatSync } from 'node:fs';
import { parseSize } from '../config/size.js';
import { ConfigError } from '../errors.js';
import type { SpecMount } from '../substrate/container-spec.js';
import { isWithin, ownerOf } from './mount-policy.js';
import { resolveObject, type ResolvedObject } from './source-resolution.js';
import {
  firstPlantableLink,
  firstSwapper,
  plantedLinkText,
  trustedGroupOf,
  writersOf,
} from '../path-trust.js';
import type { HostIdentity, SandboxUser } from './sandbox-user.js';

export interface DraftPlan {
  /** The realpath of the directory drafts are made in. */
  readonly root: string;
  /** Owner given to the copy (cfh runs as root); undefined: cfh's own user. */
  readonly owner: { readonly uid: number; readonly gid: number } | undefined;
  /**
   * cfh is root and another user owns the workspace: every read of the host tree and every
   * read and write of the copy is made with the sandbox user's authority, so a path the
   * workspace's owner swaps for a link mid-copy can show the copy nothing the sandbox user
   * could not read already. Undefined: cfh's own (a root-owned tree, or cfh not root).
   */
  readonly writer: { readonly uid: number; readonly gid: number } | undefined;
  /**
   * The most the copy may hold, in bytes: CFH_DRAFT_MAX_BYTES (default 8 GiB), and never
   * more than the draft root's free space less a reserve (checked when the copy is made).
   */
  readonly maxBytes: number;
  /**
   * The most new contents one patch may keep, in bytes: CFH_DRAFT_PATCH_MAX_BYTES (default
   * 256 MiB). Past it the run fails (`patch_too_large`) and no patch is kept at all.
   */
  readonly patchMaxBytes: number;
}

/** A draft copy's default bound: big for a repository, small for a disk. */
export const DRAFT_MAX_BYTES = 8 * 1024 ** 3;
/** A patch's default bound on the new contents it keeps in the artifact root. */
export const PATCH_MAX_BYTES = 256 * 1024 ** 2;

export function planDraft(
  workspace: SpecMount,
  draftRoot: string,
  mounts: readonly SpecMount[],
  artifactRoot: string,
  user: SandboxUser,
  host: HostIdentity,
  maxBytes?: string,
  patchMaxBytes?: string,
): DraftPlan {
  const limit =
    maxBytes === undefined ? DRAFT_MAX_BYTES : parseSize('CFH_DRAFT_MAX_BYTES', maxBytes);
  const patchLimit =
    patchMaxBytes === undefined
      ? PATCH_MAX_BYTES
      : parseSize('CFH_DRAFT_PATCH_MAX_BYTES', patchMaxBytes);
  let resolved: ResolvedObject | undefined;
  try {
    resolved = resolveObject(draftRoot);
  } catch {
    resolved = undefined;
  }
  if (resolved?.kind !== 'directory') {
    throw new ConfigError(
      'draft_root_missing',
      `workspace mode draft: the draft root '${draftRoot}' (CFH_DRAFT_ROOT, else TMPDIR) is not an existing directory`,
      { field: 'workspace.mode', value: draftRoot },
    );
  }
  const root = resolved.real;
  // A link a sandbox could have left on the way would choose where root makes and fills
  // drafts: the mount sources' rule (AH-CONT-1), whoever could replace the link now.
  const planted = firstPlantableLink(resolved.links, resolved.entries);
  if (planted !== undefined) {
    throw new ConfigError(
      'draft_root_shared',
      `workspace mode draft: the draft root '${draftRoot}' goes through ${plantedLinkText(planted.link, planted.maker, resolved.targets.get(planted.link))}; cfh follows no such link; set CFH_DRAFT_ROOT to a path without links`,
      { field: 'workspace.mode', value: draftRoot },
    );
  }
  // Another user who may rename entries in the draft root could swap a draft for a link
  // while cfh fills it: only a root that only root and cfh's user may change, or a sticky
  // one (/tmp), where nobody else may rename cfh's entries: judged as the walk read it.
  const d = resolved.entries.get(root) ?? lstatSync(root);
  const trusted = (uid: number): boolean => uid === 0 || uid === host.uid;
  const stickyOwned = (d.mode & 0o1000) !== 0 && trusted(d.uid);
  const above = firstSwapper([root], host.uid, resolved.entries)?.swapper;
  if (
    (writersOf(d, trusted, trustedGroupOf(host.uid)) !== undefined && !stickyOwned) ||
    above !== undefined
  ) {
    throw new ConfigError(
      'draft_root_shared',
      `workspace mode draft: another user could replace entries of the draft root '${root}'${above === undefined ? '' : ` (${above.who} through ${above.directory})`}; set CFH_DRAFT_ROOT to a directory only root and you can change, or a sticky one like /tmp`,
      { field: 'workspace.mode', value: root },
    );
  }
  for (const m of mounts) {
    if (isWithin(root, m.source)) {
      throw new ConfigError(
        'draft_root_exposed',
        `workspace mode draft: the draft root '${root}' lies inside '${m.source}', mounted at ${m.target}; set CFH_DRAFT_ROOT to a directory outside every mount`,
        { field: 'workspace.mode', value: root },
      );
    }
  }
  if (isWithin(root, artifactRoot)) {
    throw new ConfigError(
      'draft_root_exposed',
      `workspace mode draft: the draft root '${root}' lies inside the artifact root '${artifactRoot}'; set CFH_DRAFT_ROOT to a directory outside it`,
      { field: 'workspace.mode', value: root },
    );
  }
  const [uid = NaN, gid = NaN] = user.user.split(':').map(Number);
  if (host.uid !== 0 && uid !== host.uid) {
    throw new ConfigError(
      'draft_user_unsupported',
      `workspace mode draft: the sandbox would run as ${user.user}, and only cfh running as root can give the copy to another user and remove what that user writes; run as root, or with user: auto and no --user`,
      { field: 'user', value: user.user },
    );
  }
  // A tree another user owns (who could swap its paths while root copies it) is copied
  // with the sandbox user's authority; a root-owned one by root, taking only what the
  // sandbox user could read (copy-tree.ts).
  const treeOwner = ownerOf(workspace).uid;
  const writer = host.uid === 0 && treeOwner !== 0 && uid !== 0 ? { uid, gid } : undefined;
  return {
    root,
    owner: host.uid === 0 ? { uid, gid } : undefined,
    writer,
    maxBytes: limit,
    patchMaxBytes: patchLimit,
  };
}
