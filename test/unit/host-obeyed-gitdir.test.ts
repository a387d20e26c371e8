// Class 9, a directory git treats as a repository whatever it is named (src/host-obeyed-gitdir.ts):
// one predicate, asked by the apply gate over a patch (workspace/host-obeyed-gate.ts) and by
// the rw end walk over the tree it saw (sandbox/host-obeyed-watch.ts). Checked against the
// real git (every shape it takes for a repository is one the predicate holds), and the two
// ends against each other on the same tree.
import { execFileSync } from 'node:child_process';
import { readdirSync, realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gitDirectoriesAbove, isGitDirectoryShape } from '../../src/host-obeyed-gitdir.js';
import { HostObeyedWatch } from '../../src/sandbox/host-obeyed-watch.js';
import { sweepSetid } from '../../src/sandbox/setid-sweep.js';
import { gateHostObeyed } from '../../src/workspace/host-obeyed-gate.js';
import type { PatchChange } from '../../src/workspace/patch.js';
import { makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;
let ws = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-obeyed-gitdir-'));
  ws = path.join(tmp, 'ws');
  await mkdir(ws);
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-c', 'safe.directory=*', ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    env: { ...process.env, GIT_CEILING_DIRECTORIES: tmp ?? '' },
  });

/** Whether git, run in `dir`, takes `dir` itself for its git directory. */
function gitTakes(dir: string): boolean {
  try {
    return realpathSync(path.resolve(dir, git(dir, 'rev-parse', '--git-dir').trim())) === dir;
  } catch {
    return false;
  }
}

const shapeOnDisk = (dir: string, names: readonly string[]): boolean =>
  isGitDirectoryShape((n) => names.some((m) => m.toLowerCase() === n.toLowerCase()));

async function plantBare(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'objects'), { recursive: true });
  await mkdir(path.join(dir, 'refs', 'heads'), { recursive: true });
  await writeFile(path.join(dir, 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(path.join(dir, 'config'), '[core]\n\tworktree = ..\n\tfsmonitor = "false"\n');
}

const file = { type: 'file' as const, mode: 0o644, size: 1, sha256: 'a'.repeat(64) };
const dir = { type: 'directory' as const, mode: 0o755 };
/** A change adding `p`: a directory when it ends in `/` (taken off). */
const added = (p: string): PatchChange => ({
  path: p.replace(/\/$/, ''),
  kind: 'added',
  before: null,
  after: p.endsWith('/') ? dir : file,
  applicable: true,
});

async function walk(since: Date): Promise<string[]> {
  const watch = new HostObeyedWatch([ws], [], since);
  const r = await sweepSetid({
    roots: [ws],
    since,
    signal: new AbortController().signal,
    visit: watch.visit,
  });
  expect(r.stats.complete).toBe(true);
  return watch.finding().paths.map((p) => p.path);
}

describe('class 9: a directory git treats as a repository is one predicate, for the rw end walk and the apply gate', () => {
  it('holds every shape the real git takes for a repository, and not a directory one name short', async () => {
    const bare = path.join(ws, 'bare');
    git(ws, 'init', '-q', '--bare', bare);
    const planted = path.join(ws, 'docs', 'site');
    await plantBare(planted);
    const main = path.join(ws, 'main');
    git(ws, 'init', '-q', main);
    git(
      main,
      '-c',
      'user.email=t@t',
      '-c',
      'user.name=t',
      'commit',
      '-q',
      '--allow-empty',
      '-m',
      'x',
    );
    git(main, 'worktree', 'add', '-q', path.join(ws, 'wt'));
    const linked = path.join(main, '.git', 'worktrees', 'wt');
    for (const d of [bare, planted, linked]) {
      expect(gitTakes(d), d).toBe(true);
      expect(shapeOnDisk(d, readdirSync(d)), d).toBe(true);
    }
    // The common directory a `commondir` names: git reads its config and hooks, no HEAD needed.
    expect(isGitDirectoryShape((n) => n === 'objects' || n === 'refs')).toBe(true);
    // One name alone is not a repository (an ordinary `refs/` or `HEAD` file in a project).
    for (const one of ['HEAD', 'objects', 'refs', 'commondir', 'config'])
      expect(
        isGitDirectoryShape((n) => n === one),
        one,
      ).toBe(false);
    // Names compared as a case-insensitive file system finds them.
    expect(shapeOnDisk('', ['head', 'Objects'])).toBe(true);
  });

  it('the rw end walk says a bare repository planted under an ordinary name, as the gate holds it', async () => {
    await mkdir(path.join(ws, 'fixtures', 'repo.git', 'objects'), { recursive: true });
    await mkdir(path.join(ws, 'fixtures', 'repo.git', 'refs'));
    await writeFile(path.join(ws, 'fixtures', 'repo.git', 'HEAD'), 'ref: refs/heads/main\n');
    await writeFile(path.join(ws, 'README'), 'x\n');
    const since = new Date();
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The run: a repository under an ordinary name, a config in a repository the host had,
    // ordinary work beside them.
    await plantBare(path.join(ws, 'docs', 'site'));
    await writeFile(path.join(ws, 'fixtures', 'repo.git', 'config'), '[core]\n\tfsmonitor = x\n');
    await writeFile(path.join(ws, 'docs', 'index.md'), 'work\n');
    await writeFile(path.join(ws, 'README'), 'work\n');
    // A file created in the host's repository changes the directory too: it is named.
    expect(await walk(since)).toEqual(['docs/site', 'fixtures/repo.git']);
    // The gate, over the same change as a patch, holds the same directories.
    const patch = [
      'docs/',
      'docs/site/',
      'docs/site/HEAD',
      'docs/site/config',
      'docs/site/objects/',
      'docs/site/refs/',
      'docs/index.md',
      'fixtures/repo.git/config',
    ].map(added);
    const hostHas = (rel: string): boolean =>
      ['fixtures/repo.git/HEAD', 'fixtures/repo.git/objects', 'fixtures/repo.git/refs'].includes(
        rel,
      );
    const gate = gateHostObeyed('run-1', patch, [], { hostHas });
    expect(gate.heldBack).toEqual([
      'docs/site',
      'docs/site/HEAD',
      'docs/site/config',
      'docs/site/objects',
      'docs/site/refs',
      'fixtures/repo.git/config',
    ]);
  });

  it('gitDirectoriesAbove asks each directory once, the top included', () => {
    const asked: string[] = [];
    const shaped = gitDirectoriesAbove(['a/b/c', 'a/b/d', 'e'], (rel) => {
      asked.push(rel);
      return rel === 'HEAD' || rel === 'objects';
    });
    expect([...shaped]).toEqual(['']);
    const dirs = new Set(asked.map((a) => path.posix.dirname(a)));
    expect([...dirs].sort()).toEqual(['.', 'a', 'a/b', 'a/b/c', 'a/b/d', 'e']);
  });
});
