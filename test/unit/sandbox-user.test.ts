// Who the sandbox runs as (`--user`, profile `user`) and whether it can write its rw
// mounts, decided at planning (AH-INV-4). The write checks use real directories: the kernel
// probe and the mode bits are what the sandbox will meet, so they are not faked.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, realpathSync, renameSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { identityOf } from '../../src/sandbox/mount-policy.js';
import {
  NOBODY,
  parseId,
  parseUserFlag,
  resolveSandboxUser,
} from '../../src/sandbox/sandbox-user.js';
import { checkWritableMounts, modeAllowsWrite } from '../../src/sandbox/writable.js';
import type { SpecMount } from '../../src/substrate/container-spec.js';
import { expectConfigError, makeTempDir, removeTempDir, workspaceMountOf } from './helpers.js';

const ROOT = { uid: 0, gid: 0 };
const isRoot = process.getuid?.() === 0;
const hasPython = spawnSync('python3', ['-c', 'import os; os.setxattr']).status === 0;

let tmp: string | undefined;
let ws = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-user-'));
  ws = path.join(tmp, 'ws');
  await mkdir(ws, { mode: 0o755 });
  chmodSync(ws, 0o755);
});

afterEach(async () => {
  if (tmp !== undefined) spawnSync('chattr', ['-R', '-i', tmp]);
  await removeTempDir(tmp);
  tmp = undefined;
});

function rwMount(dir: string, target = '/workspace'): SpecMount {
  return { source: dir, target, mode: 'rw', identity: identityOf(dir) };
}

/** Sets a POSIX access ACL as the kernel stores it (no setfacl here): version 2, entries. */
function setAcl(dir: string, entries: readonly [tag: number, perm: number, id: number][]): void {
  const script = [
    'import os, struct, sys',
    'es = eval(sys.argv[2])',
    "v = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, i) for t, p, i in es)",
    "os.setxattr(sys.argv[1], 'system.posix_acl_access', v)",
  ].join('\n');
  execFileSync('python3', ['-c', script, dir, JSON.stringify(entries)]);
}
const UNDEF = 0xffffffff;
const [USER_OBJ, USER, GROUP_OBJ, MASK, OTHER] = [0x01, 0x02, 0x04, 0x10, 0x20];

describe('--user UID[:GID]: numeric, and uid 0 only when written as 0', () => {
  it.each([
    ['0', '0:0'],
    ['0:0', '0:0'],
    ['1000', '1000:1000'],
    ['1000:50', '1000:50'],
    ['65534:65534', '65534:65534'],
    ['4294967294', '4294967294:4294967294'],
  ])('accepts %s as %s', (text, user) => {
    expect(parseUserFlag(text)).toBe(user);
  });

  // The class: a spelling some parser reads as uid 0 without anyone writing 0.
  it.each([
    '00',
    '-0',
    '+0',
    '0x0',
    '0o0',
    '0e0',
    '0.0',
    ' 0',
    '0 ',
    '4294967296',
    '4294967295',
    '99999999999',
    'root',
    'root:root',
    '',
    ':',
    '1000:',
    ':1000',
    '0:00',
    '1:2:3',
    '\u0660',
  ])('refuses %j', (text) => {
    expectConfigError(() => parseUserFlag(text), 'invalid_user', '--user', 'uid 0 written as 0');
  });

  it('parseId is canonical decimal only', () => {
    expect(parseId('0')).toBe(0);
    expect(parseId('007')).toBeUndefined();
    expect(parseId('1e3')).toBeUndefined();
  });

  it('overrides the profile and is recorded as the flag', () => {
    const mount = workspaceMountOf(ws);
    expect(resolveSandboxUser('123:456', mount, ROOT, '0')).toEqual({
      user: '0:0',
      reason: 'flag',
    });
    expect(resolveSandboxUser('auto', mount, ROOT, '1000')).toEqual({
      user: '1000:1000',
      reason: 'flag',
    });
  });

  it("a profile's user: uid 0 only as a literal 0, never a padded one", () => {
    const base = Profile.shape.user;
    expect(base.safeParse('0:0').success).toBe(true);
    expect(base.safeParse('1000:1000').success).toBe(true);
    for (const bad of ['00:00', '0:00', '-0:0', '0x0:0', 'root:root', '0'])
      expect(base.safeParse(bad).success, bad).toBe(false);
    expectConfigError(
      () => resolveSandboxUser('4294967296:0', workspaceMountOf(ws), ROOT),
      'invalid_user',
    );
  });
});

describe('the mode bits of the class that applies, with no supplementary groups', () => {
  it('owner, then group, then other; create needs write and search', () => {
    const owner = { uid: 0, gid: 0 };
    expect(modeAllowsWrite(owner, 0o755, { uid: 0, gid: 0 })).toBe(true);
    expect(modeAllowsWrite(owner, 0o555, { uid: 0, gid: 0 })).toBe(false);
    expect(modeAllowsWrite(owner, 0o755, { uid: 65534, gid: 65534 })).toBe(false);
    expect(modeAllowsWrite(owner, 0o777, { uid: 65534, gid: 65534 })).toBe(true);
    expect(modeAllowsWrite(owner, 0o772, { uid: 65534, gid: 65534 })).toBe(false);
    expect(modeAllowsWrite({ uid: 0, gid: 65534 }, 0o775, { uid: 65534, gid: 65534 })).toBe(true);
    // The owner class wins even when group or other would allow: the kernel's order.
    expect(modeAllowsWrite({ uid: 5, gid: 0 }, 0o577, { uid: 5, gid: 0 })).toBe(false);
  });
});

describe.runIf(isRoot)('rw mounts the sandbox user cannot write are refused at planning', () => {
  it('a root-owned checkout for nobody: the owner, mode and the three fixes', () => {
    expectConfigError(
      () => {
        checkWritableMounts([rwMount(ws)], NOBODY, ROOT);
      },
      'mount_not_writable',
      `the sandbox user 65534:65534 cannot write ${ws} (owned by 0:0, mode 755); run with --user 0 (explicit root), chown it to 65534:65534, or --workspace-mode draft`,
    );
  });

  it('an extra rw mount names its target and offers no draft mode', () => {
    const error = expectConfigError(
      () => {
        checkWritableMounts([rwMount(ws, '/out')], NOBODY, ROOT);
      },
      'mount_not_writable',
      `${ws} (mounted rw at /out)`,
    );
    expect(error.message).not.toContain('draft');
  });

  it('read-only mounts are not asked about', () => {
    expect(() => {
      checkWritableMounts([workspaceMountOf(ws)], NOBODY, ROOT);
    }).not.toThrow();
  });

  it('passes what the sandbox user may write: owner, group, other', () => {
    chownSync(ws, 65534, 65534);
    expect(() => {
      checkWritableMounts([rwMount(ws)], NOBODY, ROOT);
    }).not.toThrow();
    chownSync(ws, 0, 65534);
    chmodSync(ws, 0o775);
    expect(() => {
      checkWritableMounts([rwMount(ws)], NOBODY, ROOT);
    }).not.toThrow();
    chownSync(ws, 0, 0);
    chmodSync(ws, 0o777);
    expect(() => {
      checkWritableMounts([rwMount(ws)], NOBODY, ROOT);
    }).not.toThrow();
    // Write without search is no way to create a file.
    chmodSync(ws, 0o776);
    expectConfigError(() => {
      checkWritableMounts([rwMount(ws)], NOBODY, ROOT);
    }, 'mount_not_writable');
  });

  it('the parents need not be searchable: the engine mounts the directory itself', async () => {
    const parent = path.join(tmp ?? '', 'closed');
    await mkdir(parent, { mode: 0o700 });
    const inner = path.join(parent, 'ws');
    await mkdir(inner);
    chownSync(inner, 65534, 65534);
    expect(() => {
      checkWritableMounts([rwMount(inner)], NOBODY, ROOT);
    }).not.toThrow();
  });

  it('an rw file needs write, not search; its parents need not be searchable', async () => {
    const parent = path.join(tmp ?? '', 'closed-files');
    await mkdir(parent, { mode: 0o700 });
    const file = path.join(parent, 'cache.db');
    await writeFile(file, 'x', { mode: 0o644 });
    chmodSync(file, 0o644);
    expectConfigError(
      () => {
        checkWritableMounts([rwMount(file, '/cache.db')], NOBODY, ROOT);
      },
      'mount_not_writable',
      `${file} (mounted rw at /cache.db) (owned by 0:0, mode 644); run with --user 0 (explicit root) or chown it to 65534:65534`,
    );
    chownSync(file, 65534, 65534);
    expect(() => {
      checkWritableMounts([rwMount(file, '/cache.db')], NOBODY, ROOT);
    }).not.toThrow();
    expect(modeAllowsWrite({ uid: 1, gid: 1 }, 0o600, { uid: 1, gid: 1 }, false)).toBe(true);
    expect(modeAllowsWrite({ uid: 1, gid: 1 }, 0o600, { uid: 1, gid: 1 }, true)).toBe(false);
  });

  it('uid 0 is judged without DAC override: its capabilities are dropped', () => {
    expect(() => {
      checkWritableMounts([rwMount(ws)], '0:0', ROOT);
    }).not.toThrow();
    chmodSync(ws, 0o555);
    expectConfigError(
      () => {
        checkWritableMounts([rwMount(ws)], '0:0', ROOT);
      },
      'mount_not_writable',
      'mode 555',
      'chmod u+wx it and run with --user 0',
    );
    chownSync(ws, 4321, 4321);
    chmodSync(ws, 0o755);
    expectConfigError(
      () => {
        checkWritableMounts([rwMount(ws)], '0:0', ROOT);
      },
      'mount_not_writable',
      'owned by 4321:4321',
      '--user 4321:4321 (its owner)',
    );
  });

  it('the immutable attribute refuses, though the bits allow', () => {
    chmodSync(ws, 0o777);
    if (spawnSync('chattr', ['+i', ws]).status !== 0) return;
    expectConfigError(
      () => {
        checkWritableMounts([rwMount(ws)], NOBODY, ROOT);
      },
      'mount_not_writable',
      'mode 777, refused by an ACL or file attribute',
    );
  });

  it.runIf(hasPython)('an ACL is the kernel’s answer: it grants and it refuses', () => {
    // mode 755 root's, with an entry granting nobody rwx: writable inside.
    setAcl(ws, [
      [USER_OBJ, 7, UNDEF],
      [USER, 7, 65534],
      [GROUP_OBJ, 5, UNDEF],
      [MASK, 7, UNDEF],
      [OTHER, 5, UNDEF],
    ]);
    expect(() => {
      checkWritableMounts([rwMount(ws)], NOBODY, ROOT);
    }).not.toThrow();
    // mode 777 by the bits, with an entry for nobody that is r-x: refused.
    setAcl(ws, [
      [USER_OBJ, 7, UNDEF],
      [USER, 5, 65534],
      [GROUP_OBJ, 7, UNDEF],
      [MASK, 7, UNDEF],
      [OTHER, 7, UNDEF],
    ]);
    expectConfigError(
      () => {
        checkWritableMounts([rwMount(ws)], NOBODY, ROOT);
      },
      'mount_not_writable',
      'refused by an ACL or file attribute',
    );
  });

  it('a swapped source is refused, never judged by its replacement', async () => {
    const checked = rwMount(ws);
    renameSync(ws, `${ws}.moved`);
    await mkdir(ws);
    chownSync(ws, 65534, 65534);
    expect(() => {
      checkWritableMounts([checked], NOBODY, ROOT);
    }).toThrow(/no longer the object/);
  });
});
