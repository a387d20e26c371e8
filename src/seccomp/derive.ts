// Derives each container's seccomp filter from its profile. Deterministic:
// sorted names, sorted rules, canonical JSON; the sha256 is over the exact bytes the
// engine receives and the run directory keeps.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../evidence/canonical-json.js';
import {
  clone3Rules,
  cloneRules,
  personalityRules,
  planningLockRules,
  setidRules,
  socketRules,
  type Rule,
} from './argument-rules.js';
import { checkGrants, type SeccompGrants } from './grants.js';
import { seccompData } from './seccomp-data.js';
import type { SeccompFilter } from '../substrate/container-spec.js';
import { hasEgress, type NetworkMode } from '../config/postures.js';

export type { SeccompGrants } from './grants.js';
export type DerivedSeccomp = SeccompFilter;

/** The ABIs as the evidence names them, in `architectures` order. */
const ABI_NAMES: Readonly<Record<string, string>> = {
  SCMP_ARCH_X86_64: 'x86_64',
  SCMP_ARCH_X86: 'i386',
  SCMP_ARCH_X32: 'x32',
};

export function deriveSeccomp(
  grants: SeccompGrants,
  networkMode: NetworkMode,
  runtime: 'runc' | 'runsc' = 'runc',
  /** Planning mode (`--plan`): no unix sockets, no io_uring, no file locks (argument-rules.ts). */
  planning = false,
): DerivedSeccomp {
  const data = seccompData();
  checkGrants(grants, networkMode, runtime);
  const granted = new Set<string>(grants.allow);
  if (grants.allowPtrace === true) data.groups.ptrace.forEach((n) => granted.add(n));
  // io_uring can make a socket (IORING_OP_SOCKET) that no socket(2) rule sees: never under
  // planning, whatever the profile grants.
  const ioUring = grants.allowIoUring === true && !planning;
  if (ioUring) data.groups.ioUring.forEach((n) => granted.add(n));
  if (planning) data.groups.ioUring.forEach((n) => granted.delete(n));
  const userns = grants.allowUserNamespaces === true;
  if (userns) data.groups.userNamespaces.forEach((n) => granted.add(n));
  const networkDisabled = !hasEgress(networkMode);
  const socketsLimited = networkDisabled || planning;
  const compat = grants.allow32BitAbis === true;

  // clone, clone3, personality, socket and the mode-setting calls are never in the base
  // list: each is either granted whole here or allowed by an argument rule, never both
  // (one action each).
  const unconditional = new Set([...data.allow, ...granted]);
  if (userns) unconditional.add('clone');
  if (socketsLimited) unconditional.delete('socket');
  else unconditional.add('socket');
  // Planning: no file lock or lease, which a host process locking the same file would feel
  // (argument-rules.ts planningLockRules), whatever the profile grants.
  if (planning) for (const name of ['flock', 'fcntl', 'fcntl64']) unconditional.delete(name);
  // gVisor answers clone3 with ENOSYS itself, but applies an OCI errno rule as EPERM, on
  // which glibc does not fall back to clone: threads would fail. Under runsc the filter
  // lets clone3 through to gVisor's own ENOSYS.
  if (runtime === 'runsc') unconditional.add('clone3');

  const rules: Rule[] = [{ names: [...unconditional].sort(), action: 'SCMP_ACT_ALLOW' }];
  if (!userns) rules.push(...cloneRules());
  if (!unconditional.has('clone3')) rules.push(...clone3Rules());
  if (!unconditional.has('personality')) rules.push(...personalityRules());
  if (socketsLimited) rules.push(...socketRules(networkDisabled, planning));
  if (planning) rules.push(...planningLockRules());
  rules.push(...setidRules());

  // Only the ABIs listed are filtered by these rules; a syscall through any other meets
  // libseccomp's bad-architecture action, which runc leaves at its default: the calling
  // thread is killed with SIGSYS. That is how the i386 and x32 ABIs are denied.
  const architectures = [...data.architectures, ...(compat ? data.compatArchitectures : [])];
  const filter = {
    defaultAction: 'SCMP_ACT_ERRNO',
    defaultErrnoRet: 1, // EPERM
    architectures,
    syscalls: rules.sort((a, b) => canonicalJson(a).localeCompare(canonicalJson(b))),
  };
  const json = canonicalJson(filter);
  return {
    source: `derived:${data.baseSchema}`,
    sha256: createHash('sha256').update(json).digest('hex'),
    json,
    grants: {
      allowPtrace: grants.allowPtrace === true,
      allowIoUring: ioUring,
      allowUserNamespaces: userns,
      allow32BitAbis: compat,
      allow: [...grants.allow].sort(),
      abis: architectures.map((a) => ABI_NAMES[a] ?? a),
      // Under `disabled` the inet families reach `lo` only (argument-rules.ts socketRules).
      socketFamilies: planning
        ? networkDisabled
          ? 'netlink-loopback-inet'
          : 'all-but-unix'
        : networkDisabled
          ? 'unix-netlink-loopback-inet'
          : 'all',
    },
  };
}
