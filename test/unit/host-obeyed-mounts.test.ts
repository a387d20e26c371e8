// Class 9, the rw side in planning and at the end of a run: which host-obeyed entries are
// held read-only at the top of an rw mount (src/sandbox/host-obeyed-mounts.ts), which are
// refused because they cannot be, and what the end walk finds the run created or changed
// where nothing held it (src/sandbox/host-obeyed-watch.ts through setid-sweep.ts).
import { link, mkdir, rename, rm, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import { lstatSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { holdHostObeyed } from '../../src/sandbox/host-obeyed-mounts.js';
import { HostObeyedWatch } from '../../src/sandbox/host-obeyed-watch.js';
import { sweepSetid } from '../../src/sandbox/setid-sweep.js';
import { identityOf } from '../../src/sandbox/mount-policy.js';
import type { SpecMount } from '../../src/substrate/container-spec.js';
import { ConfigError } from '../../src/errors.js';
import { makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;
let ws = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-obeyed-'));
  ws = path.join(tmp, 'ws');
  await mkdir(path.join(ws, '.git', 'hooks'), { recursive: true });
  await writeFile(path.join(ws, '.git', 'config'), '[core]\n');
  await writeFile(path.join(ws, '.envrc'), 'export A=1\n');
  await writeFile(path.join(ws, 'README'), 'readme\n');
  await mkdir(path.join(ws, 'src'));
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

const rw = (source = ws, target = '/workspace'): SpecMount => ({
  source,
  target,
  mode: 'rw',
  identity: identityOf(source),
});

function refusal(f: () => unknown): ConfigError {
  try {
    f();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe('class 9: holding the top of an rw mount read-only', () => {
  it('mounts each host-obeyed entry at the top over itself, read-only, with its identity', () => {
    const plan = holdHostObeyed([rw()], 'ro');
    expect(plan.guarded).toEqual(['/workspace']);
    expect(plan.mounts).toEqual([
      {
        source: path.join(ws, '.envrc'),
        target: '/workspace/.envrc',
        mode: 'ro',
        identity: identityOf(path.join(ws, '.envrc')),
      },
      {
        source: path.join(ws, '.git'),
        target: '/workspace/.git',
        mode: 'ro',
        identity: identityOf(path.join(ws, '.git')),
      },
    ]);
  });

  it('holds nothing when the operator named them writable, and nothing in a read-only mount', () => {
    expect(holdHostObeyed([rw()], 'rw')).toEqual({
      mode: 'rw',
      mounts: [],
      guarded: [],
      // Watched still: where the repository sends git (its git directory, .git).
      repository: [{ source: ws, paths: ['.git'] }],
    });
    const ro = { ...rw(), mode: 'ro' as const };
    expect(holdHostObeyed([ro], 'ro').mounts).toEqual([]);
  });

  it('guards every rw directory mount, not only the workspace', async () => {
    const data = path.join(dir(), 'data');
    await mkdir(data);
    await writeFile(path.join(data, '.npmrc'), 'registry=x\n');
    const plan = holdHostObeyed([rw(), rw(data, '/data')], 'ro');
    expect(plan.guarded).toEqual(['/workspace', '/data']);
    expect(plan.mounts.map((m) => m.target)).toEqual([
      '/workspace/.envrc',
      '/workspace/.git',
      '/data/.npmrc',
    ]);
  });

  it('holds a worktree .git file whose git directory lies outside', async () => {
    await rmGit();
    await writeFile(path.join(ws, '.git'), `gitdir: ${path.join(dir(), 'main', '.git')}\n`);
    expect(holdHostObeyed([rw()], 'ro').mounts.map((m) => m.target)).toContain('/workspace/.git');
  });

  it('refuses what it cannot hold: a link, another name of the file, a git directory inside', async () => {
    await symlink('/etc', path.join(ws, '.vscode'));
    expect(refusal(() => holdHostObeyed([rw()], 'ro')).message).toMatch(
      /\.vscode' \(at \/workspace\/\.vscode\) is a symbolic link/,
    );
    await rename(path.join(ws, '.vscode'), path.join(ws, 'gone'));
    await link(path.join(ws, '.envrc'), path.join(ws, 'src', 'other'));
    const linked = refusal(() => holdHostObeyed([rw()], 'ro'));
    expect(linked.code).toBe('host_obeyed_unheld');
    expect(linked.message).toMatch(/a file with 2 names/);
    expect(linked.hint).toMatch(/--host-obeyed rw/);
    await unlink(path.join(ws, 'src', 'other'));
    await rmGit();
    await writeFile(path.join(ws, '.git'), 'gitdir: src/planted\n');
    expect(refusal(() => holdHostObeyed([rw()], 'ro')).message).toMatch(
      /a \.git file naming 'src\/planted', a git directory inside the writable mount/,
    );
  });

  it('refuses to list a mount that is no longer the object planning checked', async () => {
    const checked = rw();
    await rename(ws, `${ws}-moved`);
    await mkdir(ws);
    expect(() => holdHostObeyed([checked], 'ro')).toThrow(/no longer the object cfh checked/);
  });
});

describe('class 9: the end walk finds what the run planted where nothing held it', () => {
  it('names new and changed host-obeyed entries (the shallowest), not older ones, not held ones', async () => {
    const held = holdHostObeyed([rw()], 'ro').mounts;
    await mkdir(path.join(ws, 'sub', '.git', 'hooks'), { recursive: true });
    await mkdir(path.join(ws, 'vendor'));
    await writeFile(path.join(ws, 'vendor', '.gitattributes'), '* text\n');
    const since = new Date();
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The run: a nested repository's hook, a new .envrc deeper down, a write inside the held
    // .git (which the sandbox could not make: a host tool's), an ordinary file.
    await writeFile(path.join(ws, 'sub', '.git', 'hooks', 'post-checkout'), '#!/bin/sh\n');
    await mkdir(path.join(ws, 'pkg'));
    await writeFile(path.join(ws, 'pkg', '.envrc'), 'export B=1\n');
    await writeFile(path.join(ws, '.git', 'index'), 'index\n');
    await writeFile(path.join(ws, 'work.txt'), 'work\n');
    // A planted file's times set back: its inode change time still says when.
    await utimes(path.join(ws, 'pkg', '.envrc'), new Date(0), new Date(0));
    const watch = new HostObeyedWatch([ws], held, since);
    const result = await sweepSetid({
      roots: [ws],
      since,
      signal: new AbortController().signal,
      visit: watch.visit,
    });
    expect(result.stats.complete).toBe(true);
    const found = watch.finding();
    expect(found.paths.map((p) => p.path)).toEqual(['pkg/.envrc', 'sub/.git/hooks']);
    expect(found.paths[1]).toMatchObject({ root: ws, type: 'directory' });
    expect(found.count).toBe(3);
    expect(found.omitted).toBe(0);
  });

  it('watches only the roots it is given (a draft copy is not one)', async () => {
    const since = new Date(Date.now() - 1000);
    await writeFile(path.join(ws, 'src', '.envrc'), 'x\n');
    const watch = new HostObeyedWatch([], [], since);
    await sweepSetid({
      roots: [ws],
      since,
      signal: new AbortController().signal,
      visit: watch.visit,
    });
    expect(watch.finding().count).toBe(0);
    expect(lstatSync(path.join(ws, 'src', '.envrc')).isFile()).toBe(true);
  });
});

function dir(): string {
  if (tmp === undefined) throw new Error('no temp dir');
  return tmp;
}

async function rmGit(): Promise<void> {
  await rm(path.join(ws, '.git'), { recursive: true, force: true });
}
