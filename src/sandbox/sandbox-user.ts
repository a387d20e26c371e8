// Who the command runs as inside the container. Never uid 0 unless written literally (a
// profile's `user: "0:0"`, or `--user 0`): when cfh itself runs as root (as CI does),
// `auto` picks the workspace's owner, or `nobody` when root owns the workspace too
// (docs/operators.md, "Who owns what").
import { ConfigError } from '../errors.js';
import type { SpecMount } from '../substrate/container-spec.js';
import { ownerOf } from './mount-policy.js';

export const NOBODY = '65534:65534';

export interface SandboxUser {
  readonly user: string;
  /**
   * Why this user: `invoking-user`, `workspace-owner`, `nobody`, `profile` (the profile's
   * `user`), `flag` (`--user`, over the profile).
   */
  readonly reason: 'invoking-user' | 'workspace-owner' | 'nobody' | 'profile' | 'flag';
}

export interface HostIdentity {
  readonly uid: number;
  readonly gid: number;
}

export function currentHostIdentity(): HostIdentity {
  return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
}

/** The largest id the kernel gives out: (uid_t)-1 means "unchanged" to set*id(2). */
const MAX_ID = 4294967294;

/**
 * One id as written: a canonical decimal (no sign, no leading zero, no other base), so uid
 * 0 comes only from a literal `0`; `00`, `-0`, `0x0` or 2^32 (which wraps to 0 in a 32-bit
 * uid_t) are refused rather than read as root by accident.
 */
export function parseId(text: string): number | undefined {
  if (!/^(0|[1-9]\d{0,9})$/.test(text)) return undefined;
  const n = Number(text);
  return n <= MAX_ID ? n : undefined;
}

/**
 * `--user UID[:GID]`: numeric only, as the sandbox has no name service to ask; the group
 * defaults to the uid's number (a user private group), never to 0 as the engine's own
 * default would for a uid the image does not know.
 */
export function parseUserFlag(text: string): string {
  const [uidText = '', gidText, ...rest] = text.split(':');
  const uid = parseId(uidText);
  const gid = gidText === undefined ? uid : parseId(gidText);
  if (uid === undefined || gid === undefined || rest.length > 0) {
    throw new ConfigError(
      'invalid_user',
      `--user: '${text}' is not UID[:GID] in decimal (uid 0 written as 0); for example --user 1000:1000, or --user 0 for root`,
      { field: '--user', value: text },
    );
  }
  return `${uid}:${gid}`;
}

export function resolveSandboxUser(
  profileUser: string,
  workspace: SpecMount,
  host: HostIdentity,
  flagUser?: string,
): SandboxUser {
  if (flagUser !== undefined) return { user: parseUserFlag(flagUser), reason: 'flag' };
  if (profileUser !== 'auto') {
    const [uid, gid, ...rest] = profileUser.split(':').map(parseId);
    if (uid === undefined || gid === undefined || rest.length > 0) {
      throw new ConfigError(
        'invalid_user',
        `user: '${profileUser}' is not 'auto' or UID:GID in decimal`,
        {
          field: 'user',
          value: profileUser,
        },
      );
    }
    return { user: `${uid}:${gid}`, reason: 'profile' };
  }
  if (host.uid !== 0) return { user: `${host.uid}:${host.gid}`, reason: 'invoking-user' };
  // The owner of the object checked, not of whatever the path names by now.
  const owner = ownerOf(workspace);
  if (owner.uid !== 0) return { user: `${owner.uid}:${owner.gid}`, reason: 'workspace-owner' };
  return { user: NOBODY, reason: 'nobody' };
}
