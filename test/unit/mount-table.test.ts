// The host mount table read and each resolved source placed in it (mount-table.ts): the
// place from the mount the kernel named for the source's descriptor, the trees mounted
// beneath it from the table's mount points. Pure over a given table, and once over this
// machine's own.
import { realpathSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContainmentError } from '../../src/errors.js';
import {
  parseMountInfo,
  placeObject,
  readMountTable,
  type MountEntry,
} from '../../src/sandbox/mount-table.js';
import { resolveMounts } from '../../src/sandbox/mount-policy.js';
import { makeTempDir, removeTempDir, thrownBy } from './helpers.js';

const TABLE = [
  '22 27 0:21 / /proc rw,relatime - proc proc rw',
  '27 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
  '45 27 254:0 /var/lib/docker /var/lib/docker rw,relatime shared:1 - ext4 /dev/vda rw',
  '60 27 254:0 /srv/secrets /home/dev/repo/alias rw,relatime - ext4 /dev/vda rw',
  '61 27 0:40 / /home/dev/repo/with\\040space rw - tmpfs tmpfs rw',
  '62 27 254:0 /home/dev/repo /mnt/view rw - ext4 /dev/vda rw',
  '63 62 0:41 /x /mnt/view rw - tmpfs tmpfs rw',
  '',
].join('\n');

describe('parseMountInfo', () => {
  it('reads id, parent, device, root and mount point, octal escapes undone', () => {
    const table = parseMountInfo(TABLE);
    expect(table).toHaveLength(7);
    expect(table[3]).toEqual({
      id: 60,
      parent: 27,
      device: '254:0',
      root: '/srv/secrets',
      mountPoint: '/home/dev/repo/alias',
    });
    expect(table[4]?.mountPoint).toBe('/home/dev/repo/with space');
  });

  it('refuses a line it cannot read rather than leave a mount out', () => {
    const error = thrownBy(() => parseMountInfo(`${TABLE}garbage line\n`));
    expect(error).toBeInstanceOf(ContainmentError);
    expect((error as ContainmentError).code).toBe('mount_table_unreadable');
  });
});

describe('placeObject', () => {
  const table: MountEntry[] = parseMountInfo(TABLE);
  const place = (real: string, mountId: number) =>
    placeObject({ real, mountId, names: 1, kind: 'directory' }, table);

  it('a source on the root mount: its place is its path; the mounts below it are beneath it', () => {
    const ws = place('/home/dev/repo', 27);
    expect(ws.place).toEqual({ device: '254:0', path: '/home/dev/repo' });
    expect(ws.beneath).toEqual([
      { at: '/home/dev/repo/alias', place: { device: '254:0', path: '/srv/secrets' } },
      { at: '/home/dev/repo/with space', place: { device: '0:40', path: '/' } },
    ]);
  });

  it('a source opened through a bind mount is placed in the bound tree, not at its path', () => {
    expect(place('/home/dev/repo/alias/key-dir', 60).place).toEqual({
      device: '254:0',
      path: '/srv/secrets/key-dir',
    });
  });

  it('a mount stacked over the source since counts as beneath; the one it covers does not', () => {
    // /mnt/view: 62 binds the repo there, 63 was mounted over it afterwards.
    expect(place('/mnt/view', 62).beneath).toEqual([
      { at: '/mnt/view', place: { device: '0:41', path: '/x' } },
    ]);
    expect(place('/mnt/view', 63).beneath).toEqual([]);
  });

  it('a source whose mount is gone from the table is refused as changed', () => {
    const error = thrownBy(() => place('/home/dev/repo', 99));
    expect(error).toBeInstanceOf(ContainmentError);
    expect((error as ContainmentError).code).toBe('mount_source_changed');
    // Or listed, but at a path the source is not under.
    expect((thrownBy(() => place('/etc', 60)) as ContainmentError).code).toBe(
      'mount_source_changed',
    );
  });
});

describe("this machine's table", () => {
  let tmp: string | undefined;
  beforeEach(async () => {
    tmp = realpathSync(await makeTempDir('cfh-mount-table-'));
  });
  afterEach(async () => {
    await removeTempDir(tmp);
  });

  it('every resolved source is placed on the mount its descriptor lay on', async () => {
    const ws = path.join(tmp ?? '', 'ws');
    await mkdir(ws);
    const { trees } = resolveMounts([
      { source: ws, target: '/workspace', mode: 'ro', origin: 'w' },
    ]);
    const table = readMountTable();
    const [tree] = trees;
    // The place is the kernel's name of the source inside the mount holding it.
    const holder = table
      .filter((e) => ws === e.mountPoint || ws.startsWith(`${e.mountPoint.replace(/\/$/, '')}/`))
      .sort((a, b) => b.mountPoint.length - a.mountPoint.length)[0];
    expect(tree?.place.device).toBe(holder?.device);
    expect(tree?.place.path).toBe(
      path.join(holder?.root ?? '', path.relative(holder?.mountPoint ?? '', ws)),
    );
    expect(tree?.beneath).toEqual([]);
  });
});
