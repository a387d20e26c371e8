// Derives each container's seccomp filter from its profile (issue 4). Deterministic:
// sorted names, sorted rules, canonical JSON; the sha256 is over the exact bytes the
// engine receives and the run directory keeps.
import { createHash } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { canonicalJson } from '../evidence/canonical-json.js';
import { seccompData } from './seccomp-data.js';
import type { SeccompFilter } from '../substrate/container-spec.js';

export interface SeccompGrants {
  readonly allowPtrace?: boolean | undefined;
  readonly allowIoUring?: boolean | undefined;
  readonly allowUserNamespaces?: boolean | undefined;
  readonly allow: readonly string[];
}

export type DerivedSeccomp = SeccompFilter;

// Linux constants (include/uapi/linux/sched.h, socket.h, personality.h).
const CLONE_NAMESPACE_FLAGS = 0x7e020000; // NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
const AF_UNIX = 1;
const AF_NETLINK = 16;
const ENOSYS = 38;
const DEFAULT_PERSONALITIES = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];

interface Rule {
  names: string[];
  action: 'SCMP_ACT_ALLOW' | 'SCMP_ACT_ERRNO';
  errnoRet?: number;
  args?: { index: number; value: number; valueTwo: number; op: string }[];
}

export function deriveSeccomp(
  grants: SeccompGrants,
  networkMode: 'disabled' | 'allowlist' | 'open',
  runtime: 'runc' | 'runsc' = 'runc',
): DerivedSeccomp {
  const data = seccompData();
  checkGrants(grants, networkMode);
  const granted = new Set<string>(grants.allow);
  if (grants.allowPtrace === true) data.groups.ptrace.forEach((n) => granted.add(n));
  if (grants.allowIoUring === true) data.groups.ioUring.forEach((n) => granted.add(n));
  const userns = grants.allowUserNamespaces === true;
  if (userns) data.groups.userNamespaces.forEach((n) => granted.add(n));
  const socketsLimited = networkMode === 'disabled';

  // clone, clone3, personality and socket are never in the base list: each is either
  // granted whole here or allowed by an argument rule below, never both (one action each).
  const unconditional = new Set([...data.allow, ...granted]);
  if (userns) unconditional.add('clone');
  if (!socketsLimited) unconditional.add('socket');
  // gVisor answers clone3 with ENOSYS itself, but applies an OCI errno rule as EPERM, on
  // which glibc does not fall back to clone: threads would fail. Under runsc the filter
  // lets clone3 through to gVisor's own ENOSYS.
  if (runtime === 'runsc') unconditional.add('clone3');

  const rules: Rule[] = [{ names: [...unconditional].sort(), action: 'SCMP_ACT_ALLOW' }];
  if (!userns) {
    rules.push({
      names: ['clone'],
      action: 'SCMP_ACT_ALLOW',
      args: [arg(0, CLONE_NAMESPACE_FLAGS, 0, 'SCMP_CMP_MASKED_EQ')],
    });
  }
  if (!unconditional.has('clone3')) {
    // clone3 passes its flags in memory a filter cannot read: refuse it as absent, so libc
    // falls back to clone, whose flags the rule above checks.
    rules.push({ names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS });
  }
  if (!unconditional.has('personality')) {
    for (const value of DEFAULT_PERSONALITIES) {
      rules.push({
        names: ['personality'],
        action: 'SCMP_ACT_ALLOW',
        args: [arg(0, value, 0, 'SCMP_CMP_EQ')],
      });
    }
  }
  if (socketsLimited) {
    for (const family of [AF_UNIX, AF_NETLINK]) {
      rules.push({
        names: ['socket'],
        action: 'SCMP_ACT_ALLOW',
        args: [arg(0, family, 0, 'SCMP_CMP_EQ')],
      });
    }
  }
  const filter = {
    defaultAction: 'SCMP_ACT_ERRNO',
    defaultErrnoRet: 1, // EPERM
    architectures: [...data.architectures],
    syscalls: rules.sort((a, b) => canonicalJson(a).localeCompare(canonicalJson(b))),
  };
  const json = canonicalJson(filter);
  return {
    source: `derived:${data.baseSchema}`,
    sha256: createHash('sha256').update(json).digest('hex'),
    json,
    grants: {
      allowPtrace: grants.allowPtrace === true,
      allowIoUring: grants.allowIoUring === true,
      allowUserNamespaces: userns,
      allow: [...grants.allow].sort(),
      socketFamilies: socketsLimited ? 'unix-netlink-only' : 'all',
    },
  };
}

function arg(
  index: number,
  value: number,
  valueTwo: number,
  op: string,
): { index: number; value: number; valueTwo: number; op: string } {
  return { index, value, valueTwo, op };
}

/** Unknown names and grants that contradict another field fail before any container exists. */
function checkGrants(grants: SeccompGrants, networkMode: string): void {
  const data = seccompData();
  const unknown = grants.allow.filter((n) => !data.known.has(n));
  if (unknown.length > 0) {
    throw new ConfigError(
      'seccomp_unknown_syscall',
      `seccomp.allow: unknown syscall name(s) ${unknown.map((n) => `'${n}'`).join(', ')}`,
      {
        field: 'seccomp.allow',
        value: unknown,
      },
    );
  }
  const contradictions: [boolean | undefined, string, readonly string[]][] = [
    [grants.allowPtrace, 'allowPtrace', data.groups.ptrace],
    [grants.allowIoUring, 'allowIoUring', data.groups.ioUring],
    [grants.allowUserNamespaces, 'allowUserNamespaces', [...data.groups.userNamespaces, 'clone']],
  ];
  for (const [flag, field, names] of contradictions) {
    const clash = grants.allow.filter((n) => names.includes(n));
    if (flag === false && clash.length > 0) {
      throw new ConfigError(
        'seccomp_contradiction',
        `seccomp.allow: ${clash.join(', ')} contradicts seccomp.${field}: false`,
        {
          field: 'seccomp.allow',
          value: clash,
        },
      );
    }
  }
  if (networkMode === 'disabled' && grants.allow.includes('socket')) {
    throw new ConfigError(
      'seccomp_contradiction',
      "seccomp.allow: 'socket' contradicts network.mode: disabled (which refuses AF_INET, AF_INET6 and AF_PACKET sockets)",
      { field: 'seccomp.allow', value: 'socket' },
    );
  }
  if (grants.allow.includes('clone')) {
    throw new ConfigError(
      'seccomp_contradiction',
      "seccomp.allow: 'clone' is always allowed without namespace flags; use allowUserNamespaces for the rest",
      {
        field: 'seccomp.allow',
        value: 'clone',
      },
    );
  }
}
