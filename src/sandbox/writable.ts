// Whether the sandbox user can write each `rw` mount, decided at planning, before any
// engine object or run directory exists (AH-INV-4): without it a root-owned checkout
// mounted for `nobody` fails every write inside with EACCES, and the run looks like the
// command's fault (docs/operators.md, "Who owns what").
//
// What is checked: the top directory of each `rw` source, as the object planning resolved
// (its device and inode), for "create an entry here" (write and search):
// - a read-only file system, by access(2) as cfh (EROFS comes before any permission);
// - cfh is root and the sandbox uid is not 0: the kernel itself, asked by a probe process
//   that enters the directory as root and then becomes the sandbox's uid and gid with no
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
import { accessSync, constants, lstatSync, type BigIntStats } from 'node:fs';
import { ConfigError, ContainmentError, errorMessage } from '../errors.js';
import type { SpecMount } from '../substrate/container-spec.js';
import type { HostIdentity } from './sandbox-user.js';
import { WORKSPACE_TARGET } from './mount-policy.js';

export interface WriteVerdict {
  readonly writable: boolean;
  /** `kernel`: the probe asked the kernel as the sandbox user; `mode-bits`: read from lstat. */
  readonly by: 'read-only-fs' | 'kernel' | 'mode-bits';
}

interface Id {
  readonly uid: number;
  readonly gid: number;
}

/** The class of the mode bits that applies to this uid and gid (no supplementary groups). */
export function modeAllowsWrite(owner: Id, mode: number, who: Id): boolean {
  if (owner.uid === who.uid) return (mode & 0o300) === 0o300;
  if (owner.gid === who.gid) return (mode & 0o030) === 0o030;
  return (mode & 0o003) === 0o003;
}

/** Runs `test -w . && test -x .` in `dir` as `who`, or undefined when it could not ask. */
function kernelAllowsWrite(dir: string, who: Id): boolean | undefined {
  // libuv enters `cwd` before setgroups([])/setgid/setuid, so the parents need not be
  // searchable by the sandbox user: the engine bind-mounts the directory, not its path.
  const r = spawnSync('/bin/sh', ['-c', 'test -w . && test -x .'], {
    cwd: dir,
    uid: who.uid,
    gid: who.gid,
    env: {},
    stdio: 'ignore',
    timeout: 5000,
  });
  if (r.error !== undefined || r.signal !== null) return undefined;
  return r.status === 0 ? true : r.status === 1 ? false : undefined;
}

function readOnlyFs(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return false;
  } catch (error) {
    return error instanceof Error && 'code' in error && error.code === 'EROFS';
  }
}

function selfAllowsWrite(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function writeVerdict(
  dir: string,
  owner: Id,
  mode: number,
  who: Id,
  host: HostIdentity,
): WriteVerdict {
  if (readOnlyFs(dir)) return { writable: false, by: 'read-only-fs' };
  if (host.uid === 0 && who.uid !== 0) {
    const kernel = kernelAllowsWrite(dir, who);
    if (kernel !== undefined) return { writable: kernel, by: 'kernel' };
  }
  if (modeAllowsWrite(owner, mode, who)) return { writable: true, by: 'mode-bits' };
  // Not root: the bits refuse; an ACL entry or a supplementary group may grant cfh's user.
  if (host.uid !== 0 && who.uid === host.uid && selfAllowsWrite(dir))
    return { writable: true, by: 'kernel' };
  return { writable: false, by: 'mode-bits' };
}

function statOfChecked(mount: SpecMount): BigIntStats {
  let s: BigIntStats | undefined;
  try {
    s = lstatSync(mount.source, { bigint: true });
  } catch {
    s = undefined;
  }
  if (
    s === undefined ||
    mount.identity === undefined ||
    String(s.dev) !== mount.identity.dev ||
    String(s.ino) !== mount.identity.ino
  ) {
    throw new ContainmentError(
      'mount_source_changed',
      `mount source '${mount.source}' (at ${mount.target}) is no longer the object cfh checked; refusing to plan the run`,
      { source: mount.source, target: mount.target },
    );
  }
  return s;
}

/**
 * Refuses the run (`mount_not_writable`, exit 125) when the sandbox user cannot create
 * entries in an `rw` mount's top directory, naming the fixes.
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
    const s = statOfChecked(m);
    const owner = { uid: Number(s.uid), gid: Number(s.gid) };
    const mode = Number(s.mode) & 0o7777;
    let verdict: WriteVerdict;
    try {
      verdict = writeVerdict(m.source, owner, mode, who, host);
    } catch (error) {
      throw new ConfigError(
        'mount_not_writable',
        `cannot tell whether the sandbox user ${user} can write ${m.source}: ${errorMessage(error)}`,
        { source: m.source, target: m.target },
      );
    }
    if (verdict.writable) continue;
    throw new ConfigError('mount_not_writable', refusal(m, user, owner, mode, who, verdict), {
      source: m.source,
      target: m.target,
      value: user,
    });
  }
}

function refusal(
  m: SpecMount,
  user: string,
  owner: Id,
  mode: number,
  who: Id,
  verdict: WriteVerdict,
): string {
  const workspace = m.target === WORKSPACE_TARGET;
  const what = workspace ? m.source : `${m.source} (mounted rw at ${m.target})`;
  if (verdict.by === 'read-only-fs')
    return `the sandbox user ${user} cannot write ${what}: it is on a read-only file system; remount it read-write${workspace ? ' or use --workspace-mode draft' : ''}`;
  const bits = modeAllowsWrite(owner, mode, who)
    ? `, mode ${mode.toString(8)}, refused by an ACL or file attribute`
    : `, mode ${mode.toString(8)}`;
  // `--user` as the owner helps only where the bits let the owner write.
  const flag =
    owner.uid === 0 ? '--user 0 (explicit root)' : `--user ${owner.uid}:${owner.gid} (its owner)`;
  const asOwner =
    (mode & 0o300) === 0o300 ? `run with ${flag}` : `chmod u+wx it and run with ${flag}`;
  const fixes = workspace
    ? `${asOwner}, chown it to ${user}, or --workspace-mode draft`
    : `${asOwner} or chown it to ${user}`;
  return `the sandbox user ${user} cannot write ${what} (owned by ${owner.uid}:${owner.gid}${bits}); ${fixes}`;
}
