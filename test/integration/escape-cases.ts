// The escape battery's cases (escape-battery.test.ts), named as the probe names them
// (test/fixtures/probe/probe.c): the deny list, the argument-ruled calls, sockets and
// scenarios, each through every ABI it exists in.
import { ABIS, COMPAT_ABIS, via, type Abi } from './escape-support.js';
import { MUST_DENY, NOT_A_SYSCALL_ON } from '../fixtures/must-deny.js';

/** Every syscall the derived filter refuses unless the profile grants it, per ABI. */
export function denyListOf(abi: Abi): string[] {
  return MUST_DENY.filter((n) => !NOT_A_SYSCALL_ON[abi].includes(n));
}
export const DENY_LIST = denyListOf('x86_64');

/** Granted by a profile flag rather than by name in this battery. */
export const FLAG_GROUPS = {
  allowPtrace: ['ptrace'],
  allowIoUring: ['io_uring_setup', 'io_uring_enter', 'io_uring_register'],
  allowUserNamespaces: ['unshare'],
} as const;
export const FLAG_GRANTED: readonly string[] = Object.values(FLAG_GROUPS).flat();
/** The deny list less the flag groups: what the `allow: [...]` profile grants by name. */
export const BY_NAME = DENY_LIST.filter((n) => !FLAG_GRANTED.includes(n));

export const CONDITIONAL = [
  'personality_default',
  'personality_other',
  'clone_newns',
  'clone_newuser',
  'clone_plain',
  'clone3',
] as const;
export const SOCKETS = [
  'socket_inet',
  'socket_inet6',
  'socket_packet',
  'socket_unix',
  'socket_netlink',
] as const;
/** i386's socket multiplexer: the family is in memory, where no filter can read it. */
export const SOCKETCALLS = [
  'socketcall_inet',
  'socketcall_inet6',
  'socketcall_packet',
  'socketcall_unix',
] as const;
/**
 * Every case that would make a socket the disabled network must refuse, per ABI: AF_PACKET
 * everywhere, and every family through the 32-bit ABIs, where socketcall hides the family
 * (x86_64 AF_INET/AF_INET6 TCP is allowed: the namespace has only lo, escape-loopback.test.ts).
 */
export const NETWORK_SOCKETS = [
  'socket_packet',
  ...['inet', 'inet6', 'packet'].flatMap((f) => [
    ...ABIS.filter((a) => a !== 'x86_64').map((a) => via(`socket_${f}`, a)),
    via(`socketcall_${f}`, 'i386'),
  ]),
];
/** x86_64 inet sockets the disabled network allows: they reach lo alone. */
export const LOOPBACK_SOCKETS = ['socket_inet', 'socket_inet6'] as const;
export const SCENARIOS = [
  'unshare_user',
  'mount_tmpfs',
  'ptrace_sibling',
  'load_module',
  'read_kcore',
  'write_proc_sys',
  'open_block_device',
] as const;

/** The cases that exist through `abi` (scenarios are x86_64 only). */
export function casesOf(abi: Abi): string[] {
  const calls = [
    ...denyListOf(abi),
    ...CONDITIONAL,
    ...SOCKETS,
    ...(abi === 'i386' ? SOCKETCALLS : []),
    'getpid',
  ];
  return calls.map((c) => via(c, abi));
}
export const X86_64_CASES: readonly string[] = [...casesOf('x86_64'), ...SCENARIOS];
export const COMPAT_CASES: readonly string[] = COMPAT_ABIS.flatMap((abi) => casesOf(abi));
export const ALL_CASES: readonly string[] = [...X86_64_CASES, ...COMPAT_CASES];

/**
 * Cases the kernel itself may refuse with EPERM for a missing capability before it looks
 * at the probe's arguments (all capabilities are dropped in every sandbox):
 * fsopen/fsmount/fspick/move_mount/pivot_root (CAP_SYS_ADMIN over the mount namespace,
 * may_mount), kexec_* (CAP_SYS_BOOT), *_module and load_module (CAP_SYS_MODULE; ENOSYS on
 * a kernel without modules, as here), acct (CAP_SYS_PACCT), swapoff (CAP_SYS_ADMIN),
 * reboot (CAP_SYS_BOOT), syslog (CAP_SYSLOG: with kernel.dmesg_restrict=1, a host setting
 * no container can change, every action needs it, even an invalid one), clone_newns and
 * mount_tmpfs (CAP_SYS_ADMIN), socket_packet (CAP_NET_RAW). Every other case must reach
 * the kernel with a non-EPERM answer in the unconfined control, or the probe is wrong.
 */
export const CAPABILITY_GATED = new Set([
  'fsopen',
  'fsmount',
  'fspick',
  'move_mount',
  'pivot_root',
  'kexec_load',
  'kexec_file_load',
  'init_module',
  'finit_module',
  'delete_module',
  'load_module',
  'acct',
  'swapoff',
  'reboot',
  'syslog',
  'clone_newns',
  'mount_tmpfs',
  'socket_packet',
  'socketcall_packet',
]);
export const baseName = (c: string): string => c.split('@')[0] ?? c;
