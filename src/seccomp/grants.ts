// A profile's seccomp grants, checked before any container exists (AH-INV-4): unknown names
// and grants that contradict another field of the profile are ConfigErrors.
import { ConfigError } from '../errors.js';
import { NEVER_GRANTED_WHOLE } from './argument-rules.js';
import { seccompData } from './seccomp-data.js';
import { hasEgress, type NetworkMode } from '../config/postures.js';

export interface SeccompGrants {
  readonly allowPtrace?: boolean | undefined;
  readonly allowIoUring?: boolean | undefined;
  readonly allowUserNamespaces?: boolean | undefined;
  /** The i386 and x32 ABIs (32-bit programs); without it they are killed (SIGSYS). */
  readonly allow32BitAbis?: boolean | undefined;
  readonly allow: readonly string[];
}

function contradiction(message: string, field: string, value: unknown): ConfigError {
  return new ConfigError('seccomp_contradiction', message, { field, value });
}

export function checkGrants(
  grants: SeccompGrants,
  networkMode: NetworkMode,
  runtime: 'runc' | 'runsc',
): void {
  const data = seccompData();
  const unknown = grants.allow.filter((n) => !data.known.has(n));
  if (unknown.length > 0) {
    throw new ConfigError(
      'seccomp_unknown_syscall',
      `seccomp.allow: unknown syscall name(s) ${unknown.map((n) => `'${n}'`).join(', ')}`,
      { field: 'seccomp.allow', value: unknown },
    );
  }
  const flagged: [boolean | undefined, string, readonly string[]][] = [
    [grants.allowPtrace, 'allowPtrace', data.groups.ptrace],
    [grants.allowIoUring, 'allowIoUring', data.groups.ioUring],
    [grants.allowUserNamespaces, 'allowUserNamespaces', [...data.groups.userNamespaces, 'clone']],
  ];
  for (const [flag, field, names] of flagged) {
    const clash = grants.allow.filter((n) => names.includes(n));
    if (flag === false && clash.length > 0) {
      throw contradiction(
        `seccomp.allow: ${clash.join(', ')} contradicts seccomp.${field}: false`,
        'seccomp.allow',
        clash,
      );
    }
  }
  if (!hasEgress(networkMode) && grants.allow.includes('socket')) {
    throw contradiction(
      "seccomp.allow: 'socket' contradicts network.mode: disabled (which allows loopback TCP/UDP, unix and netlink sockets only, never AF_PACKET, raw or other families)",
      'seccomp.allow',
      'socket',
    );
  }
  if (grants.allow.includes('clone')) {
    throw contradiction(
      "seccomp.allow: 'clone' is always allowed without namespace flags; use allowUserNamespaces for the rest",
      'seccomp.allow',
      'clone',
    );
  }
  const setid = grants.allow.filter((n) => NEVER_GRANTED_WHOLE.includes(n));
  if (setid.length > 0) {
    throw contradiction(
      `seccomp.allow: ${setid.map((n) => `'${n}'`).join(', ')} cannot be granted whole: it is always allowed without S_ISUID/S_ISGID in the mode, and set-id bits are never granted (openat2, whose mode lies in memory, answers ENOSYS)`,
      'seccomp.allow',
      setid,
    );
  }
  if (grants.allow32BitAbis === true) check32BitAbis(networkMode, runtime);
}

/**
 * With the 32-bit ABIs every rule must still hold through each of them. All argument rules
 * do (same index on every ABI) but one: an i386 program makes sockets through
 * socketcall(2), whose arguments, the address family among them, lie in memory a filter
 * cannot read. libseccomp turns a socket(2) rule into a socketcall(SYS_SOCKET) rule
 * without the argument check, so "unix, netlink and loopback TCP/UDP only" could not be kept.
 */
function check32BitAbis(networkMode: NetworkMode, runtime: 'runc' | 'runsc'): void {
  if (!hasEgress(networkMode)) {
    throw contradiction(
      'seccomp.allow32BitAbis contradicts network.mode: disabled: i386 programs create sockets through socketcall(), whose address family lies in memory a filter cannot read, so AF_PACKET, raw and other families could not be refused',
      'seccomp.allow32BitAbis',
      true,
    );
  }
  if (runtime === 'runsc') {
    throw contradiction(
      'seccomp.allow32BitAbis contradicts runtime: runsc: gVisor does not implement the i386 or x32 ABI (an int 0x80 runs as the x86_64 call of that number), so 32-bit programs cannot run there',
      'seccomp.allow32BitAbis',
      true,
    );
  }
}
