// The filter's argument rules: syscalls allowed only for some argument values. A rule lists
// syscalls by name, so libseccomp applies it to every ABI the filter lists, at the same
// argument index; every index below is the same for x86_64, i386 and x32 (checked against
// arch/x86/entry/syscalls/syscall_{32,64}.tbl). Which names are ruled is data
// (seccomp/denied.json `conditional`); the unit tests check the two agree.

// Linux constants (include/uapi/linux/sched.h, socket.h, personality.h, stat.h, fcntl.h).
const CLONE_NAMESPACE_FLAGS = 0x7e020000; // NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;
const SOCK_TYPE_MASK = 0xf; // the type without SOCK_NONBLOCK / SOCK_CLOEXEC
const SOCK_STREAM = 1;
const SOCK_DGRAM = 2;
const IPPROTO_TCP = 6;
const IPPROTO_UDP = 17;
const ENOSYS = 38;
const DEFAULT_PERSONALITIES = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff];
const S_ISUID_S_ISGID = 0o6000;
const O_CREAT = 0o100;
const O_TMPFILE_BIT = 0o20000000; // __O_TMPFILE: O_TMPFILE is this bit with O_DIRECTORY

export interface RuleArg {
  readonly index: number;
  /** The mask for SCMP_CMP_MASKED_EQ (libseccomp's first datum), else the value. */
  readonly value: number;
  readonly valueTwo: number;
  readonly op: 'SCMP_CMP_EQ' | 'SCMP_CMP_NE' | 'SCMP_CMP_MASKED_EQ';
}

export interface Rule {
  readonly names: string[];
  readonly action: 'SCMP_ACT_ALLOW' | 'SCMP_ACT_ERRNO';
  readonly errnoRet?: number;
  /** All must hold (one rule); several rules for one name are alternatives. */
  readonly args?: RuleArg[];
}

/** `(argument & mask) == 0`. */
function noBits(index: number, mask: number): RuleArg {
  return { index, value: mask, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' };
}

function allowWhen(name: string, ...args: RuleArg[]): Rule {
  return { names: [name], action: 'SCMP_ACT_ALLOW', args };
}

/** Answered as if absent, so libc falls back to a call whose arguments a filter can read. */
function absent(name: string): Rule {
  return { names: [name], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS };
}

/** clone only without CLONE_NEW* flags (its flags are argument 0 on every ABI). */
export function cloneRules(): Rule[] {
  return [allowWhen('clone', noBits(0, CLONE_NAMESPACE_FLAGS))];
}

/** clone3 passes its flags in memory a filter cannot read. */
export function clone3Rules(): Rule[] {
  return [absent('clone3')];
}

export function personalityRules(): Rule[] {
  return DEFAULT_PERSONALITIES.map((value) =>
    allowWhen('personality', { index: 0, value, valueTwo: 0, op: 'SCMP_CMP_EQ' }),
  );
}

/**
 * Network disabled: socket(2) for AF_UNIX, AF_NETLINK, and AF_INET/AF_INET6 as TCP or UDP
 * only. The container's namespace holds `lo` and nothing else (`--network none`), so an
 * inet socket reaches only the container itself (AH-CONT-4): servers and clients on
 * 127.0.0.1 and ::1 work, as under `docker run --network none`. Raw, packet and every other
 * type or protocol (ICMP, SCTP, MPTCP, ...) stay refused by the filter, whatever the
 * capabilities: their kernel code is attack surface that a loopback test does not need.
 * Planning mode: never AF_UNIX (with the network disabled, AF_NETLINK and the loopback inet
 * sockets; else every other family). A planning run's mounts are read-only, yet connect(2)
 * to a unix socket on one reaches a host service, and connect's address lies in memory a
 * filter cannot read: so no unix socket is made at all. A loopback inet socket reaches no
 * host service: the namespace has no route out. socketpair(2) stays: its two ends are the
 * caller's own, named nowhere.
 */
export function socketRules(networkDisabled: boolean, planning: boolean): Rule[] {
  if (planning && !networkDisabled)
    return [allowWhen('socket', { index: 0, value: AF_UNIX, valueTwo: 0, op: 'SCMP_CMP_NE' })];
  const family = (value: number): RuleArg => ({ index: 0, value, valueTwo: 0, op: 'SCMP_CMP_EQ' });
  const type = (value: number): RuleArg => ({
    index: 1,
    value: SOCK_TYPE_MASK,
    valueTwo: value,
    op: 'SCMP_CMP_MASKED_EQ',
  });
  const protocol = (value: number): RuleArg => ({
    index: 2,
    value,
    valueTwo: 0,
    op: 'SCMP_CMP_EQ',
  });
  const inet = [AF_INET, AF_INET6].flatMap((f) =>
    [
      [SOCK_STREAM, IPPROTO_TCP],
      [SOCK_DGRAM, IPPROTO_UDP],
    ].flatMap(([t = 0, p = 0]) => [
      allowWhen('socket', family(f), type(t), protocol(0)),
      allowWhen('socket', family(f), type(t), protocol(p)),
    ]),
  );
  const local = (planning ? [AF_NETLINK] : [AF_UNIX, AF_NETLINK]).map((f) =>
    allowWhen('socket', family(f)),
  );
  return [...local, ...inet];
}

/** Where each mode-taking call has its mode (and, for open, its flags). */
const MODE_ARGUMENT: readonly { name: string; mode: number; flags?: number }[] = [
  { name: 'chmod', mode: 1 },
  { name: 'fchmod', mode: 1 },
  { name: 'fchmodat', mode: 2 },
  { name: 'fchmodat2', mode: 2 },
  { name: 'creat', mode: 1 },
  { name: 'mknod', mode: 1 },
  { name: 'mknodat', mode: 2 },
  { name: 'open', flags: 1, mode: 2 },
  { name: 'openat', flags: 2, mode: 3 },
];

/**
 * No S_ISUID or S_ISGID through any call that sets a mode: a set-id file left in an rw
 * mount keeps its bits on the host, where another user who runs it gets the workspace
 * owner's uid or gid. The kernel ignores open's mode without O_CREAT or O_TMPFILE, so an
 * open without those is allowed whatever its mode argument holds. openat2 takes its mode
 * in memory: absent, so libc falls back to openat. mkdir needs no rule: the kernel masks
 * S_ISUID/S_ISGID out of its mode (a directory gets S_ISGID only from a set-gid parent,
 * which the host-side sweep reports).
 */
export function setidRules(): Rule[] {
  const rules: Rule[] = [absent('openat2')];
  for (const { name, mode, flags } of MODE_ARGUMENT) {
    rules.push(allowWhen(name, noBits(mode, S_ISUID_S_ISGID)));
    if (flags !== undefined) rules.push(allowWhen(name, noBits(flags, O_CREAT | O_TMPFILE_BIT)));
  }
  return rules;
}

/** Every name some argument rule above decides (for the data's consistency check). */
export const ARGUMENT_RULED: readonly string[] = [
  'clone',
  'clone3',
  'personality',
  'socket',
  'openat2',
  ...MODE_ARGUMENT.map((m) => m.name),
];

/** Names a profile may not grant whole: each would undo its rule's purpose. */
export const NEVER_GRANTED_WHOLE: readonly string[] = [
  'openat2',
  ...MODE_ARGUMENT.map((m) => m.name),
];

/**
 * fcntl(2) commands a planning container may use: every one but those that take a lock or a
 * lease (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE). A lock needs no write
 * permission (a read lock through a read-only descriptor, flock on any), yet a lock a
 * sandbox holds on a file of a read-only mount makes a host process that locks it wait or
 * fail: a channel out of a read-only container. A lease on a file the sandbox user owns
 * delays a host open of it. Values from include/uapi/asm-generic/fcntl.h and linux/fcntl.h.
 */
const PLANNING_FCNTL_COMMANDS = [
  0, // F_DUPFD
  1, // F_GETFD
  2, // F_SETFD
  3, // F_GETFL
  4, // F_SETFL
  5, // F_GETLK
  8, // F_SETOWN
  9, // F_GETOWN
  10, // F_SETSIG
  11, // F_GETSIG
  12, // F_GETLK64 (i386)
  15, // F_SETOWN_EX
  16, // F_GETOWN_EX
  17, // F_GETOWNER_UIDS
  36, // F_OFD_GETLK
  1025, // F_GETLEASE
  1030, // F_DUPFD_CLOEXEC
  1031, // F_SETPIPE_SZ
  1032, // F_GETPIPE_SZ
  1033, // F_ADD_SEALS
  1034, // F_GET_SEALS
  1035, // F_GET_RW_HINT
  1036, // F_SET_RW_HINT
  1037, // F_GET_FILE_RW_HINT
  1038, // F_SET_FILE_RW_HINT
];

/**
 * Planning mode: no file lock or lease (see PLANNING_FCNTL_COMMANDS); flock(2) is not
 * allowed at all (EPERM, the default action). The command is argument 1 of fcntl and
 * fcntl64 on every ABI.
 */
export function planningLockRules(): Rule[] {
  return ['fcntl', 'fcntl64'].flatMap((name) =>
    PLANNING_FCNTL_COMMANDS.map((value) =>
      allowWhen(name, { index: 1, value, valueTwo: 0, op: 'SCMP_CMP_EQ' }),
    ),
  );
}
