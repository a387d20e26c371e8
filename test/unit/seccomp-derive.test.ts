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
import { seccompEnforcementOf } from '../../src/engine/preflight.js';
import { ConfigError } from '../../src/errors.js';
import { MUST_DENY } from '../fixtures/must-deny.js';

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

  it('denies by default with EPERM, x86 architectures only', () => {
    const f = parse(deriveSeccomp(none, 'disabled').json);
    expect(f.defaultAction).toBe('SCMP_ACT_ERRNO');
    expect(f.defaultErrnoRet).toBe(1);
    expect(f.architectures).toEqual(['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32']);
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

  it('limits socket() to AF_UNIX and AF_NETLINK when the network is disabled', () => {
    const disabled = parse(deriveSeccomp(none, 'disabled').json);
    expect(plainAllow(disabled).has('socket')).toBe(false);
    expect(rulesFor(disabled, 'socket').map((r) => r.args?.[0]?.value)).toEqual([1, 16]);
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
      allow: ['kcmp'],
      socketFamilies: 'unix-netlink-only',
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

  it('keeps the base data consistent: no denied name in the base allowlist', () => {
    const data = seccompData();
    for (const name of Object.values(data.groups).flat())
      expect(data.allow.has(name), name).toBe(false);
    for (const name of DENIED) expect(data.known.has(name), name).toBe(true);
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
