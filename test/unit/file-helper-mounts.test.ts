// The file helper's mount boundary against where a mount really is (tools/file-helper.ts):
// run here with the host's python3 over a temp tree standing in for a container's, since
// the logic is the helper's own. A target through a link is matched by its real place, which
// must be a mount point of the kernel's table; a path reaching a mount by its real place is
// refused; the integration test (cfc-mount-alias) proves it against the engine's mounts.
import { spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FILE_HELPER } from '../../src/tools/file-helper.js';

const tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'cfh-file-helper-')));
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

function helper(request: Record<string, unknown>): { code: number | null; out: string } {
  const r = spawnSync('python3', ['-I', '-S', '-B', '-c', FILE_HELPER], {
    input: JSON.stringify({ base: tmp, ...request }),
    encoding: 'utf8',
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

describe('the file helper matches a real path against where each mount is', () => {
  // /proc is a mount point of every namespace: `ln` -> /proc stands for /var/run -> /run.
  symlinkSync('/proc', path.join(tmp, 'ln'));
  const mounts = [path.join(tmp, 'ln')];

  it('reads a mount by its target as written', () => {
    const r = helper({ op: 'read', path: 'ln/version', limit: 100, mounts });
    expect(r.code, r.out).toBe(0);
  });

  it('refuses its real place, which names no mount', () => {
    const r = helper({ op: 'read', path: '/proc/version', limit: 100, mounts });
    expect(r.code).toBe(3);
    expect(r.out).toMatch(/mount_boundary.*leads out of the image's own files/);
  });

  it('refuses a grep whose start reaches the mount by its real place', () => {
    // A mount point below a directory that is not one: /dev/shm under /dev.
    const points = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4]);
    const shm = ['/dev/shm', '/sys/fs/cgroup', '/dev/pts'].find((p) => points.includes(p));
    if (shm === undefined) throw new Error('no nested mount point on this host');
    symlinkSync(shm, path.join(tmp, 'nested'));
    const nested = [path.join(tmp, 'nested')];
    const start = path.dirname(shm);
    const r = helper({ op: 'grep', path: start, argv: ['/bin/true'], mounts: nested });
    expect(r.code).toBe(3);
    expect(r.out).toContain(`reaches the mount ${nested[0] ?? ''} as ${shm}`);
    // Started at the link, the mount is at the path it names: grep runs.
    expect(helper({ op: 'grep', path: 'nested', argv: ['/bin/true'], mounts: nested }).code).toBe(
      0,
    );
  });

  it('refuses every call when a linked target is not a mount point (it moved)', () => {
    mkdirSync(path.join(tmp, 'real', 'secrets'), { recursive: true });
    writeFileSync(path.join(tmp, 'real', 'secrets', 'token'), 'x');
    symlinkSync('real', path.join(tmp, 'rel'));
    const r = helper({
      op: 'read',
      path: 'rel/secrets/token',
      limit: 100,
      mounts: [path.join(tmp, 'rel', 'secrets')],
    });
    expect(r.code).toBe(3);
    expect(r.out).toMatch(/mount_boundary.*rel\/secrets is not at .*real\/secrets/);
  });
});

describe('grep searches the start the helper checked, not the name again', () => {
  it('a link swapped in after the check is not what grep searches', () => {
    // The workspace's `src` is a directory when the helper opens and checks it; the "grep"
    // the helper becomes first swaps `src` for a link to a secret directory (standing for a
    // workload process racing the check), then greps what it was handed.
    const ws = path.join(tmp, 'ws-race');
    mkdirSync(path.join(ws, 'src'), { recursive: true });
    writeFileSync(path.join(ws, 'src', 'a.txt'), 'public line\n');
    mkdirSync(path.join(tmp, 'vault'));
    writeFileSync(path.join(tmp, 'vault', 'key'), 'SECRET-7Hq\n');
    const swap = `mv ${ws}/src ${ws}/src.old && ln -s ${tmp}/vault ${ws}/src && exec grep -rnZ -e SECRET -e public -- "$1"`;
    const r = helper({
      op: 'grep',
      base: ws,
      path: 'src',
      argv: ['/bin/sh', '-c', swap, 'sh'],
      mounts: [ws],
    });
    expect(r.out).not.toContain('SECRET-7Hq');
    expect(r.out).toContain('public line');
    // The name it printed is the opened start's, which the observation maps back.
    expect(r.out).toContain('/proc/self/fd/7/a.txt');
  });
});
