// Issue 4: the derived seccomp filter. Golden files pin the exact bytes and digest: a change
// to seccomp/*.json or to the rules in src/seccomp/derive.ts must change the golden file and
// its digest in the same commit (UPDATE_GOLDEN=1 rewrites them; review the diff).
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deriveSeccomp, type SeccompGrants } from '../../src/seccomp/derive.js';
import { seccompData } from '../../src/seccomp/seccomp-data.js';
import { seccompEnforcementOf } from '../../src/engine/run/preflight.js';
import { ConfigError } from '../../src/errors.js';
import { ARGUMENT_RULED } from '../../src/seccomp/argument-rules.js';
import { MUST_DENY, MUST_REFUSE_SETID_MODE } from '../fixtures/must-deny.js';

const GOLDEN = fileURLToPath(new URL('../fixtures/golden/', import.meta.url));

interface Rule {
  names: string[];
  action: string;
  errnoRet?: number;
  args?: { index: number; value: number; valueTwo: number; op: string }[];
}
interface Filter {
  defaultAction: string;
  defaultErrnoRet: number;
  architectures: string[];
  syscalls: Rule[];
}

const none: SeccompGrants = { allow: [] };

function parse(json: string): Filter {
  return JSON.parse(json) as Filter;
}

/** Names allowed with no argument condition. */
function plainAllow(f: Filter): Set<string> {
  return new Set(
    f.syscalls
      .filter((r) => r.action === 'SCMP_ACT_ALLOW' && r.args === undefined)
      .flatMap((r) => r.names),
  );
}

function rulesFor(f: Filter, name: string): Rule[] {
  return f.syscalls.filter((r) => r.names.includes(name));
}

const DENIED = MUST_DENY;

function golden(name: string, json: string, sha256: string): void {
  const file = path.join(GOLDEN, `${name}.json`);
  const digestFile = path.join(GOLDEN, `${name}.sha256`);
  if (process.env.UPDATE_GOLDEN === '1') {
    writeFileSync(file, json);
    writeFileSync(digestFile, `${sha256}\n`);
  }
  expect(json).toBe(readFileSync(file, 'utf8'));
  expect(sha256).toBe(readFileSync(digestFile, 'utf8').trim());
  expect(createHash('sha256').update(readFileSync(file)).digest('hex')).toBe(sha256);
}

describe('derived seccomp filter', () => {
  it('matches the golden file for the default profile (network disabled, no grants)', () => {
    const d = deriveSeccomp(none, 'disabled');
    golden('seccomp-default', d.json, d.sha256);
  });

  it('matches the golden file for a granting profile with open network', () => {
    const d = deriveSeccomp(
      { allowPtrace: true, allowIoUring: true, allowUserNamespaces: true, allow: ['setns', 'bpf'] },
      'open',
    );
    golden('seccomp-grants-open', d.json, d.sha256);
  });

  it('matches the golden file for the 32-bit ABIs granted with open network', () => {
    const d = deriveSeccomp({ allow32BitAbis: true, allow: [] }, 'open');
    golden('seccomp-32bit-open', d.json, d.sha256);
  });

  it('denies by default with EPERM, x86_64 only: no other ABI is in the filter', () => {
    const f = parse(deriveSeccomp(none, 'disabled').json);
    expect(f.defaultAction).toBe('SCMP_ACT_ERRNO');
    expect(f.defaultErrnoRet).toBe(1);
    expect(f.architectures).toEqual(['SCMP_ARCH_X86_64']);
    for (const grants of [
      { allowPtrace: true, allowIoUring: true, allowUserNamespaces: true, allow: ['bpf'] },
      { allow32BitAbis: false, allow: [] },
    ])
      expect(
        parse(deriveSeccomp(grants, 'open').json).architectures,
        JSON.stringify(grants),
      ).toEqual(['SCMP_ARCH_X86_64']);
  });

  it('adds i386 and x32 only with allow32BitAbis, and records the ABIs', () => {
    const d = deriveSeccomp({ allow32BitAbis: true, allow: [] }, 'allowlist');
    expect(parse(d.json).architectures).toEqual([
      'SCMP_ARCH_X86_64',
      'SCMP_ARCH_X86',
      'SCMP_ARCH_X32',
    ]);
    expect(d.grants).toMatchObject({ allow32BitAbis: true, abis: ['x86_64', 'i386', 'x32'] });
    expect(deriveSeccomp(none, 'open').grants).toMatchObject({
      allow32BitAbis: false,
      abis: ['x86_64'],
    });
  });

  it('allows none of the denied syscalls without a grant', () => {
    const f = parse(deriveSeccomp(none, 'disabled').json);
    for (const name of DENIED) {
      expect(
        rulesFor(f, name).filter((r) => r.action === 'SCMP_ACT_ALLOW'),
        name,
      ).toEqual([]);
    }
  });

  it('allows clone only without namespace flags, and answers clone3 with ENOSYS', () => {
    const f = parse(deriveSeccomp(none, 'disabled').json);
    expect(rulesFor(f, 'clone')).toEqual([
      {
        names: ['clone'],
        action: 'SCMP_ACT_ALLOW',
        args: [{ index: 0, value: 0x7e020000, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }],
      },
    ]);
    expect(rulesFor(f, 'clone3')).toEqual([
      { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: 38 },
    ]);
  });

  it('allows personality only for the default values', () => {
    const f = parse(deriveSeccomp(none, 'disabled').json);
    const values = rulesFor(f, 'personality').map((r) => r.args?.[0]?.value);
    expect(values.sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([
      0, 8, 0x20000, 0x20008, 0xffffffff,
    ]);
  });

  it('open network: socket() allowed whole', () => {
    const open = parse(deriveSeccomp(none, 'open').json);
    expect(plainAllow(open).has('socket')).toBe(true);
    expect(rulesFor(open, 'socket')).toHaveLength(1);
  });

  it('grants exactly what the flags and the allow list name', () => {
    const ptrace = parse(deriveSeccomp({ allowPtrace: true, allow: [] }, 'disabled').json);
    expect(plainAllow(ptrace).has('ptrace')).toBe(true);
    expect(plainAllow(ptrace).has('process_vm_readv')).toBe(false);
    const uring = plainAllow(
      parse(deriveSeccomp({ allowIoUring: true, allow: [] }, 'disabled').json),
    );
    expect(
      ['io_uring_setup', 'io_uring_enter', 'io_uring_register'].every((n) => uring.has(n)),
    ).toBe(true);
    const userns = parse(deriveSeccomp({ allowUserNamespaces: true, allow: [] }, 'disabled').json);
    expect(plainAllow(userns).has('unshare')).toBe(true);
    expect(plainAllow(userns).has('clone3')).toBe(true);
    expect(rulesFor(userns, 'clone')).toEqual([
      expect.objectContaining({ action: 'SCMP_ACT_ALLOW' }),
    ]);
    expect(rulesFor(userns, 'clone')[0]?.args).toBeUndefined();
    const extra = plainAllow(parse(deriveSeccomp({ allow: ['bpf'] }, 'disabled').json));
    expect(extra.has('bpf')).toBe(true);
    expect(extra.has('perf_event_open')).toBe(false);
  });

  it('records the grants it applied', () => {
    expect(deriveSeccomp({ allowPtrace: true, allow: ['kcmp'] }, 'disabled').grants).toEqual({
      allowPtrace: true,
      allowIoUring: false,
      allowUserNamespaces: false,
      allow32BitAbis: false,
      allow: ['kcmp'],
      abis: ['x86_64'],
      socketFamilies: 'unix-netlink-loopback-inet',
    });
  });

  it('is deterministic: allow-list order does not change the bytes', () => {
    const a = deriveSeccomp({ allow: ['bpf', 'kcmp', 'acct'] }, 'disabled');
    const b = deriveSeccomp({ allow: ['acct', 'bpf', 'kcmp'] }, 'disabled');
    expect(a.json).toBe(b.json);
    expect(a.sha256).toBe(b.sha256);
    expect(a.sha256).not.toBe(deriveSeccomp(none, 'disabled').sha256);
  });

  it.each([
    [
      { allow: ['not_a_syscall'] },
      'disabled',
      'seccomp_unknown_syscall',
      /seccomp\.allow: unknown syscall name\(s\) 'not_a_syscall'/,
    ],
    [
      { allowPtrace: false, allow: ['ptrace'] },
      'disabled',
      'seccomp_contradiction',
      /ptrace contradicts seccomp\.allowPtrace: false/,
    ],
    [
      { allowIoUring: false, allow: ['io_uring_setup'] },
      'disabled',
      'seccomp_contradiction',
      /allowIoUring: false/,
    ],
    [
      { allowUserNamespaces: false, allow: ['unshare'] },
      'open',
      'seccomp_contradiction',
      /allowUserNamespaces: false/,
    ],
    [
      { allow: ['socket'] },
      'disabled',
      'seccomp_contradiction',
      /'socket' contradicts network\.mode: disabled/,
    ],
    [
      { allow: ['clone'] },
      'open',
      'seccomp_contradiction',
      /'clone' is always allowed without namespace flags/,
    ],
    [
      { allow32BitAbis: true, allow: [] },
      'disabled',
      'seccomp_contradiction',
      /allow32BitAbis contradicts network\.mode: disabled: .*socketcall/,
    ],
    ...[...Object.keys(MUST_REFUSE_SETID_MODE), 'openat2'].map(
      (name) =>
        [
          { allow: [name] },
          'open',
          'seccomp_contradiction',
          new RegExp(`'${name}' cannot be granted whole: .*S_ISUID/S_ISGID`),
        ] as const,
    ),
  ] as const)('refuses %j under %s', (grants, mode, code, message) => {
    let caught: unknown;
    try {
      deriveSeccomp({ ...grants, allow: [...grants.allow] }, mode);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).code).toBe(code);
    expect((caught as ConfigError).message).toMatch(message);
  });

  it('refuses allow32BitAbis under runsc: gVisor has no i386 ABI', () => {
    expect(() => deriveSeccomp({ allow32BitAbis: true, allow: [] }, 'open', 'runsc')).toThrow(
      /allow32BitAbis contradicts runtime: runsc/,
    );
    expect(() => deriveSeccomp({ allow32BitAbis: true, allow: [] }, 'open', 'runc')).not.toThrow();
  });

  it('keeps the base data consistent: no denied or argument-ruled name in the base allowlist', () => {
    const data = seccompData();
    for (const name of [...Object.values(data.groups).flat(), ...data.conditional])
      expect(data.allow.has(name), name).toBe(false);
    for (const name of DENIED) expect(data.known.has(name), name).toBe(true);
    // seccomp/denied.json describes exactly the calls src/seccomp/argument-rules.ts rules.
    expect([...data.conditional].sort()).toEqual([...ARGUMENT_RULED].sort());
  });

  it('gives every argument-ruled name rules of one action and never a plain allow', () => {
    const f = parse(deriveSeccomp(none, 'disabled').json);
    for (const name of ARGUMENT_RULED) {
      const rules = rulesFor(f, name);
      expect(rules.length, name).toBeGreaterThan(0);
      expect(plainAllow(f).has(name), name).toBe(false);
    }
    // One action per name in every filter, so no rule order can change a decision.
    for (const grants of [none, { allowUserNamespaces: true, allow: [] }])
      for (const mode of ['disabled', 'open'] as const) {
        const g = parse(deriveSeccomp(grants, mode).json);
        const actions = new Map<string, Set<string>>();
        for (const r of g.syscalls)
          for (const name of r.names)
            actions.set(name, (actions.get(name) ?? new Set()).add(r.action));
        const mixed = [...actions].filter(([, a]) => a.size > 1).map(([name]) => name);
        expect(mixed, `${JSON.stringify(grants)} ${mode}`).toEqual([]);
      }
  });
});

/**
 * What libseccomp decides for one call, read from the filter's JSON: the model used here
 * (rules of one name are alternatives, a rule's args must all hold, an ABI the filter does
 * not list meets the bad-architecture action, a kill). i386 arguments are 32-bit.
 */
type Abi = 'x86_64' | 'i386' | 'x32';
const ARCH_OF: Record<Abi, string> = {
  x86_64: 'SCMP_ARCH_X86_64',
  i386: 'SCMP_ARCH_X86',
  x32: 'SCMP_ARCH_X32',
};
function decide(f: Filter, abi: Abi, name: string, args: readonly bigint[]): string {
  if (!f.architectures.includes(ARCH_OF[abi])) return 'kill';
  for (const r of rulesFor(f, name)) {
    const holds = (r.args ?? []).every((a) => {
      const raw = args[a.index] ?? 0n;
      const v = abi === 'i386' ? raw & 0xffffffffn : raw;
      if (a.op === 'SCMP_CMP_EQ') return v === BigInt(a.value);
      if (a.op === 'SCMP_CMP_MASKED_EQ') return (v & BigInt(a.value)) === BigInt(a.valueTwo);
      throw new Error(`operator ${a.op} is not modelled`);
    });
    if (holds) return r.action === 'SCMP_ACT_ALLOW' ? 'allow' : `errno ${r.errnoRet ?? 1}`;
  }
  return `errno ${f.defaultErrnoRet}`;
}

const O_WRONLY = 0o1n;
const O_CREAT = 0o100n;
const O_EXCL = 0o200n;
const O_TMPFILE = 0o20200000n;
const S_IFREG = 0o100000n;

describe('set-id bits (S_ISUID, S_ISGID) through every mode-setting call and ABI', () => {
  const filters = {
    'default (network disabled)': parse(deriveSeccomp(none, 'disabled').json),
    'allow32BitAbis (network open)': parse(
      deriveSeccomp({ allow32BitAbis: true, allow: [] }, 'open').json,
    ),
  };
  /** The call's arguments with `mode` at its mode index (and `flags` before it for open). */
  function call(
    name: keyof typeof MUST_REFUSE_SETID_MODE,
    mode: bigint,
    flags = O_CREAT | O_WRONLY,
  ): bigint[] {
    const index = MUST_REFUSE_SETID_MODE[name];
    const args = [0n, 0n, 0n, 0n, 0n, 0n];
    args[index] = mode;
    if (name === 'open' || name === 'openat') args[index - 1] = flags;
    return args;
  }
  const names = Object.keys(MUST_REFUSE_SETID_MODE) as (keyof typeof MUST_REFUSE_SETID_MODE)[];

  for (const [label, f] of Object.entries(filters)) {
    const abis = (['x86_64', 'i386', 'x32'] as const).filter((a) =>
      f.architectures.includes(ARCH_OF[a]),
    );
    it(`${label}: refuses S_ISUID and S_ISGID in every call's mode, through ${abis.join(', ')}`, () => {
      for (const abi of abis)
        for (const name of names)
          for (const mode of [
            0o4755n,
            0o2755n,
            0o6755n,
            0o4000n,
            S_IFREG | 0o4755n,
            0x1_0000_0000n | 0o2711n,
          ])
            expect(
              decide(f, abi, name, call(name, mode)),
              `${abi} ${name} ${mode.toString(8)}`,
            ).toBe('errno 1');
    });

    it(`${label}: allows every other mode, and open without O_CREAT whatever its mode`, () => {
      for (const abi of abis) {
        for (const name of names)
          for (const mode of [0o755n, 0o644n, 0o1777n, 0o777n, S_IFREG | 0o644n])
            expect(
              decide(f, abi, name, call(name, mode)),
              `${abi} ${name} ${mode.toString(8)}`,
            ).toBe('allow');
        // The kernel ignores open's mode without O_CREAT or O_TMPFILE.
        for (const name of ['open', 'openat'] as const) {
          expect(decide(f, abi, name, call(name, 0o6755n, 0n)), `${abi} ${name} O_RDONLY`).toBe(
            'allow',
          );
          expect(
            decide(f, abi, name, call(name, 0o4755n, O_TMPFILE | O_WRONLY)),
            `${abi} ${name} O_TMPFILE`,
          ).toBe('errno 1');
          expect(
            decide(f, abi, name, call(name, 0o2755n, O_CREAT | O_EXCL | O_WRONLY)),
            `${abi} ${name} O_EXCL`,
          ).toBe('errno 1');
        }
        // openat2's mode is in memory: absent, so libc falls back to openat.
        expect(decide(f, abi, 'openat2', [0n, 0n, 0n, 24n]), abi).toBe('errno 38');
      }
    });
  }

  it('kills a call through an ABI the filter does not list, whatever it is', () => {
    const f = filters['default (network disabled)'];
    for (const abi of ['i386', 'x32'] as const) {
      expect(decide(f, abi, 'getpid', [])).toBe('kill');
      expect(decide(f, abi, 'socketcall', [1n])).toBe('kill');
      expect(decide(f, abi, 'chmod', call('chmod', 0o4755n))).toBe('kill');
    }
  });
});

describe('seccomp enforcement by runtime', () => {
  it('is the kernel under runc, gVisor with --oci-seccomp, and not applied without it', () => {
    expect(seccompEnforcementOf('runc', [])).toBe('kernel-seccomp');
    expect(seccompEnforcementOf('runsc', ['--network=none', '--oci-seccomp'])).toBe(
      'gvisor-oci-seccomp',
    );
    expect(seccompEnforcementOf('runsc', ['--network=none'])).toBe('not-applied-gvisor');
  });
});

// The class: a channel out of a read-only planning container to a host service. A unix
// socket on a mount (or in the abstract namespace) is reached by connect(2), whose address
// a filter cannot read: under planning no AF_UNIX socket is made at all, by socket(2) or
// io_uring, whatever the profile grants and the network posture.
describe('planning mode (--plan)', () => {
  const AF_UNIX = 1;
  const AF_NETLINK = 16;
  it('network disabled: socket(2) for AF_NETLINK and loopback inet, never AF_UNIX', () => {
    const d = deriveSeccomp(none, 'disabled', 'runc', true);
    const f = parse(d.json);
    expect(plainAllow(f).has('socket')).toBe(false);
    expect(decide(f, 'x86_64', 'socket', [BigInt(AF_NETLINK), 3n, 0n])).toBe('allow');
    expect(decide(f, 'x86_64', 'socket', [BigInt(AF_UNIX), 1n, 0n])).toBe('errno 1');
    expect(decide(f, 'x86_64', 'socket', [BigInt(AF_UNIX), 2n, 0n])).toBe('errno 1');
    expect(decide(f, 'x86_64', 'socket', [2n, 1n, 0n])).toBe('allow');
    expect(decide(f, 'x86_64', 'socket', [2n, 3n, 0n])).toBe('errno 1');
    expect(plainAllow(f).has('socketpair')).toBe(true);
    expect(d.grants.socketFamilies).toBe('netlink-loopback-inet');
  });

  it('network on: every family but AF_UNIX, even with socket granted whole', () => {
    for (const grants of [none, { allow: ['socket'] }]) {
      const f = parse(deriveSeccomp(grants, 'allowlist', 'runc', true).json);
      expect(plainAllow(f).has('socket')).toBe(false);
      expect(rulesFor(f, 'socket')).toEqual([
        {
          names: ['socket'],
          action: 'SCMP_ACT_ALLOW',
          args: [{ index: 0, value: AF_UNIX, valueTwo: 0, op: 'SCMP_CMP_NE' }],
        },
      ]);
    }
  });

  it('io_uring (which makes sockets no socket rule sees) is not granted under planning', () => {
    for (const grants of [{ allowIoUring: true, allow: [] }, { allow: ['io_uring_setup'] }]) {
      const d = deriveSeccomp(grants, 'disabled', 'runc', true);
      expect(plainAllow(parse(d.json)).has('io_uring_setup')).toBe(false);
      expect(d.grants.allowIoUring).toBe(false);
    }
    // Outside planning the grant holds, and AF_UNIX stays.
    const run = deriveSeccomp({ allowIoUring: true, allow: [] }, 'disabled');
    expect(plainAllow(parse(run.json)).has('io_uring_setup')).toBe(true);
    expect(run.grants.socketFamilies).toBe('unix-netlink-loopback-inet');
  });

  it('class: no file lock or lease under planning (a lock on a ro mount is felt by the host)', () => {
    const F_SETLK = 6;
    const F_SETLKW = 7;
    const F_OFD_SETLK = 37;
    const F_OFD_SETLKW = 38;
    const F_SETLEASE = 1024;
    const F_GETFL = 3;
    for (const grants of [none, { allow: ['flock'] }]) {
      const f = parse(deriveSeccomp(grants, 'disabled', 'runc', true).json);
      expect(plainAllow(f).has('flock')).toBe(false);
      expect(rulesFor(f, 'flock')).toEqual([]);
      expect(plainAllow(f).has('fcntl')).toBe(false);
      const commands = rulesFor(f, 'fcntl').map((r) => r.args?.[0]?.value);
      expect(commands).toContain(F_GETFL);
      for (const locking of [F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE])
        expect(commands).not.toContain(locking);
    }
    // Outside planning, locks are the program's own business.
    const run = parse(deriveSeccomp(none, 'disabled').json);
    expect(plainAllow(run).has('flock')).toBe(true);
    expect(plainAllow(run).has('fcntl')).toBe(true);
  });
});

// The class: under `disabled` the namespace holds `lo` alone (AH-CONT-4), so a loopback
// server and client must work as under `docker run --network none`, while every socket
// that could reach past `lo` or the kernel's raw paths (AF_PACKET, SOCK_RAW, other
// families, exotic protocols) stays refused by the filter, whatever the flags spell.
describe('network disabled: loopback TCP and UDP, nothing else', () => {
  const AF_UNIX = 1n;
  const AF_INET = 2n;
  const AF_INET6 = 10n;
  const AF_NETLINK = 16n;
  const AF_PACKET = 17n;
  const AF_VSOCK = 40n;
  const AF_ALG = 38n;
  const SOCK_STREAM = 1n;
  const SOCK_DGRAM = 2n;
  const SOCK_RAW = 3n;
  const SOCK_SEQPACKET = 5n;
  const SOCK_PACKET = 10n;
  const SOCK_NONBLOCK = 0o4000n;
  const SOCK_CLOEXEC = 0o2000000n;
  const IPPROTO_ICMP = 1n;
  const IPPROTO_TCP = 6n;
  const IPPROTO_UDP = 17n;
  const IPPROTO_ICMPV6 = 58n;
  const IPPROTO_SCTP = 132n;
  const IPPROTO_MPTCP = 262n;
  const filters = {
    run: parse(deriveSeccomp(none, 'disabled').json),
    granted: parse(
      deriveSeccomp({ allowPtrace: true, allowIoUring: true, allow: ['bpf'] }, 'disabled').json,
    ),
    planning: parse(deriveSeccomp(none, 'disabled', 'runc', true).json),
  };

  it.each(Object.entries(filters))('%s: TCP and UDP on AF_INET and AF_INET6 open', (_, f) => {
    for (const family of [AF_INET, AF_INET6])
      for (const [type, proto] of [
        [SOCK_STREAM, 0n],
        [SOCK_STREAM, IPPROTO_TCP],
        [SOCK_STREAM | SOCK_CLOEXEC, 0n],
        [SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP],
        [SOCK_DGRAM, 0n],
        [SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_UDP],
      ] as const)
        expect(decide(f, 'x86_64', 'socket', [family, type, proto]), `${family} ${type}`).toBe(
          'allow',
        );
  });

  it.each(Object.entries(filters))('%s: raw, packet, other types and protocols refused', (_, f) => {
    const refused: [bigint, bigint, bigint][] = [
      [AF_PACKET, SOCK_RAW, 0n],
      [AF_PACKET, SOCK_DGRAM, 0n],
      [AF_INET, SOCK_PACKET, 0n],
      [AF_INET, SOCK_RAW, IPPROTO_ICMP],
      [AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_TCP],
      [AF_INET6, SOCK_RAW, IPPROTO_ICMPV6],
      [AF_INET, SOCK_DGRAM, IPPROTO_ICMP], // a ping socket
      [AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6],
      [AF_INET, SOCK_STREAM, IPPROTO_SCTP],
      [AF_INET, SOCK_SEQPACKET, 0n],
      [AF_INET, SOCK_STREAM, IPPROTO_MPTCP],
      [AF_INET6, SOCK_STREAM, IPPROTO_UDP], // a protocol of the other type
      [AF_INET, SOCK_DGRAM, IPPROTO_TCP],
      [AF_VSOCK, SOCK_STREAM, 0n],
      [AF_ALG, 5n, 0n],
      // Type bits above the mask do not turn a raw socket into a stream one.
      [AF_INET, SOCK_RAW | 0x10n, 0n],
    ];
    for (const args of refused)
      expect(decide(f, 'x86_64', 'socket', args), args.join(' ')).toBe('errno 1');
  });

  it('unix and netlink stay as before (unix refused under planning)', () => {
    expect(decide(filters.run, 'x86_64', 'socket', [AF_UNIX, SOCK_STREAM, 0n])).toBe('allow');
    expect(decide(filters.run, 'x86_64', 'socket', [AF_NETLINK, SOCK_RAW, 0n])).toBe('allow');
    expect(decide(filters.planning, 'x86_64', 'socket', [AF_UNIX, SOCK_DGRAM, 0n])).toBe('errno 1');
  });

  it('records the families, and a socket grant or the 32-bit ABIs stay refused', () => {
    expect(deriveSeccomp(none, 'disabled').grants.socketFamilies).toBe(
      'unix-netlink-loopback-inet',
    );
    expect(() => deriveSeccomp({ allow: ['socket'] }, 'disabled')).toThrow(/AF_PACKET/);
    expect(() => deriveSeccomp({ allow32BitAbis: true, allow: [] }, 'disabled')).toThrow(
      /socketcall/,
    );
    // The i386 socketcall hides the family: no ABI but x86_64 is in the filter at all.
    expect(decide(filters.run, 'i386', 'socket', [AF_INET, SOCK_STREAM, 0n])).toBe('kill');
  });
});
