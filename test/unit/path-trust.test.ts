// Who besides root and cfh's user could replace an entry of a host path: the owner of a
// directory whatever its mode, a group with anyone else in it, anyone.
import { describe, expect, it } from 'vitest';
import { firstPlantableLink, privateGroupOf, writersOf } from '../../src/path-trust.js';

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  'ana:x:1000:1000:Ana:/home/ana:/bin/bash',
  'bo:x:1001:1001:Bo:/home/bo:/bin/bash',
  'cy:x:1002:1001:Cy:/home/cy:/bin/bash',
  'dee:x:1003:1003:Dee:/home/dee:/bin/bash',
].join('\n');
const GROUP = [
  'root:x:0:',
  'ana:x:1000:',
  'bo:x:1001:',
  'dee:x:1003:dee,ana',
  'staff:x:50:ana',
].join('\n');

describe('privateGroupOf', () => {
  it('a primary group nobody else has, and whose member list names only its user', () => {
    expect(privateGroupOf(1000, PASSWD, GROUP)).toBe(1000);
  });

  it('not when another account has it as its primary group', () => {
    expect(privateGroupOf(1001, PASSWD, GROUP)).toBeUndefined();
  });

  it('not when its member list names someone else', () => {
    expect(privateGroupOf(1003, PASSWD, GROUP)).toBeUndefined();
  });

  it('not for a uid the account files do not know', () => {
    expect(privateGroupOf(4321, PASSWD, GROUP)).toBeUndefined();
  });
});

describe('writersOf', () => {
  const trusted = (uid: number): boolean => uid === 0 || uid === 1000;
  const dir = (uid: number, gid: number, mode: number) => ({ uid, gid, mode: 0o40000 | mode });

  it('the owner of a directory, whatever its mode: chmod is theirs', () => {
    expect(writersOf(dir(1001, 1001, 0o555), trusted)).toBe('uid 1001');
  });

  it("group write counts unless the group is root's or the user's private one", () => {
    expect(writersOf(dir(1000, 1000, 0o775), trusted)).toBe('gid 1000');
    expect(
      writersOf(dir(1000, 1000, 0o775), trusted, (g) => g === 0 || g === 1000),
    ).toBeUndefined();
    expect(writersOf(dir(0, 0, 0o775), trusted)).toBeUndefined();
    expect(writersOf(dir(1000, 50, 0o775), trusted, (g) => g === 0 || g === 1000)).toBe('gid 50');
  });

  it('world write always counts', () => {
    expect(writersOf(dir(0, 0, 0o777), trusted)).toBe('anyone');
  });
});

describe('firstPlantableLink: a link only root could have made (AH-CONT-1)', () => {
  // A sandbox writes as a non-root uid (the caller's, the workspace owner's, nobody): any
  // link it could have made is in a directory some non-root uid may write, or is owned by
  // one. Only a link root made, in a chain of directories only root may write, is followed.
  const dir = (uid: number, gid: number, mode: number) => ({ uid, gid, mode: 0o40000 | mode });
  const link = (uid: number) => ({ uid, gid: uid, mode: 0o120777 });
  const tree = (entries: Record<string, { uid: number; gid: number; mode: number }>) =>
    new Map(Object.entries({ '/': dir(0, 0, 0o755), ...entries }));

  it('a root link in directories only root may write is a system link', () => {
    const seen = tree({ '/opt': dir(0, 0, 0o755), '/opt/data': link(0) });
    expect(firstPlantableLink(['/opt/data'], seen)).toBeUndefined();
  });

  it('a link in a directory the caller owns, whoever owns the link', () => {
    const seen = tree({ '/home': dir(0, 0, 0o755), '/home/u': dir(1000, 1000, 0o700) });
    // A link the caller owns was made by the caller's uid, which is a sandbox's too; a
    // root-owned one in the caller's directory can be renamed away and replaced by them.
    for (const [owner, directory] of [
      [1000, '/home/u/cache'],
      [0, '/home/u'],
    ] as const) {
      seen.set('/home/u/cache', link(owner));
      expect(firstPlantableLink(['/home/u/cache'], seen)).toEqual({
        link: '/home/u/cache',
        maker: { directory, who: 'uid 1000' },
      });
    }
  });

  it('a link below the first directory a non-root uid may write, however deep', () => {
    const seen = tree({
      '/srv': dir(1000, 1000, 0o755),
      '/srv/a': dir(0, 0, 0o755),
      '/srv/a/l': link(0),
    });
    expect(firstPlantableLink(['/srv/a/l'], seen)?.maker).toEqual({
      directory: '/srv',
      who: 'uid 1000',
    });
  });

  it('a root link in a sticky directory: anyone may write it, so it is not a system link', () => {
    const seen = tree({ '/tmp': dir(0, 0, 0o1777), '/tmp/l': link(0) });
    expect(firstPlantableLink(['/tmp/l'], seen)?.maker.who).toBe('anyone');
  });

  it("group write counts unless the group is root's", () => {
    const seen = tree({ '/opt': dir(0, 50, 0o775), '/opt/l': link(0) });
    expect(firstPlantableLink(['/opt/l'], seen)?.maker.who).toBe('gid 50');
    seen.set('/opt', dir(0, 0, 0o775));
    expect(firstPlantableLink(['/opt/l'], seen)).toBeUndefined();
  });

  it('a link another uid owns in a root directory: its owner made it', () => {
    const seen = tree({ '/opt': dir(0, 0, 0o755), '/opt/l': link(1000) });
    expect(firstPlantableLink(['/opt/l'], seen)?.maker).toEqual({
      directory: '/opt/l',
      who: 'uid 1000',
    });
  });

  it('the first of several links that is not a system link', () => {
    const seen = tree({
      '/bin': link(0),
      '/usr': dir(0, 0, 0o755),
      '/usr/bin': dir(0, 0, 0o755),
      '/usr/bin/sh': link(0),
      '/home': dir(0, 0, 0o755),
      '/home/u': dir(1000, 1000, 0o755),
      '/home/u/l': link(1000),
    });
    expect(firstPlantableLink(['/bin', '/usr/bin/sh', '/home/u/l'], seen)?.link).toBe('/home/u/l');
  });
});
