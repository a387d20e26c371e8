// Mount sources compared by identity, not spelling (host-trees.ts; AH-CONT-1, AH-CFC-2):
// pure logic over places and mounted trees, as the mount table gives them.
import { describe, expect, it } from 'vitest';
import {
  holds,
  liesIn,
  sharedTree,
  type MountedTree,
  type SourceTrees,
} from '../../src/host-trees.js';

const DISK = '254:0';
const OTHER = '0:77';
let ino = 100;

/** A directory source at `source`, whose place in file system `device` is `place`. */
function dir(
  target: string,
  source: string,
  place: string,
  beneath: readonly MountedTree[] = [],
  device = DISK,
): SourceTrees {
  return {
    target,
    source,
    identity: { dev: '65024', ino: String(ino++) },
    kind: 'directory',
    names: 2,
    place: { device, path: place },
    beneath,
  };
}

function file(target: string, source: string, place: string, names: number): SourceTrees {
  return { ...dir(target, source, place), kind: 'file', names };
}

describe('holds', () => {
  it('a place holds itself and what lies below it on the same file system, nothing else', () => {
    const srv = { device: DISK, path: '/srv' };
    expect(holds(srv, srv)).toBe(true);
    expect(holds(srv, { device: DISK, path: '/srv/secrets/key' })).toBe(true);
    expect(holds(srv, { device: DISK, path: '/srvx' })).toBe(false);
    expect(holds(srv, { device: DISK, path: '/' })).toBe(false);
    expect(holds(srv, { device: OTHER, path: '/srv/secrets' })).toBe(false);
    expect(holds({ device: DISK, path: '/' }, { device: DISK, path: '/anything' })).toBe(true);
  });
});

describe('liesIn: one source in a tree another reaches', () => {
  it('an alias of the secrets directory bound beneath the workspace: the secrets lie in it', () => {
    const secrets = dir('/secrets', '/srv/secrets', '/srv/secrets');
    const ws = dir('/workspace', '/home/dev/repo', '/home/dev/repo', [
      { at: '/home/dev/repo/alias', place: { device: DISK, path: '/srv/secrets' } },
    ]);
    expect(liesIn(secrets, ws, { same: true })).toMatch(
      /'\/srv\/secrets' is reachable through '\/home\/dev\/repo': the tree mounted at '\/home\/dev\/repo\/alias' is \/srv\/secrets on file system 254:0/,
    );
    // A subdirectory of the bound tree, too; the workspace does not lie in the secrets.
    expect(liesIn(dir('/s', '/srv/secrets/sub', '/srv/secrets/sub'), ws, { same: true })).toMatch(
      /mounted at/,
    );
    expect(liesIn(ws, secrets, { same: true })).toBeUndefined();
  });

  it('a source named through a bind of another lies in it: by place, not by path', () => {
    // `/mnt/view` is a bind of /home/dev/repo: /mnt/view/sub is /home/dev/repo/sub.
    const ws = dir('/workspace', '/home/dev/repo', '/home/dev/repo');
    const sub = dir('/data', '/mnt/view/sub', '/home/dev/repo/sub');
    expect(liesIn(sub, ws, { same: false })).toMatch(
      /^'\/mnt\/view\/sub' is \/home\/dev\/repo\/sub on file system 254:0, inside \/home\/dev\/repo$/,
    );
  });

  it('the same directory under two names counts only when asked', () => {
    const ws = dir('/workspace', '/home/dev/repo', '/home/dev/repo');
    const view = dir('/view', '/mnt/view', '/home/dev/repo');
    expect(liesIn(view, ws, { same: true })).toMatch(/is the same directory as/);
    expect(liesIn(view, ws, { same: false })).toBeUndefined();
    // The same inode is the same object whatever the places say.
    const same = { ...dir('/f', '/a/f', '/a/f'), identity: ws.identity };
    expect(liesIn(same, ws, { same: true })).toMatch(/the same directory/);
  });

  it('paths that look nested are not, when the places are not', () => {
    // /home/dev/repo/mnt is a mount point of another file system: its tree is not the repo's.
    const ws = dir('/workspace', '/home/dev/repo', '/home/dev/repo');
    const other = dir('/data', '/home/dev/repo/mnt/data', '/data', [], OTHER);
    expect(liesIn(other, ws, { same: true })).toBeUndefined();
    expect(liesIn(dir('/x', '/home/dev/repox', '/home/dev/repox'), ws, { same: true })).toBe(
      undefined,
    );
  });

  it('a file with other names may lie in any tree of its file system; one name, only by place', () => {
    const ws = dir('/workspace', '/home/dev/repo', '/home/dev/repo');
    expect(liesIn(file('/k', '/srv/k', '/srv/k', 2), ws, { same: true })).toMatch(
      /'\/srv\/k' is a file with 2 names on file system 254:0, which '\/home\/dev\/repo' reaches/,
    );
    expect(liesIn(file('/k', '/srv/k', '/srv/k', 1), ws, { same: true })).toBeUndefined();
    const elsewhere = { ...file('/k', '/srv/k', '/k', 3), place: { device: OTHER, path: '/k' } };
    expect(liesIn(elsewhere, ws, { same: true })).toBeUndefined();
    // A tree mounted beneath the workspace from the file's file system: another name may be
    // in it, though the name cfh resolved is not.
    const wsOther = dir(
      '/workspace',
      '/w',
      '/w',
      [{ at: '/w/m', place: { device: OTHER, path: '/sub' } }],
      DISK,
    );
    expect(liesIn(elsewhere, wsOther, { same: true })).toMatch(/3 names on file system 0:77/);
  });
});

describe('sharedTree: two sources sharing any file, either way', () => {
  it('finds the alias whichever source comes first', () => {
    const secrets = dir('/secrets', '/srv/secrets', '/srv/secrets');
    const ws = dir('/workspace', '/home/dev/repo', '/home/dev/repo', [
      { at: '/home/dev/repo/alias', place: { device: DISK, path: '/srv/secrets' } },
    ]);
    for (const [a, b] of [
      [secrets, ws],
      [ws, secrets],
    ] as const) {
      const shared = sharedTree(a, b);
      expect(shared?.inner).toBe(secrets);
      expect(shared?.outer).toBe(ws);
    }
  });

  it('a bind of a subdirectory of one beneath the other: part of it is reachable', () => {
    const secrets = dir('/secrets', '/srv/secrets', '/srv/secrets');
    const ws = dir('/workspace', '/w', '/w', [
      { at: '/w/keys', place: { device: DISK, path: '/srv/secrets/keys' } },
    ]);
    expect(sharedTree(ws, secrets)).toMatchObject({
      inner: secrets,
      outer: ws,
      how: "part of '/srv/secrets' is reachable through '/w': the tree mounted at '/w/keys' is /srv/secrets/keys on file system 254:0",
    });
  });

  it('trees mounted beneath both that overlap', () => {
    const a = dir('/a', '/a', '/a', [{ at: '/a/m', place: { device: OTHER, path: '/shared' } }]);
    const b = dir('/b', '/b', '/b', [{ at: '/b/n', place: { device: OTHER, path: '/shared/x' } }]);
    expect(sharedTree(a, b)?.how).toMatch(/the trees mounted at '\/\w\/\w' and '\/\w\/\w' overlap/);
  });

  it('unrelated sources and unrelated mounted trees share nothing', () => {
    const a = dir('/a', '/a', '/a', [{ at: '/a/m', place: { device: OTHER, path: '/one' } }]);
    const b = dir('/b', '/b', '/b', [{ at: '/b/n', place: { device: OTHER, path: '/two' } }]);
    expect(sharedTree(a, b)).toBeUndefined();
    expect(sharedTree(a, dir('/c', '/c', '/one', [], DISK))).toBeUndefined();
  });
});
