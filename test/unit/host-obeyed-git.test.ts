// Class 9, where git actually looks (src/host-obeyed-git.ts): the paths a repository's own
// settings send git to, read with the real git from a temp repository; the apply gate
// holding them and a git directory a patch makes (workspace/host-obeyed-gate.ts); the rw
// planning refusing them and a held file with another name (sandbox/host-obeyed-mounts.ts,
// sandbox/host-obeyed-links.ts).
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { link, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  gitHeldPaths,
  gitHeldPathsSync,
  obeyedByConfig,
  parseConfigList,
} from '../../src/host-obeyed-git.js';
import { gateHostObeyed } from '../../src/workspace/host-obeyed-gate.js';
import { holdHostObeyed } from '../../src/sandbox/host-obeyed-mounts.js';
import { refuseOtherNames } from '../../src/sandbox/host-obeyed-links.js';
import { identityOf } from '../../src/sandbox/mount-policy.js';
import { ConfigError } from '../../src/errors.js';
import type { PatchChange } from '../../src/workspace/patch.js';
import type { SpecMount } from '../../src/substrate/container-spec.js';
import { makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;
let ws = '';
const never = new AbortController().signal;

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-obeyed-git-'));
  ws = path.join(tmp, 'ws');
  await mkdir(ws);
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

const git = (...args: string[]): string => execFileSync('git', args, { encoding: 'utf8' });
const rw = (): SpecMount => ({
  source: ws,
  target: '/workspace',
  mode: 'rw',
  identity: identityOf(ws),
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

describe('class 9: what a repository sends git to', () => {
  it('parses git config -z --list --show-origin and resolves as git does', () => {
    const out =
      'file:/r/.git/config\0core.hookspath\ntools/hooks\0' +
      'file:/r/.git/config\0include.path\n../team.gitconfig\0' +
      'file:/r/.git/config\0core.fsmonitor\nscripts/watch --flag\0' +
      'file:/r/.git/config\0alias.x\n!./bin/x arg\0' +
      'file:/r/.git/config\0core.editor\nvim\0' +
      'command line:\0user.name\nop\0';
    const entries = parseConfigList(out);
    expect(entries[0]).toEqual({
      origin: 'file:/r/.git/config',
      key: 'core.hookspath',
      value: 'tools/hooks',
    });
    const abs = obeyedByConfig(entries, '/r').map((a) => a.abs);
    expect(abs).toContain('/r/tools/hooks');
    // An include resolves against the file naming it.
    expect(abs).toContain('/r/team.gitconfig');
    expect(abs).toContain('/r/scripts/watch');
    expect(abs).toContain('/r/bin/x');
    expect(abs).toContain('/r/.git/config');
    // A program found on PATH is not the workspace's.
    expect(abs).not.toContain('/r/vim');
  });

  it('reads core.hooksPath, a gitdir and an include from the real repository, inside the workspace only', async () => {
    git('init', '-q', '--bare', path.join(ws, '.bare'));
    git('config', '-f', path.join(ws, '.bare', 'config'), 'core.bare', 'false');
    await writeFile(path.join(ws, '.git'), 'gitdir: ./.bare\n');
    git('config', '-f', path.join(ws, '.bare', 'config'), 'core.hooksPath', 'tools/hooks');
    git('config', '-f', path.join(ws, '.bare', 'config'), 'include.path', '../shared.gitconfig');
    git('config', '-f', path.join(ws, '.bare', 'config'), 'core.attributesFile', '/etc/elsewhere');
    const held = await gitHeldPaths(ws, never);
    expect(held.map((h) => h.path)).toEqual([
      '.bare',
      '.bare/config',
      'shared.gitconfig',
      'tools/hooks',
    ]);
    expect(held.find((h) => h.path === 'tools/hooks')?.why).toBe('core.hookspath');
    expect(gitHeldPathsSync(ws)).toEqual(held);
    // A subdirectory of the repository: what lies inside it, resolved against the worktree.
    await mkdir(path.join(ws, 'tools'));
    expect(gitHeldPathsSync(path.join(ws, 'tools')).map((h) => h.path)).toEqual(['hooks']);
    // No repository: nothing.
    const bare = path.join(tmp ?? '', 'plain');
    await mkdir(bare);
    expect(await gitHeldPaths(bare, never)).toEqual([]);
  });
});

const file = (sha: string) => ({ type: 'file' as const, mode: 0o644, size: 1, sha256: sha });
const dir = { type: 'directory' as const, mode: 0o755 };
const A = 'a'.repeat(64);
const added = (p: string, after: PatchChange['after'] = file(A)): PatchChange => ({
  path: p,
  kind: 'added',
  before: null,
  after,
  applicable: true,
});

describe('class 9: the apply gate holds where git looks', () => {
  it('holds what the host repository names, with the setting that names it', () => {
    const changes = [added('tools/hooks/post-checkout'), added('.bare/config'), added('src/a.ts')];
    const host = {
      git: [
        { path: '.bare', why: 'the git directory' },
        { path: 'tools/hooks', why: 'core.hookspath' },
      ],
    };
    const gate = gateHostObeyed('run-1', changes, [], host);
    expect(gate.heldBack).toEqual(['tools/hooks/post-checkout', '.bare/config']);
    expect(gate.changes[0]?.note).toMatch(/git \(core\.hookspath\)/);
    // Without what the host says, only the listed names are held.
    expect(gateHostObeyed('run-1', changes).heldBack).toEqual([]);
    // Named, it is written.
    const named = gateHostObeyed('run-1', changes, ['tools/hooks'], host);
    expect(named.heldBack).toEqual(['.bare/config']);
  });

  it('holds a git directory the patch makes or completes, whatever its name', () => {
    const made = [
      added('repo', dir),
      added('repo/HEAD'),
      added('repo/config'),
      added('repo/objects', dir),
      added('notes/HEAD'),
    ];
    expect(gateHostObeyed('run-1', made).heldBack).toEqual([
      'repo',
      'repo/HEAD',
      'repo/config',
      'repo/objects',
    ]);
    // Completed: the host has HEAD and commondir already, the patch writes its config.
    const completed = [added('wt/config')];
    const hostHas = (rel: string): boolean => rel === 'wt/HEAD' || rel === 'wt/commondir';
    expect(gateHostObeyed('run-1', completed, [], { hostHas }).heldBack).toEqual(['wt/config']);
    expect(gateHostObeyed('run-1', completed).heldBack).toEqual([]);
  });
});

describe('class 9: rw planning refuses what it cannot hold', () => {
  it('refuses a core.hooksPath outside the listed names, holds one under them', async () => {
    git('init', '-q', ws);
    await mkdir(path.join(ws, 'tools', 'hooks'), { recursive: true });
    git('-C', ws, 'config', 'core.hooksPath', 'tools/hooks');
    const e = refusal(() => holdHostObeyed([rw()], 'ro'));
    expect(e.code).toBe('host_obeyed_unheld');
    expect(e.message).toMatch(/tools\/hooks.*core\.hookspath/);
    // --host-obeyed rw: nothing held, the path watched.
    expect(holdHostObeyed([rw()], 'rw').repository).toEqual([
      { source: ws, paths: ['.git', '.git/config', 'tools/hooks'] },
    ]);
    git('-C', ws, 'config', 'core.hooksPath', '.husky/_');
    await mkdir(path.join(ws, '.husky'));
    expect(holdHostObeyed([rw()], 'ro').mounts.map((m) => m.target)).toEqual([
      '/workspace/.git',
      '/workspace/.husky',
    ]);
  });

  it('refuses a held file with another name in the mount, not one whose other name is outside', async () => {
    git('init', '-q', ws);
    await mkdir(path.join(ws, 'docs'));
    const here = ws;
    refuseOtherNames(rw(), here, ['.git']);
    const outside = path.join(tmp ?? '', 'outside-copy');
    await link(path.join(ws, '.git', 'config'), outside);
    refuseOtherNames(rw(), here, ['.git']);
    await link(path.join(ws, '.git', 'config'), path.join(ws, 'docs', 'notes.txt'));
    const e = refusal(() => {
      refuseOtherNames(rw(), here, ['.git']);
    });
    expect(e.message).toMatch(/'docs\/notes\.txt', another name of the held file '\.git\/config'/);
    expect(refusal(() => holdHostObeyed([rw()], 'ro')).code).toBe('host_obeyed_unheld');
    // Past its bound, the look refuses: what it did not see is not clear.
    expect(
      refusal(() => {
        refuseOtherNames(rw(), here, ['.git'], 3);
      }).message,
    ).toMatch(/more than 3 entries/);
  });

  it('does not look into a git directory objects/ (a local clone hard-links them)', async () => {
    git('init', '-q', ws);
    await mkdir(path.join(ws, '.git', 'objects', 'ab'), { recursive: true });
    await writeFile(path.join(ws, '.git', 'objects', 'ab', 'cd'), 'object');
    await link(path.join(ws, '.git', 'objects', 'ab', 'cd'), path.join(ws, 'copy'));
    expect(() => {
      refuseOtherNames(rw(), ws, ['.git']);
    }).not.toThrow();
  });
});
