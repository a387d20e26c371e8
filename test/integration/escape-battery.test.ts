// The seccomp escape battery (AH-CONT-1): a static probe
// (test/fixtures/probe/probe.c) tries every syscall on the deny list and a handful of
// escape scenarios inside real sandboxes, through each x86 ABI (x86_64, i386 `int $0x80`,
// x32), all cases of a profile in ONE container, and reports one errno per case.
// Set-id files are escape-setid.test.ts.
//
// How an EPERM is proven to come from the filter: the probe's arguments make each call
// fail with something other than EPERM once the kernel sees it (EBADF, EFAULT, EINVAL,
// ESRCH, ENOSYS where the kernel lacks the feature, ...). A control container, hardened
// like a sandbox (uid 65534, all capabilities dropped, no-new-privileges, no network) but
// with `seccomp=unconfined`, records what the kernel itself answers on this machine. Where
// the control's answer is not EPERM, the default profile's EPERM came from the filter, and
// a profile granting the syscall must give the control's answer back. Where the control
// says EPERM too, the kernel refuses the call for a missing capability before looking at
// the arguments (CAPABILITY_GATED below): the filter cannot be told apart there, and the
// battery asserts only that the call stays refused, granted or not.
//
// Measured on this machine (kernel 6.18, Docker 20.10.24; "docker" = the engine's own
// default filter, "cfh" = the derived default profile):
//
//   case                unconfined  docker    cfh      | case               unconfined docker cfh
//   ptrace              ESRCH       ESRCH     EPERM    | io_uring_setup     EFAULT     EFAULT EPERM
//   process_vm_readv    EINVAL      EPERM     EPERM    | io_uring_enter     EBADF      EBADF  EPERM
//   process_vm_writev   EINVAL      EPERM     EPERM    | io_uring_register  EINVAL     EINVAL EPERM
//   kcmp, pidfd_getfd   EINVAL      EPERM     EPERM    | acct, swapoff      EPERM      EPERM  EPERM
//   bpf, perf_event_open EINVAL     EPERM     EPERM    | swapon             EINVAL     EPERM  EPERM
//   userfaultfd         EINVAL      EPERM     EPERM    | reboot, syslog     EPERM      EPERM  EPERM
//   keyctl              EOPNOTSUPP  EPERM     EPERM    | open_by_handle_at  EFAULT     EPERM  EPERM
//   add_key/request_key EFAULT      EPERM     EPERM    | name_to_handle_at  EINVAL     EPERM  EPERM
//   mount               EFAULT      EPERM     EPERM    | personality_other  ok         EPERM  EPERM
//   umount2, fsconfig   EINVAL      EPERM     EPERM    | clone_newns        EPERM      EPERM  EPERM
//   fsopen, fsmount     EPERM       EPERM     EPERM    | clone_newuser      ok         EPERM  EPERM
//   fspick, move_mount  EPERM       EPERM     EPERM    | clone3             ok         ENOSYS ENOSYS
//   open_tree           EINVAL      EPERM     EPERM    | socket_inet(6)     ok         ok     ok (lo only)
//   mount_setattr       EINVAL      EPERM     EPERM    | socket_packet      EPERM      EPERM  EPERM
//   pivot_root          EPERM       EPERM     EPERM    | unshare_user       ok         EPERM  EPERM
//   chroot              EFAULT      EPERM     EPERM    | ptrace_sibling     ok         ok     EPERM
//   unshare             EINVAL      EPERM     EPERM    | load_module        ENOSYS     EPERM  EPERM
//   setns               EBADF       EPERM     EPERM    | mount_tmpfs        EPERM      EPERM  EPERM
//   kexec_*, *_module   ENOSYS      EPERM     EPERM    | read_kcore         ENOENT     ENOENT ENOENT
//                                                      | write_proc_sys     EACCES     EACCES EACCES
//                                                      | open_block_device  ENOENT     ENOENT ENOENT
//
// (This kernel is built without modules and kexec, hence ENOSYS; on a kernel with them
// those calls are capability-gated: the control then says EPERM and the battery treats
// them as CAPABILITY_GATED automatically, because it reads the control, not this table.)
//
// The 32-bit ABIs. This kernel (6.18) has IA32 emulation and no x32 (CONFIG_X86_X32_ABI
// off): unconfined, every i386 call answers exactly as its x86_64 twin (which also checks
// the probe's i386 numbers) and every x32 call ENOSYS. The filter lists SCMP_ARCH_X86_64
// alone unless a profile says `allow32BitAbis: true`; libseccomp's bad-architecture
// action, which runc leaves at its default, then kills the calling thread with SIGSYS for
// any syscall through i386 or x32. Before that change the filter listed SCMP_ARCH_X86 and
// SCMP_ARCH_X32 and allowed socketcall, so `socketcall_inet@i386` made an AF_INET socket
// with the network disabled (seen: ok). gVisor (runsc, ptrace platform) does not implement
// the i386 ABI: an `int $0x80` runs as the x86_64 syscall of that number, under the same
// filter (`getpid@i386` is writev there: EBADF), and x32 numbers meet the filter's EPERM.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cfh, containersOfRun, objectsOwnedBy, removeDir, runIdOf, tempDir } from './helpers.js';
import { buildProbe, removeProbe, type ProbeResult } from './probe.js';
import {
  ABIS,
  COMPAT_ABIS,
  acceptedAbis,
  describeAbis,
  describeResult,
  removeLeftControls,
  resultOf,
  runBattery,
  runscRegistered as isRunscRegistered,
  unconfinedControl,
  via,
  type Abi,
  type BatteryRun,
} from './escape-support.js';
import {
  ALL_CASES,
  BY_NAME,
  CAPABILITY_GATED,
  COMPAT_CASES,
  DENY_LIST,
  FLAG_GRANTED,
  FLAG_GROUPS,
  LOOPBACK_SOCKETS,
  NETWORK_SOCKETS,
  X86_64_CASES,
  baseName,
  casesOf,
  denyListOf,
} from './escape-cases.js';

let scratch: string;
let workspace: string;
let probeDir: string;
let runscRegistered = false;
let n = 0;

/** The default profile, one granting the deny list by name, one granting by flags. */
let byDefault: BatteryRun;
let byName: BatteryRun;
let byFlags: BatteryRun;
/** The 32-bit ABIs granted (network open: the grant is refused with it disabled). */
let with32Bit: BatteryRun;
/** What the kernel answers without any filter, on this machine. */
let control: Map<string, ProbeResult>;
let accepted: Record<Abi, boolean>;

/** One profile file `extends: default` with the given extra YAML. */
async function profile(name: string, body: string): Promise<string> {
  const file = path.join(scratch, `${name}.yaml`);
  await writeFile(file, `extends: default\nname: ${name}\n${body}`);
  return file;
}

function battery(args: readonly string[]): Promise<BatteryRun> {
  n += 1;
  return runBattery({
    artifactRoot: path.join(scratch, `art-${n}`),
    workspace,
    probeDir,
    args,
    cases: ALL_CASES,
  });
}

/** One row per call: the control's and the run's answer through each ABI. */
function table(title: string, results: Map<string, ProbeResult>): void {
  const cell = (m: Map<string, ProbeResult>, c: string, abi: Abi): string =>
    (ALL_CASES.includes(via(c, abi)) ? describeResult(m.get(via(c, abi))) : '-').padEnd(13);
  const names = [...new Set(ALL_CASES.map(baseName))];
  const rows = names.map(
    (c) =>
      `  ${c.padEnd(20)} ${ABIS.map((a) => cell(control, c, a)).join('')}| ${ABIS.map((a) => cell(results, c, a)).join('')}`,
  );
  const heads = ABIS.map((a) => a.padEnd(13)).join('');
  console.log(
    `${title}\n  ${''.padEnd(20)} ${'unconfined'.padEnd(39)}| result\n  ${'case'.padEnd(20)} ${heads}| ${heads}\n${rows.join('\n')}`,
  );
}

beforeAll(async () => {
  scratch = await tempDir('escape');
  workspace = path.join(scratch, 'ws');
  await mkdir(workspace);
  probeDir = await buildProbe();
  runscRegistered = await isRunscRegistered();

  byDefault = await battery([]);
  control = await unconfinedControl({
    image: byDefault.snapshot.image.ref as string,
    probeDir,
    cases: ALL_CASES,
  });
  accepted = acceptedAbis(control);
  byName = await battery([
    '--profile',
    await profile(
      'grant-by-name',
      `seccomp:\n  allow: [${[...BY_NAME, 'personality'].join(', ')}]\n`,
    ),
  ]);
  byFlags = await battery([
    '--profile',
    await profile(
      'grant-by-flags',
      'seccomp:\n  allowPtrace: true\n  allowIoUring: true\n  allowUserNamespaces: true\n',
    ),
  ]);
  with32Bit = await battery([
    '--profile',
    await profile('grant-32-bit', 'network:\n  mode: open\nseccomp:\n  allow32BitAbis: true\n'),
  ]);
});
afterAll(async () => {
  // The control is removed in its own finally; this catches one left by an interrupted run.
  await removeLeftControls();
  await removeDir(scratch);
  await removeProbe();
});

describe('the probe and its control', () => {
  it('prints one line per case in every run, and the sandboxes are gone', async () => {
    for (const run of [byDefault, byName, byFlags, with32Bit]) {
      expect(run.exitCode, run.stderr).toBe(0);
      expect([...run.results.keys()]).toEqual(ALL_CASES);
      expect(await containersOfRun(runIdOf(run.runDir))).toEqual([]);
    }
    expect([...control.keys()]).toEqual(ALL_CASES);
    table('unconfined control vs derived default profile (runc):', byDefault.results);
  });

  it('reaches the kernel with a non-EPERM answer in every case that needs no capability', () => {
    // Guards the probe's argument choices: if one of these said EPERM unconfined, the
    // battery could not tell the filter's EPERM from the kernel's.
    for (const c of X86_64_CASES) {
      if (CAPABILITY_GATED.has(c)) continue;
      expect(describeResult(control.get(c)), c).not.toBe('EPERM');
    }
  });

  it('says which ABIs this kernel accepts without a filter; an accepted one answers as x86_64', () => {
    console.log(`ABIs accepted without a filter (runc, this kernel): ${describeAbis(control)}`);
    expect(accepted.x86_64).toBe(true);
    for (const abi of COMPAT_ABIS) {
      const calls = casesOf(abi).filter((c) => X86_64_CASES.includes(baseName(c)));
      const got = Object.fromEntries(calls.map((c) => [c, describeResult(control.get(c))]));
      // Accepted: the same kernel answer as the x86_64 call (this checks the probe's
      // syscall numbers for the ABI too). Not accepted: the kernel refuses every call alike.
      const want = Object.fromEntries(
        calls.map((c) => [
          c,
          accepted[abi]
            ? describeResult(control.get(baseName(c)))
            : describeResult(control.get(via('getpid', abi))),
        ]),
      );
      expect(got, abi).toEqual(want);
    }
    // The route the review found: socketcall makes an AF_INET socket when nothing filters.
    if (accepted.i386) expect(describeResult(control.get('socketcall_inet@i386'))).toBe('ok');
  });
});

describe('the default profile (runc, kernel seccomp)', () => {
  it('refuses every deny-list syscall with EPERM', () => {
    const got = Object.fromEntries(
      DENY_LIST.map((c) => [c, describeResult(byDefault.results.get(c))]),
    );
    expect(got).toEqual(Object.fromEntries(DENY_LIST.map((c) => [c, 'EPERM'])));
  });

  it('is not just breaking everything: getpid, plain clone, unix and netlink sockets work', () => {
    for (const c of [
      'getpid',
      'clone_plain',
      'socket_unix',
      'socket_netlink',
      'personality_default',
    ])
      expect(describeResult(byDefault.results.get(c)), c).toBe('ok');
  });

  it('allows personality only for the default values and clone only without namespace flags', () => {
    expect(describeResult(byDefault.results.get('personality_other'))).toBe('EPERM');
    expect(describeResult(byDefault.results.get('clone_newns'))).toBe('EPERM');
    expect(describeResult(byDefault.results.get('clone_newuser'))).toBe('EPERM');
    // clone3 hides its flags from the filter: refused as absent (ENOSYS, libc then falls
    // back to clone) or with EPERM; never run. clone_plain above proves the fallback works.
    expect(['ENOSYS', 'EPERM']).toContain(describeResult(byDefault.results.get('clone3')));
    // The unconfined control succeeds for all but clone_newns (CAP_SYS_ADMIN), so these
    // refusals are the filter's.
    for (const c of ['personality_other', 'clone_newuser', 'clone3'])
      expect(describeResult(control.get(c)), c).toBe('ok');
  });

  it('network disabled: AF_INET and AF_INET6 TCP open (the namespace has lo alone), AF_PACKET refused', () => {
    // What lies past those sockets is escape-loopback.test.ts: nothing outside answers.
    for (const c of LOOPBACK_SOCKETS)
      expect(describeResult(byDefault.results.get(c)), c).toBe('ok');
    // AF_PACKET needs CAP_NET_RAW, so the kernel says EPERM unconfined too; the filter
    // refuses it as well (unit/seccomp-derive.test.ts), whatever the capabilities.
    expect(describeResult(byDefault.results.get('socket_packet'))).toBe('EPERM');
    expect(describeResult(control.get('socket_inet'))).toBe('ok');
    expect(describeResult(control.get('socket_inet6'))).toBe('ok');
  });

  it('refuses each escape scenario', () => {
    const r = (c: string) => describeResult(byDefault.results.get(c));
    // Filter refusals (the control shows the kernel would have allowed or answered
    // otherwise): a user namespace, a ptrace attach to a sibling, a module load.
    expect(r('unshare_user')).toBe('EPERM');
    expect(r('ptrace_sibling')).toBe('EPERM');
    expect(r('load_module')).toBe('EPERM');
    expect(describeResult(control.get('unshare_user'))).toBe('ok');
    expect(describeResult(control.get('ptrace_sibling'))).toBe('ok');
    // mount needs CAP_SYS_ADMIN as well: EPERM from the filter and, without it, the kernel.
    expect(r('mount_tmpfs')).toBe('EPERM');
    // Not syscall-filter matters; refused by the rest of the hardening: /proc/kcore is
    // absent or masked (ENOENT here; EOF on a /dev/null mask; EACCES: root-only),
    // /proc/sys is read-only and root-owned (EACCES/EROFS), and no disk's device node
    // exists in the container's /dev (ENOENT).
    for (const c of ['read_kcore', 'write_proc_sys', 'open_block_device']) {
      expect(resultOf(byDefault.results, c).ok, c).toBe(false);
      expect(['ENOENT', 'EOF', 'EACCES', 'EROFS', 'EPERM'], c).toContain(r(c));
    }
  });

  it('records the exact filter: seccomp.json hashes to the snapshot sha256, default deny, x86_64 only', async () => {
    const bytes = await readFile(path.join(byDefault.runDir, 'seccomp.json'));
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const spec = byDefault.snapshot.containerSpec.seccomp;
    expect(spec.sha256).toBe(sha256);
    expect(byDefault.snapshot.seccomp.sha256).toBe(sha256);
    const filter = JSON.parse(bytes.toString('utf8'));
    expect(filter.defaultAction).toBe('SCMP_ACT_ERRNO');
    // EPERM (1), or no errnoRet at all, which the engine turns into EPERM.
    expect([1, undefined]).toContain(filter.defaultErrnoRet);
    expect(filter.architectures).toEqual(['SCMP_ARCH_X86_64']);
    // No deny-list syscall is allowed anywhere in the default filter.
    const allowed = new Set<string>(
      (filter.syscalls as { names: string[]; action: string }[])
        .filter((s) => s.action === 'SCMP_ACT_ALLOW')
        .flatMap((s) => s.names),
    );
    expect(DENY_LIST.filter((c) => allowed.has(c))).toEqual([]);
  });

  it('the snapshot containerSpec.seccomp records sha256, grants, ABIs and enforcement', () => {
    const spec = byDefault.snapshot.containerSpec.seccomp;
    expect(spec.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(spec.grants).toMatchObject({
      allowPtrace: false,
      allowIoUring: false,
      allowUserNamespaces: false,
      allow32BitAbis: false,
      allow: [],
      abis: ['x86_64'],
    });
    // Where docs/operators.md says it is recorded (snapshot.seccomp), and inside the
    // container spec's seccomp record beside sha256 and grants.
    expect(byDefault.snapshot.seccomp.enforcement).toBe('kernel-seccomp');
    expect(spec.enforcement, 'snapshot.containerSpec.seccomp.enforcement').toBe('kernel-seccomp');
  });

  it('the same profile derives the same bytes (profiles show --seccomp-out)', async () => {
    const out = path.join(scratch, 'default-seccomp.json');
    const r = await cfh([
      'profiles',
      'show',
      'default',
      '--workspace',
      workspace,
      '--seccomp-out',
      out,
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await readFile(out)).toEqual(
      await readFile(path.join(byDefault.runDir, 'seccomp.json')),
    );
  });
});

describe('the 32-bit ABIs (i386 int $0x80, x32)', () => {
  it('without the grant, every call through i386 or x32 is killed (SIGSYS), grants or not', () => {
    // libseccomp's bad-architecture action: the ABI is not in the filter at all. Unconfined
    // the i386 calls reach the kernel (previous test), so the kill is the filter's.
    for (const run of [byDefault, byName, byFlags]) {
      const got = Object.fromEntries(
        COMPAT_CASES.map((c) => [c, describeResult(run.results.get(c))]),
      );
      expect(got).toEqual(Object.fromEntries(COMPAT_CASES.map((c) => [c, 'SIGSYS'])));
    }
  });

  it('network disabled: no AF_PACKET socket, and no socket at all through a 32-bit ABI', () => {
    // socket() through each ABI and i386's socketcall(); a success is a failure here.
    for (const run of [byDefault, byName, byFlags])
      for (const c of NETWORK_SOCKETS) expect(resultOf(run.results, c).ok, c).toBe(false);
  });

  it('with allow32BitAbis every rule holds through i386 and x32 as through x86_64', () => {
    const r = (c: string) => describeResult(with32Bit.results.get(c));
    for (const abi of COMPAT_ABIS) {
      const deny = denyListOf(abi).map((c) => via(c, abi));
      expect(Object.fromEntries(deny.map((c) => [c, r(c)])), abi).toEqual(
        Object.fromEntries(deny.map((c) => [c, 'EPERM'])),
      );
      // The argument rules: the same refusals as x86_64 (clone3 as absent).
      for (const c of ['personality_other', 'clone_newns', 'clone_newuser'])
        expect(r(via(c, abi)), via(c, abi)).toBe('EPERM');
      expect(r(via('clone3', abi))).toBe('ENOSYS');
      // What the filter lets through gets the kernel's own answer: ok through i386 here,
      // ENOSYS through x32 on this kernel (no x32): allowed calls reach it, denied do not.
      for (const c of ['getpid', 'clone_plain', 'personality_default', 'socket_unix'])
        expect(r(via(c, abi)), via(c, abi)).toBe(describeResult(control.get(via(c, abi))));
    }
    // Filter-proven where the kernel would have answered otherwise through i386.
    const proven = denyListOf('i386').filter(
      (c) => describeResult(control.get(via(c, 'i386'))) !== 'EPERM',
    );
    console.log(`filter-proven through i386 with allow32BitAbis: ${proven.join(' ')}`);
    if (accepted.i386)
      expect(
        denyListOf('i386').filter((c) => !CAPABILITY_GATED.has(c) && !proven.includes(c)),
      ).toEqual([]);
    // x86_64 is unchanged by the grant.
    for (const c of DENY_LIST) expect(r(c), c).toBe('EPERM');
    const spec = with32Bit.snapshot.containerSpec.seccomp;
    expect(spec.grants).toMatchObject({ allow32BitAbis: true, abis: ['x86_64', 'i386', 'x32'] });
  });
});

describe('grants prove the EPERM came from the filter', () => {
  /** Granted, a case must answer exactly as the unconfined kernel does. */
  function expectKernelAnswers(run: BatteryRun, cases: readonly string[]): void {
    const got = Object.fromEntries(cases.map((c) => [c, describeResult(run.results.get(c))]));
    const want = Object.fromEntries(cases.map((c) => [c, describeResult(control.get(c))]));
    expect(got).toEqual(want);
  }

  it('allow: [names] turns each named EPERM into the kernel answer', () => {
    expectKernelAnswers(byName, [...BY_NAME, 'personality_other', 'load_module']);
    // Where the control is not EPERM, default EPERM vs granted non-EPERM is the proof.
    const proven = BY_NAME.filter((c) => describeResult(control.get(c)) !== 'EPERM');
    console.log(`filter-proven by name: ${proven.join(' ')}`);
    // Capability-gated (see CAPABILITY_GATED): still refused when granted.
    for (const c of BY_NAME.filter((x) => describeResult(control.get(x)) === 'EPERM')) {
      expect(CAPABILITY_GATED.has(c), `${c} is EPERM unconfined but not capability-gated`).toBe(
        true,
      );
      expect(resultOf(byName.results, c).ok, c).toBe(false);
    }
  });

  it('allow: [names] grants nothing else', () => {
    for (const c of [...FLAG_GRANTED, 'unshare_user', 'ptrace_sibling', 'clone_newuser'])
      expect(describeResult(byName.results.get(c)), c).toBe('EPERM');
    expect(['ENOSYS', 'EPERM']).toContain(describeResult(byName.results.get('clone3')));
    expect(describeResult(byName.results.get('socket_packet'))).toBe('EPERM');
    expect(byName.snapshot.containerSpec.seccomp.grants).toMatchObject({
      allowPtrace: false,
      allowIoUring: false,
      allowUserNamespaces: false,
      allow: [...BY_NAME, 'personality'].sort(),
    });
  });

  it('allowPtrace: true grants ptrace: a sibling can be attached to', () => {
    // ESRCH unconfined and granted: the attach target does not exist, the kernel said so.
    expectKernelAnswers(byFlags, ['ptrace', 'ptrace_sibling']);
    // There is no Yama LSM here (no /proc/sys/kernel/yama), so the same-uid attach
    // succeeds; with Yama ptrace_scope >= 1 the kernel would refuse a non-descendant, but
    // the sibling is the probe's own child, which scope 1 still allows.
    expect(describeResult(byFlags.results.get('ptrace_sibling'))).toBe('ok');
  });

  it('allowIoUring: true grants io_uring_setup, io_uring_enter and io_uring_register', () => {
    expectKernelAnswers(byFlags, FLAG_GROUPS.allowIoUring);
    for (const c of FLAG_GROUPS.allowIoUring)
      expect(describeResult(byFlags.results.get(c)), c).not.toBe('EPERM');
  });

  it('allowUserNamespaces: true grants unshare and clone/clone3 with CLONE_NEWUSER', () => {
    expectKernelAnswers(byFlags, ['unshare', 'unshare_user', 'clone_newuser', 'clone3']);
    // A new user namespace needs no capability, and nothing else here refuses it (the
    // container is pivot_root'ed, not chroot'ed; no LSM restricts user namespaces).
    expect(describeResult(byFlags.results.get('unshare_user'))).toBe('ok');
    // CLONE_NEWNS alone still needs CAP_SYS_ADMIN in the caller's user namespace.
    expect(describeResult(byFlags.results.get('clone_newns'))).toBe('EPERM');
  });

  it('the flags grant nothing else and are recorded', () => {
    for (const c of BY_NAME) expect(describeResult(byFlags.results.get(c)), c).toBe('EPERM');
    for (const c of ['personality_other', 'socket_packet', 'load_module'])
      expect(describeResult(byFlags.results.get(c)), c).toBe('EPERM');
    expect(byFlags.snapshot.containerSpec.seccomp.grants).toMatchObject({
      allowPtrace: true,
      allowIoUring: true,
      allowUserNamespaces: true,
      allow32BitAbis: false,
      allow: [],
    });
    expect(byFlags.snapshot.containerSpec.seccomp.sha256).not.toBe(
      byDefault.snapshot.containerSpec.seccomp.sha256,
    );
  });
});

describe('seccomp configuration errors: 125 before any engine object exists', () => {
  const cases: [string, string, RegExp, readonly string[]][] = [
    [
      'an unknown syscall name',
      'seccomp:\n  allow: [not_a_syscall]\n',
      /seccomp\.allow.*not_a_syscall/,
      [],
    ],
    [
      'allow: [ptrace] with allowPtrace: false',
      'seccomp:\n  allowPtrace: false\n  allow: [ptrace]\n',
      /seccomp\.allow.*ptrace.*allowPtrace|allowPtrace.*ptrace/,
      [],
    ],
    [
      'allow: [io_uring_setup] with allowIoUring: false',
      'seccomp:\n  allowIoUring: false\n  allow: [io_uring_setup]\n',
      /seccomp\.allow.*io_uring_setup.*allowIoUring|allowIoUring.*io_uring_setup/,
      [],
    ],
    [
      'allow: [unshare] with allowUserNamespaces: false',
      'seccomp:\n  allowUserNamespaces: false\n  allow: [unshare]\n',
      /seccomp\.allow.*unshare.*allowUserNamespaces|allowUserNamespaces.*unshare/,
      [],
    ],
    [
      'allow: [socket] with network disabled',
      'seccomp:\n  allow: [socket]\n',
      /seccomp\.allow.*socket.*network|network.*socket/,
      [],
    ],
    [
      'allow32BitAbis with network disabled (socketcall hides the family)',
      'seccomp:\n  allow32BitAbis: true\n',
      /allow32BitAbis.*network\.mode: disabled.*socketcall/,
      [],
    ],
    [
      'allow32BitAbis under runsc (gVisor has no i386 ABI)',
      'network:\n  mode: open\nseccomp:\n  allow32BitAbis: true\n',
      /allow32BitAbis.*runsc/,
      ['--runtime', 'runsc'],
    ],
    [
      'allow: [chmod, openat] (set-id bits are never granted)',
      'seccomp:\n  allow: [chmod, openat]\n',
      /seccomp\.allow: 'chmod', 'openat' cannot be granted whole.*S_ISUID/,
      [],
    ],
  ];

  it.each(cases)('%s', async (name, body, message, extra) => {
    const file = await profile(`bad-${name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`, body);
    const artifactRoot = path.join(scratch, `bad-art-${n++}`);
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      workspace,
      '--artifact-root',
      artifactRoot,
      '--mount',
      `${probeDir}:/probe`,
      '--profile',
      file,
      ...extra,
      '--',
      '/probe/probe',
      'getpid',
    ]);
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
    expect(await objectsOwnedBy(r.pid)).toEqual([]);
    expect(existsSync(artifactRoot) ? await readdir(artifactRoot) : []).toEqual([]);
  });
});

describe('runtime runsc (gVisor)', () => {
  it('refuses every deny-list syscall under the default profile and records the enforcement', async (ctx) => {
    if (!runscRegistered) {
      console.log('runsc is not registered with this engine: the gVisor battery is skipped');
      ctx.skip('runsc not registered with the engine');
    }
    const run = await battery(['--runtime', 'runsc']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect([...run.results.keys()]).toEqual(ALL_CASES);
    table('unconfined control (runc) vs derived default profile under runsc:', run.results);
    const recorded = run.snapshot.containerSpec.seccomp;
    const runtimeArgs = (run.snapshot.runtime.runtimeArgs ?? []) as string[];
    console.log(
      `runsc runtimeArgs: ${runtimeArgs.join(' ')}; snapshot seccomp.enforcement: ${String(run.snapshot.seccomp.enforcement)}, containerSpec.seccomp.enforcement: ${String(recorded.enforcement)}; assurance: ${run.snapshot.assurance.level}`,
    );
    // The filter the engine got is the one recorded, under runsc as under runc.
    const bytes = await readFile(path.join(run.runDir, 'seccomp.json'));
    expect(recorded.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    const oci = runtimeArgs.includes('--oci-seccomp');
    if (oci) {
      // gVisor applies the OCI filter itself: EPERM from it, or ENOSYS where gVisor does
      // not implement the call at all.
      const refused = DENY_LIST.filter(
        (c) => !['EPERM', 'ENOSYS'].includes(describeResult(run.results.get(c))),
      );
      expect(refused).toEqual([]);
      for (const c of ['socket_packet', 'unshare_user', 'ptrace_sibling'])
        expect(['EPERM', 'ENOSYS'], c).toContain(describeResult(run.results.get(c)));
      expect(run.snapshot.assurance.level).toBe('strong');
    } else {
      // Without --oci-seccomp nothing filters; gVisor's own syscall surface is the
      // boundary, and the evidence must say the assurance is reduced.
      // (gVisor accepts some of the probe's calls then, e.g. unshare with an unknown bit.)
      expect(run.snapshot.assurance.level).toBe('reduced');
    }
    for (const c of ['getpid', 'clone_plain', 'socket_unix', ...LOOPBACK_SOCKETS])
      expect(describeResult(run.results.get(c)), c).toBe('ok');
    expect(await containersOfRun(runIdOf(run.runDir))).toEqual([]);
    const expected = oci ? 'gvisor-oci-seccomp' : 'not-applied-gvisor';
    expect(run.snapshot.seccomp.enforcement).toBe(expected);
    expect(recorded.enforcement, 'snapshot.containerSpec.seccomp.enforcement').toBe(expected);

    // The 32-bit ABIs under gVisor. Unconfined under runsc, which ABIs does it accept?
    const gvisor = await unconfinedControl({
      image: run.snapshot.image.ref as string,
      probeDir,
      cases: ALL_CASES,
      runtime: 'runsc',
    });
    console.log(`ABIs accepted without a filter under runsc: ${describeAbis(gvisor)}`);
    // ptrace platform: an int $0x80 runs as the x86_64 syscall of the same number, so it
    // is not the i386 ABI (getpid@i386 is writev: EBADF), and the x86_64 filter applies.
    expect(acceptedAbis(gvisor)).toMatchObject({ x86_64: true, i386: false, x32: false });
    for (const abi of COMPAT_ABIS)
      expect(resultOf(run.results, via('getpid', abi)).ok, abi).toBe(false);
    // Whatever ran instead, no socket the disabled network refuses came of it.
    for (const c of NETWORK_SOCKETS) expect(resultOf(run.results, c).ok, c).toBe(false);
    // x32 numbers match no rule: the filter's default EPERM (gVisor itself: ENOSYS).
    const x32 = casesOf('x32');
    expect(Object.fromEntries(x32.map((c) => [c, describeResult(run.results.get(c))]))).toEqual(
      Object.fromEntries(x32.map((c) => [c, oci ? 'EPERM' : 'ENOSYS'])),
    );
  });
});
