// Whether the sandbox user can write each `rw` mount, decided at planning, before any
// engine object or run directory exists (AH-INV-4): without it a root-owned checkout
// mounted for `nobody` fails every write inside with EACCES, and the run looks like the
// command's fault (docs/operators.md, "Who owns what").
//
// What is checked: each `rw` source, opened (no link followed) and matched to the object
// planning resolved (its device and inode): a directory for "create an entry here" (write
// and search), a file for write:
// - a read-only file system, by access(2) as cfh (EROFS comes before any permission);
// - cfh is root and the sandbox uid is not 0: the kernel itself, asked by a probe process
//   that holds the open object and becomes the sandbox's uid and gid with no
//   supplementary groups and no capabilities, as the sandbox has: mode bits, POSIX ACLs,
//   the immutable attribute, all as the kernel will judge them inside;
// - otherwise (cfh is not root and cannot become another user, or the sandbox is uid 0,
//   whose capabilities are dropped so it has no DAC override): the mode bits for the
//   sandbox's uid and primary gid. ACLs are not read there (Node reads no extended
//   attributes): where the bits refuse but the kernel lets cfh's own user (the same uid)
//   write, an ACL entry or a supplementary group grants it, which cfh cannot tell apart,
//   and the run is not refused.
// Files and directories below the top one are not checked (a walk of a repository on the
// cold path of every run); the operators' guide says so.
import { spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, fstatSync, openSync, type BigIntStats } from 'node:fs';
import { ConfigError, ContainmentError, errorMessage } from '../errors.js';
import type { SpecMount } from '../substrate/container-spec.js';
import type { HostIdentity } from './sandbox-user.js';
import { WORKSPACE_TARGET } from './mount-policy.js';

export interface WriteVerdict {
  readonly writable: boolean;
  /** `kernel`: the probe asked the kernel as the sandbox user; `mode-bits`: read from fstat. */
  readonly by: 'read-only-fs' | 'kernel' | 'mode-bits';
}

interface Id {
  readonly uid: number;
  readonly gid: number;
}

/**
 * The class of the mode bits that applies to this uid and gid (no supplementary groups):
 * a directory needs write and search to create an entry, a file write.
 */
export function modeAllowsWrite(owner: Id, mode: number, who: Id, directory = true): boolean {
  const need = directory ? 0o3 : 0o2;
  const shift = owner.uid === who.uid ? 6 : owner.gid === who.gid ? 3 : 0;
  return ((mode >> shift) & need) === need;
}

/**
 * Asks the kernel as `who` about the object open on `fd`, given to the probe as its stdin
 * and named `/proc/self/fd/0`: a magic link, so no path to it is walked and its parents
 * need not be searchable (the engine bind-mounts the object, not its path). libuv drops the
 * groups (setgroups([])), then sets the gid and uid, which leaves no capability.
 */
function kernelAllowsWrite(fd: number, who: Id, directory: boolean): boolean | undefined {
  const test = directory
    ? 'test -w /proc/self/fd/0 && test -x /proc/self/fd/0'
    : 'test -w /proc/self/fd/0';
  const r = spawnSync('/bin/sh', ['-c', test], {
    cwd: '/',
    uid: who.uid,
    gid: who.gid,
    env: {},
    stdio: [fd, 'ignore', 'ignore'],
    timeout: 5000,
  });
  if (r.error !== undefined || r.signal !== null) return undefined;
  return r.status === 0 ? true : r.status === 1 ? false : undefined;
}

/** access(2) as cfh on the open object: EROFS comes before any permission. */
function readOnlyFs(fd: number): boolean {
  try {
    accessSync(`/proc/self/fd/${fd}`, constants.W_OK);
    return false;
  } catch (error) {
    return error instanceof Error && 'code' in error && error.code === 'EROFS';
  }
}

function selfAllowsWrite(fd: number, directory: boolean): boolean {
  try {
    accessSync(`/proc/self/fd/${fd}`, constants.W_OK | (directory ? constants.X_OK : 0));
    return true;
  } catch {
    return false;
  }
}

export interface OpenObject {
  readonly fd: number;
  readonly owner: Id;
  readonly mode: number;
  readonly directory: boolean;
}

export function writeVerdict(o: OpenObject, who: Id, host: HostIdentity): WriteVerdict {
  if (readOnlyFs(o.fd)) return { writable: false, by: 'read-only-fs' };
  if (host.uid === 0 && who.uid !== 0) {
    const kernel = kernelAllowsWrite(o.fd, who, o.directory);
    if (kernel !== undefined) return { writable: kernel, by: 'kernel' };
  }
  if (modeAllowsWrite(o.owner, o.mode, who, o.directory))
    return { writable: true, by: 'mode-bits' };
  // Not root: the bits refuse; an ACL entry or a supplementary group may grant cfh's user.
  if (host.uid !== 0 && who.uid === host.uid && selfAllowsWrite(o.fd, o.directory))
    return { writable: true, by: 'kernel' };
  return { writable: false, by: 'mode-bits' };
}

/** Opens the source without following a link and checks it is the object planning resolved. */
function openChecked(mount: SpecMount): OpenObject {
  let fd: number | undefined;
  let s: BigIntStats | undefined;
  try {
    fd = openSync(mount.source, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    s = fstatSync(fd, { bigint: true });
  } catch {
    s = undefined;
  }
  if (
    fd === undefined ||
    s === undefined ||
    mount.identity === undefined ||
    String(s.dev) !== mount.identity.dev ||
    String(s.ino) !== mount.identity.ino
  ) {
    if (fd !== undefined) closeSync(fd);
    throw new ContainmentError(
      'mount_source_changed',
      `mount source '${mount.source}' (at ${mount.target}) is no longer the object cfh checked; refusing to plan the run`,
      { source: mount.source, target: mount.target },
    );
  }
  return {
    fd,
    owner: { uid: Number(s.uid), gid: Number(s.gid) },
    mode: Number(s.mode) & 0o7777,
    directory: s.isDirectory(),
  };
}

/**
 * Refuses the run (`mount_not_writable`, exit 125) when the sandbox user cannot write an
 * `rw` mount's source (create entries in a directory, write a file), naming the fixes.
 */
export function checkWritableMounts(
  mounts: readonly SpecMount[],
  user: string,
  host: HostIdentity,
): void {
  const [uid = NaN, gid = NaN] = user.split(':').map(Number);
  const who = { uid, gid };
  for (const m of mounts) {
    if (m.mode !== 'rw') continue;
    const o = openChecked(m);
    let verdict: WriteVerdict;
    try {
      verdict = writeVerdict(o, who, host);
    } catch (error) {
      throw new ConfigError(
        'mount_not_writable',
        `cannot tell whether the sandbox user ${user} can write ${m.source}: ${errorMessage(error)}`,
        { source: m.source, target: m.target },
      );
    } finally {
      closeSync(o.fd);
    }
    if (verdict.writable) continue;
    throw new ConfigError('mount_not_writable', refusal(m, user, o, who, verdict), {
      source: m.source,
      target: m.target,
      value: user,
    });
  }
}

function refusal(
  m: SpecMount,
  user: string,
  o: OpenObject,
  who: Id,
  verdict: WriteVerdict,
): string {
  const { owner, mode } = o;
  const workspace = m.target === WORKSPACE_TARGET;
  const what = workspace ? m.source : `${m.source} (mounted rw at ${m.target})`;
  if (verdict.by === 'read-only-fs')
    return `the sandbox user ${user} cannot write ${what}: it is on a read-only file system; remount it read-write${workspace ? ' or use --workspace-mode draft' : ''}`;
  const bits = modeAllowsWrite(owner, mode, who, o.directory)
    ? `, mode ${mode.toString(8)}, refused by an ACL or file attribute`
    : `, mode ${mode.toString(8)}`;
  // `--user` as the owner helps only where the bits let the owner write.
  const flag =
    owner.uid === 0 ? '--user 0 (explicit root)' : `--user ${owner.uid}:${owner.gid} (its owner)`;
  const asOwner = modeAllowsWrite(owner, mode, owner, o.directory)
    ? `run with ${flag}`
    : `chmod u+w${o.directory ? 'x' : ''} it and run with ${flag}`;
  const fixes = workspace
    ? `${asOwner}, chown it to ${user}, or --workspace-mode draft`
    : `${asOwner} or chown it to ${user}`;
  return `the sandbox user ${user} cannot write ${what} (owned by ${owner.uid}:${owner.gid}${bits}); ${fixes}`;
}
