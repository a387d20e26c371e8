// A written tree renamed or moved keeps its label (engine/cfc/written-moved.ts): a record
// whose place no longer holds its tree is found by identity where the run's mounts reach it
// (the mount is the tree, lies in it, or holds it), placed there for the one match by
// place; a walk cut short by its budget refuses the run (fail closed); a tree still at its
// place, or one on no mount of the run, adds nothing.
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityAt } from '../../src/cfc/tree-identity.js';
import { writtenInto, type WrittenRecord } from '../../src/cfc/written-labels.js';
import { movedRecords } from '../../src/engine/cfc/written-moved.js';
import type { SourceTrees } from '../../src/host-trees.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-moved-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A mount source whose place is its host path (one file system, as in these tests). */
function mounted(source: string): SourceTrees {
  const id = identityAt(source);
  if (id === undefined) throw new Error(`no ${source}`);
  return {
    target: '/workspace',
    source,
    identity: { dev: id.dev, ino: id.ino },
    kind: 'directory',
    names: 1,
    place: { device: '8:1', path: source },
    beneath: [],
  };
}

async function writtenTree(name: string): Promise<{ path: string; record: WrittenRecord }> {
  const p = path.join(dir, name);
  await mkdir(path.join(p, 'sub'), { recursive: true });
  const identity = identityAt(p);
  return {
    path: p,
    record: {
      version: 1,
      place: { device: '8:1', path: p },
      host: p,
      identity,
      kind: 'directory',
      label: { confidentiality: ['secret'], integrity: [] },
      runs: [{ runId: 'r1', at: '2026-12-07T00:00:00Z' }],
    },
  };
}

function raised(records: WrittenRecord[], mount: SourceTrees): readonly string[] | undefined {
  const all = [...records, ...movedRecords(records, [mount])];
  return writtenInto(mount, all)?.label.confidentiality;
}

describe('a written tree that moved', () => {
  it('is found where a mount is the tree, lies in it, or holds it', async () => {
    const { path: before, record } = await writtenTree('a');
    const after = path.join(dir, 'a-moved');
    await rename(before, after);
    // The record alone matches nothing at the new path (what the red team found).
    expect(writtenInto(mounted(after), [record])).toBeUndefined();
    expect(raised([record], mounted(after))).toEqual(['secret']);
    expect(raised([record], mounted(path.join(after, 'sub')))).toEqual(['secret']);
    const holder = path.join(dir, 'holder');
    await mkdir(holder);
    await rename(after, path.join(holder, 'deep'));
    expect(raised([record], mounted(holder))).toEqual(['secret']);
  });

  it('adds nothing for a tree at its place, or one no mount reaches', async () => {
    const { record } = await writtenTree('b');
    const other = path.join(dir, 'other');
    await mkdir(other);
    expect(movedRecords([record], [mounted(other)])).toEqual([]);
    await rename(path.join(dir, 'b'), path.join(dir, 'b-elsewhere'));
    expect(raised([record], mounted(other))).toBeUndefined();
  });

  it('a walk cut short by its budget refuses the run (written_tree_unlocated): fail closed', async () => {
    const { record } = await writtenTree('c');
    const big = path.join(dir, 'big');
    for (let i = 0; i < 5; i++) await mkdir(path.join(big, `d${String(i)}`), { recursive: true });
    await rename(path.join(dir, 'c'), path.join(dir, 'c-gone'));
    expect(() => movedRecords([record], [mounted(big)], 2)).toThrow(
      expect.objectContaining({ code: 'written_tree_unlocated' }),
    );
  });

  it('without a birth time, device and inode alone match nothing (an inode may be reused)', async () => {
    const { record } = await writtenTree('d');
    const after = path.join(dir, 'd-moved');
    await rename(path.join(dir, 'd'), after);
    const unborn = {
      ...record,
      identity: { ...(record.identity ?? { dev: '', ino: '' }), birth: '0' },
    };
    expect(movedRecords([unborn], [mounted(after)])).toEqual([]);
  });
});
