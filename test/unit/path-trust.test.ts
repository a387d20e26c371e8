// Who besides root and cfh's user could replace an entry of a host path: the owner of a
// directory whatever its mode, a group with anyone else in it, anyone.
import { describe, expect, it } from 'vitest';
import { privateGroupOf, writersOf } from '../../src/path-trust.js';

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
