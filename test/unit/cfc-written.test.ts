// What earlier runs wrote into a host tree stays in its label (cfc/written-labels.ts,
// cfc/written-store.ts): matched by identity (the tree, a directory inside it, one holding
// it), joined into the plan's label of the mount, recorded under a lock, durable, read
// fail-closed, and pruned only when the tree is gone.
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { label } from '../../src/cfc/label.js';
import { planCfc } from '../../src/cfc/label-map.js';
import {
  raisedRecord,
  writtenInto,
  WRITTEN_RUNS_KEPT,
  type WrittenRecord,
} from '../../src/cfc/written-labels.js';
import { noteWritten, readWrittenRecords } from '../../src/cfc/written-store.js';
import type { SourceTrees } from '../../src/host-trees.js';

function tree(target: string, place: string, device = '0:45'): SourceTrees {
  return {
    target,
    source: place,
    identity: { dev: '45', ino: place },
    kind: 'directory',
    names: 1,
    place: { device, path: place },
    beneath: [],
  };
}

function record(
  place: string,
  l: { confidentiality?: string[]; integrity?: string[] },
): WrittenRecord {
  return {
    version: 1,
    place: { device: '0:45', path: place },
    host: place,
    kind: 'directory',
    label: { confidentiality: l.confidentiality ?? [], integrity: l.integrity ?? [] },
    runs: [{ runId: `run-${place}`, at: '2026-12-07T00:00:00Z' }],
  };
}

describe('writtenInto: by identity', () => {
  const secret = record('/srv/ws', { confidentiality: ['secret'] });
  it('the tree itself, a directory inside it and one holding it', () => {
    for (const p of ['/srv/ws', '/srv/ws/out', '/srv'])
      expect(writtenInto(tree('/workspace', p), [secret])?.label.confidentiality).toEqual([
        'secret',
      ]);
  });
  it('not a sibling, a prefix of its name, or the same path on another file system', () => {
    expect(writtenInto(tree('/workspace', '/srv/ws2'), [secret])).toBeUndefined();
    expect(writtenInto(tree('/workspace', '/srv/other'), [secret])).toBeUndefined();
    expect(writtenInto(tree('/workspace', '/srv/ws', '0:46'), [secret])).toBeUndefined();
  });
});

describe('planCfc joins what was written', () => {
  const profile = Profile.parse({
    ...loadProfile('default').profile,
    workspace: { mode: 'rw', label: { integrity: ['repo'] } },
    cfc: { mode: 'enforce-explicit', modelClearance: [] },
  });
  it('raises the mount, says so, and clears it for what it holds', () => {
    const plan = planCfc(profile, {
      workspaceTarget: '/workspace',
      hostSources: [tree('/workspace', '/srv/ws')],
      written: [record('/srv/ws', { confidentiality: ['secret'], integrity: ['repo'] })],
    });
    const ws = plan.mounts[0];
    expect(ws?.label).toEqual(label({ confidentiality: ['secret'], integrity: ['repo'] }));
    expect(ws?.labelSource).toBe('written');
    expect(ws?.writtenBy).toEqual(['run-/srv/ws']);
    expect(ws?.clearance).toContain('secret');
  });
  it('a write under less integrity takes the integrity away', () => {
    const plan = planCfc(profile, {
      workspaceTarget: '/workspace',
      hostSources: [tree('/workspace', '/srv/ws')],
      written: [record('/srv/ws', {})],
    });
    expect(plan.mounts[0]?.label).toEqual(label({}));
  });
  it('a record that holds no more than the label changes nothing', () => {
    const plan = planCfc(profile, {
      workspaceTarget: '/workspace',
      hostSources: [tree('/workspace', '/srv/ws')],
      written: [record('/srv/ws', { integrity: ['repo', 'other'] })],
    });
    expect(plan.mounts[0]?.labelSource).toBe('profile');
    expect(plan.mounts[0]?.writtenBy).toBeUndefined();
  });
});

describe('raisedRecord', () => {
  const t = {
    place: { device: '0:45', path: '/srv/ws' },
    source: '/srv/ws',
    kind: 'directory' as const,
  };
  it('nothing to write when it holds the label and names the run', () => {
    const r = raisedRecord(undefined, t, label({ confidentiality: ['a'] }), 'r1', 'now');
    expect(r).toBeDefined();
    expect(raisedRecord(r, t, label({ confidentiality: ['a'] }), 'r1', 'later')).toBeUndefined();
    // Another run is named even when it adds nothing: who wrote there is said.
    expect(raisedRecord(r, t, label({ confidentiality: ['a'] }), 'r2', 'later')?.runs).toHaveLength(
      2,
    );
  });
  it('keeps the latest runs only', () => {
    let r: WrittenRecord | undefined;
    for (let i = 0; i < WRITTEN_RUNS_KEPT + 5; i += 1)
      r =
        raisedRecord(r, t, label({ confidentiality: [`c${String(i)}`] }), `r${String(i)}`, 'now') ??
        r;
    expect(r?.runs).toHaveLength(WRITTEN_RUNS_KEPT);
    expect(r?.runs.at(-1)?.runId).toBe(`r${String(WRITTEN_RUNS_KEPT + 4)}`);
    expect(r?.label.confidentiality).toHaveLength(WRITTEN_RUNS_KEPT + 5);
  });
});

describe('the store', () => {
  let dir: string;
  let ws: string;
  const signal = new AbortController().signal;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-written-'));
    ws = path.join(dir, 'ws');
    await mkdir(ws);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const store = () => path.join(dir, 'state', 'written-labels');
  const at = (p: string) => ({
    place: { device: '0:45', path: p },
    source: p,
    kind: 'directory' as const,
  });

  it('joins concurrent notes of one tree, private to its owner', async () => {
    const notes = ['a', 'b', 'c', 'd'].map((c, i) =>
      noteWritten(store(), at(ws), label({ confidentiality: [c] }), `r${String(i)}`, signal),
    );
    expect(await Promise.all(notes)).toEqual([true, true, true, true]);
    const records = readWrittenRecords(store());
    expect(records).toHaveLength(1);
    expect(records[0]?.label.confidentiality).toEqual(['a', 'b', 'c', 'd']);
    expect((await stat(store())).mode & 0o777).toBe(0o700);
    const [file] = (await readdir(store())).filter((f) => f.endsWith('.json'));
    expect((await stat(path.join(store(), file ?? ''))).mode & 0o777).toBe(0o600);
    expect(
      await noteWritten(store(), at(ws), label({ confidentiality: ['a'] }), 'r0', signal),
    ).toBe(false);
  });

  it('fails closed on a record it cannot read', async () => {
    const bad = path.join(dir, 'bad');
    await mkdir(bad);
    await writeFile(path.join(bad, `${'0'.repeat(64)}.json`), '{"version":1}');
    expect(() => readWrittenRecords(bad)).toThrow(/written-labels record .* cannot be read/);
    expect(readWrittenRecords(path.join(dir, 'none'))).toEqual([]);
  });

  it('keeps the identity of the tree it records (device, inode, birth time)', async () => {
    const own = path.join(dir, 'own');
    await mkdir(own);
    const st = await stat(own, { bigint: true });
    const where = { ...at(own), identity: { dev: String(st.dev), ino: String(st.ino) } };
    await noteWritten(store(), where, label({ confidentiality: ['y'] }), 'r8', signal);
    const r = readWrittenRecords(store()).find((x) => x.host === own);
    expect(r?.identity).toEqual({
      dev: String(st.dev),
      ino: String(st.ino),
      birth: String(st.birthtimeNs),
    });
    // A plan's identity that is not what is there now is not kept.
    const stale = { ...at(ws), identity: { dev: '1', ino: '1' } };
    await noteWritten(store(), stale, label({ confidentiality: ['z'] }), 'r7', signal);
    expect(readWrittenRecords(store()).find((x) => x.host === ws)?.identity).toBeUndefined();
  });
});
