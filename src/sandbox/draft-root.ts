// Where a draft copy of the workspace may live (governance extension, "Draft vs commit
// policy"; AH-CONT-1, AH-CONT-5). Each draft is a fresh private directory
// (`cfh-draft-<run>-<random>`, mode 0700, cfh's own) under the draft root, holding the copy
// the sandbox mounts. Checked at planning: the draft root lies outside every mount source
// (or another mount would show the copy, and the copy of a workspace could land inside
// itself) and outside the artifact root (the sandbox never reaches the evidence); and cfh
// must be able to give the copy to the sandbox user and take it back: as root it chowns
// the copy, as anyone else the sandbox must run as cfh's own user.
import { realpathSync, statSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import type { SpecMount } from '../substrate/container-spec.js';
import { isWithin } from './mount-policy.js';
import type { HostIdentity, SandboxUser } from './sandbox-user.js';

export interface DraftPlan {
  /** The realpath of the directory drafts are made in. */
  readonly root: string;
  /** Owner given to the copy (cfh runs as root); undefined: cfh's own user. */
  readonly owner: { readonly uid: number; readonly gid: number } | undefined;
}

export function planDraft(
  draftRoot: string,
  mounts: readonly SpecMount[],
  artifactRoot: string,
  user: SandboxUser,
  host: HostIdentity,
): DraftPlan {
  let root: string;
  try {
    root = realpathSync(draftRoot);
    if (!statSync(root).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new ConfigError(
      'draft_root_missing',
      `workspace mode draft: the draft root '${draftRoot}' (CFH_DRAFT_ROOT, else TMPDIR) is not an existing directory`,
      { field: 'workspace.mode', value: draftRoot },
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
      `workspace mode draft: the sandbox would run as ${user.user}, and only cfh running as root can give the copy to another user and remove what that user writes; run as root or with user: auto`,
      { field: 'user', value: user.user },
    );
  }
  return { root, owner: host.uid === 0 ? { uid, gid } : undefined };
}
