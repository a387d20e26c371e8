// Who the command runs as inside the container. Never uid 0 unless the profile says so
// literally: when cfh itself runs as root (as CI does), `auto` picks the workspace's owner,
// or `nobody` when root owns the workspace too (docs/operators.md, "Who owns what").
import { ConfigError } from '../errors.js';
import type { SpecMount } from '../substrate/container-spec.js';
import { ownerOf } from './mount-policy.js';

export const NOBODY = '65534:65534';

export interface SandboxUser {
  readonly user: string;
  /** Why this user: `invoking-user`, `workspace-owner`, `nobody`, `profile`. */
  readonly reason: 'invoking-user' | 'workspace-owner' | 'nobody' | 'profile';
}

export interface HostIdentity {
  readonly uid: number;
  readonly gid: number;
}

export function currentHostIdentity(): HostIdentity {
  return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
}

export function resolveSandboxUser(
  profileUser: string,
  workspace: SpecMount,
  host: HostIdentity,
): SandboxUser {
  if (profileUser !== 'auto') {
    if (!/^\d+:\d+$/.test(profileUser)) {
      throw new ConfigError('invalid_user', `user: '${profileUser}' is not 'auto' or UID:GID`, {
        field: 'user',
        value: profileUser,
      });
    }
    return { user: profileUser, reason: 'profile' };
  }
  if (host.uid !== 0) return { user: `${host.uid}:${host.gid}`, reason: 'invoking-user' };
  // The owner of the object checked, not of whatever the path names by now.
  const owner = ownerOf(workspace);
  if (owner.uid !== 0) return { user: `${owner.uid}:${owner.gid}`, reason: 'workspace-owner' };
  return { user: NOBODY, reason: 'nobody' };
}
