// The host-side set-id sweep (src/sandbox/setid-sweep.ts) on a real temp tree: what it
// strips, what it must leave alone (symlinks pointing outside, entries from before the
// run), a file replaced between the walk and the strip, and its bounds.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  open,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { mkdirSync, renameSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stripSetidAt, sweepSetid } from '../../src/sandbox/setid-sweep.js';

let base: string;
let root: string;
let outside: string;
const never = new AbortController().signal;

async function file(p: string, mode: number): Promise<void> {
  await writeFile(p, 'x');
  await chmod(p, mode); // chmod, not the create mode: the umask would not apply to 0o6000 anyway
}
const modeOf = async (p: string): Promise<string> => ((await lstat(p)).mode & 0o7777).toString(8);
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeEach(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'cfh-setid-sweep-'));
  root = path.join(base, 'workspace');
  outside = path.join(base, 'outside');
  await mkdir(root);
  await mkdir(outside);
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('sweepSetid', () => {
  it('strips set-id bits the run left, and nothing else, without following symlinks', async () => {
    // Before the run: a set-uid file and a set-gid directory of the owner's, and set-id
    // files outside the root.
    await file(path.join(root, 'old-tool'), 0o4755);
    await mkdir(path.join(root, 'team'));
    await chmod(path.join(root, 'team'), 0o2770);
    await file(path.join(outside, 'victim'), 0o4755);
    await mkdir(path.join(outside, 'dir'));
    await file(path.join(outside, 'dir', 'victim2'), 0o2755);
    // File timestamps come from the kernel's coarse clock: keep `since` clearly apart.
    await tick(50);
    const since = new Date();
    await tick(50);
    // During the run.
    await file(path.join(root, 'suid'), 0o4755);
    await file(path.join(root, 'sgid'), 0o2711);
    await file(path.join(root, 'plain'), 0o644);
    await mkdir(path.join(root, 'shared'));
    await chmod(path.join(root, 'shared'), 0o2775);
    await mkdir(path.join(root, 'shared', 'inherits')); // S_ISGID from its parent
    await file(path.join(root, 'shared', 'both'), 0o6755);
    await symlink(path.join(outside, 'victim'), path.join(root, 'link-to-file'));
    await symlink(path.join(outside, 'dir'), path.join(root, 'link-to-dir'));
    await symlink(path.join(outside, 'victim'), path.join(root, 'shared', 'inherits', 'deep'));
    // The run adds a file to the owner's set-gid directory: its ctime moves, not its birth.
    await file(path.join(root, 'team', 'notes'), 0o640);
    expect(await modeOf(path.join(root, 'shared', 'inherits'))).toBe('2755');

    const result = await sweepSetid({ roots: [root], since, signal: never });
    const stripped = [...result.stripped].sort((a, b) => a.path.localeCompare(b.path));
    const expected = [
      ['sgid', 'file', 0o2711, 0o711],
      ['shared', 'directory', 0o2775, 0o775],
      ['shared/both', 'file', 0o6755, 0o755],
      ['shared/inherits', 'directory', 0o2755, 0o755],
      ['suid', 'file', 0o4755, 0o755],
    ] as const;
    expect(stripped).toEqual(
      await Promise.all(
        expected.map(async ([p, type, modeBefore, modeAfter]) => {
          const st = await lstat(path.join(root, p));
          return { root, path: p, type, modeBefore, modeAfter, dev: st.dev, ino: st.ino };
        }),
      ),
    );
    for (const [p, , , after] of expected)
      expect(await modeOf(path.join(root, p)), p).toBe(after.toString(8));
    // Left alone: the owner's entries from before the run, and everything outside the root.
    expect(await modeOf(path.join(root, 'old-tool'))).toBe('4755');
    expect(await modeOf(path.join(root, 'team'))).toBe('2770');
    expect(await modeOf(path.join(outside, 'victim'))).toBe('4755');
    expect(await modeOf(path.join(outside, 'dir', 'victim2'))).toBe('2755');
    expect(await modeOf(path.join(root, 'plain'))).toBe('644');
    expect(result.skipped).toEqual([]);
    // old-tool team suid sgid plain shared link-to-file link-to-dir, team/notes,
    // shared/{inherits,both}, shared/inherits/deep: 12; the symlinked directory's victim2
    // was not reached.
    expect(result.stats).toMatchObject({ entries: 12, complete: true, setidBeforeRun: 2 });
    expect(result.stats.ms).toBeGreaterThanOrEqual(0);
  });

  it('walks a root given as /proc/self/fd/N of a pinned directory', async () => {
    const since = new Date(Date.now() - 1000);
    await mkdir(path.join(root, 'a'));
    await file(path.join(root, 'a', 'suid'), 0o4700);
    const pinned = await open(root, 'r');
    try {
      const viaFd = `/proc/self/fd/${pinned.fd}`;
      // The pinned directory is the one walked even once its path names something else.
      await rename(root, path.join(base, 'moved'));
      await mkdir(root);
      await file(path.join(root, 'decoy'), 0o4755);
      const result = await sweepSetid({ roots: [viaFd], since, signal: never });
      expect(result.stripped.map((s) => [s.root, s.path, s.modeAfter])).toEqual([
        [viaFd, 'a/suid', 0o700],
      ]);
      expect(await modeOf(path.join(base, 'moved', 'a', 'suid'))).toBe('700');
      expect(await modeOf(path.join(root, 'decoy'))).toBe('4755');
    } finally {
      await pinned.close();
    }
  });

  it('stops at the entry cap, the time cap, or an abort, and says so', async () => {
    const since = new Date(Date.now() - 1000);
    for (const name of ['a', 'b', 'c', 'd']) await file(path.join(root, name), 0o4755);
    const capped = await sweepSetid({ roots: [root], since, signal: never, maxEntries: 2 });
    expect(capped.stats).toMatchObject({ entries: 2, complete: false, stoppedBy: 'entry-cap' });
    // What it did strip before the cap is reported.
    expect(capped.stripped).toHaveLength(2);
    const timed = await sweepSetid({ roots: [root], since, signal: never, maxMs: 0 });
    expect(timed.stats).toMatchObject({ entries: 0, complete: false, stoppedBy: 'time-cap' });
    const aborted = new AbortController();
    aborted.abort();
    const stopped = await sweepSetid({ roots: [root], since, signal: aborted.signal });
    expect(stopped.stats).toMatchObject({ complete: false, stoppedBy: 'aborted' });
    expect(stopped.stripped).toEqual([]);
    expect(await modeOf(path.join(root, 'd'))).toBe('4755');
  });

  it('reports a root it cannot open and goes on with the others', async () => {
    const since = new Date(Date.now() - 1000);
    await file(path.join(root, 'x'), 0o2755);
    const missing = path.join(base, 'missing');
    const result = await sweepSetid({ roots: [missing, root], since, signal: never });
    expect(result.skipped).toEqual([{ root: missing, path: '.', reason: 'ENOENT' }]);
    expect(result.stripped.map((s) => s.path)).toEqual(['x']);
  });
});

describe('sweepSetid: a directory it could not read makes it incomplete', () => {
  it('says incomplete for a root that is not a directory it can open', async () => {
    const since = new Date(Date.now() - 1000);
    const notDir = path.join(base, 'file');
    await file(notDir, 0o644);
    const result = await sweepSetid({ roots: [notDir], since, signal: never });
    expect(result.stats).toMatchObject({ complete: false, unreached: 1 });
    // A root that is gone holds nothing: that is not a gap in the walk.
    const gone = await sweepSetid({ roots: [path.join(base, 'gone')], since, signal: never });
    expect(gone.stats).toMatchObject({ complete: true, unreached: 0 });
  });

  it('says incomplete for a directory replaced between its listing and its walk', async () => {
    const since = new Date(Date.now() - 1000);
    await mkdir(path.join(root, 'sub'));
    await file(path.join(root, 'sub', 'x'), 0o644);
    const visit = (_root: string, rel: string): undefined => {
      if (rel === 'sub') {
        renameSync(path.join(root, 'sub'), path.join(root, 'was'));
        mkdirSync(path.join(root, 'sub'));
      }
      return undefined;
    };
    const result = await sweepSetid({ roots: [root], since, signal: never, visit });
    expect(result.skipped).toContainEqual({ root, path: 'sub', reason: 'replaced' });
    expect(result.stats).toMatchObject({ complete: false, unreached: 1 });
    const control = await sweepSetid({ roots: [root], since, signal: never });
    expect(control.stats).toMatchObject({ complete: true, unreached: 0 });
  });
});

describe('stripSetidAt: the inode the walk saw, or nothing', () => {
  it('leaves a file alone that was replaced between the walk and the strip', async () => {
    const target = path.join(root, 'x');
    await file(target, 0o4755);
    const seen = await lstat(target, { bigint: true });
    // Replaced by another set-uid file (a new inode) under the same name.
    await file(path.join(root, 'other'), 0o4711);
    await rename(path.join(root, 'other'), target);
    expect(await stripSetidAt(root, 'x', seen)).toEqual({ stripped: false, reason: 'replaced' });
    expect(await modeOf(target)).toBe('4711');
  });

  it('never follows a symlink put in its place', async () => {
    const target = path.join(root, 'y');
    await file(target, 0o4755);
    const seen = await lstat(target, { bigint: true });
    await file(path.join(outside, 'victim'), 0o4755);
    await rm(target);
    await symlink(path.join(outside, 'victim'), target);
    expect(await stripSetidAt(root, 'y', seen)).toEqual({ stripped: false, reason: 'replaced' });
    expect(await modeOf(path.join(outside, 'victim'))).toBe('4755');
  });

  it('strips the same inode, and says so when the bits are already gone or it vanished', async () => {
    const target = path.join(root, 'z');
    await file(target, 0o6750);
    const seen = await lstat(target, { bigint: true });
    expect(await stripSetidAt(root, 'z', seen)).toEqual({
      stripped: true,
      type: 'file',
      modeBefore: 0o6750,
      modeAfter: 0o750,
      dev: Number(seen.dev),
      ino: Number(seen.ino),
    });
    expect(await stripSetidAt(root, 'z', seen)).toEqual({ stripped: false, reason: 'unchanged' });
    await rm(target);
    expect(await stripSetidAt(root, 'z', seen)).toEqual({ stripped: false, reason: 'ENOENT' });
  });
});
