// A sink is a source of what it may receive, for the host tree a cleared host tool keeps its
// state in (engine/cfc/host-tool-stores.ts): a mount holding a path the tool's arguments or env
// name carries the tool's clearance; its cwd, its code, an uncleared tool and other mounts do not.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostToolEntry } from '../../src/config/host-tools-schema.js';
import {
  checkStoreRecords,
  hostToolStores,
  storeOf,
  storeTrees,
} from '../../src/engine/cfc/host-tool-stores.js';
import type { SpecMount } from '../../src/substrate/container-spec.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-stores-'));
  for (const d of ['notes', 'other', 'tools']) await mkdir(path.join(dir, d));
  await writeFile(path.join(dir, 'tools', 'store.mjs'), '');
  await symlink(path.join(dir, 'notes'), path.join(dir, 'via'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function entry(fields: Record<string, unknown>): HostToolEntry {
  return HostToolEntry.parse({
    name: 'notes',
    kind: 'exec',
    argv: ['/usr/bin/node', path.join(dir, 'tools', 'store.mjs'), '{op}'],
    cwd: path.join(dir, 'tools'),
    input: { op: { type: 'string', pattern: 'get|put' } },
    riskClass: 'write_local',
    sideEffectClass: 'local_artifact',
    resourceScope: 'project',
    resultLabel: { integrity: ['ops'] },
    ...fields,
  });
}

const mounts = (): SpecMount[] => [
  { source: path.join(dir, 'notes'), target: '/notes', mode: 'ro' },
  { source: path.join(dir, 'other'), target: '/other', mode: 'ro' },
  { source: path.join(dir, 'tools'), target: '/tools', mode: 'ro' },
];

describe('hostToolStores', () => {
  it('a mount holding a file an env value names, through a link too', () => {
    for (const store of [path.join(dir, 'notes', 'n.txt'), path.join(dir, 'via', 'n.txt')])
      expect(
        hostToolStores(
          [entry({ env: { STORE: { value: store } }, clearance: ['secret'] })],
          mounts(),
        ),
      ).toEqual([{ target: '/notes', tool: 'notes', atoms: ['secret'] }]);
  });
  it('an argument naming it, relative to the cwd', () => {
    const e = entry({
      argv: ['/usr/bin/node', 'store.mjs', '--file=../notes/n.txt', '{op}'],
      clearance: ['secret'],
    });
    expect(hostToolStores([e], mounts()).map((s) => s.target)).toEqual(['/notes']);
  });
  it('not its cwd alone, not a tool cleared for nothing', () => {
    // Its program, and the script it runs from /tools, are its code.
    expect(hostToolStores([entry({ clearance: ['secret'] })], mounts())).toEqual([]);
    const uncleared = entry({ env: { STORE: { value: path.join(dir, 'notes', 'n') } } });
    expect(hostToolStores([uncleared], mounts())).toEqual([]);
  });
});

describe('the trees a cleared host tool stores into (written labels, mounted or not)', () => {
  it('a named store is its own tree; one not made yet the directory it will be made in; one deeper in nothing none', () => {
    const made = path.join(dir, 'notes');
    const later = path.join(dir, 'other', 'store.db');
    const nowhere = path.join(dir, 'other', 'not-made', 'deeper', 'x');
    const trees = storeTrees([
      entry({
        env: { A: { value: made }, B: { value: later }, C: { value: nowhere } },
        clearance: ['secret'],
      }),
    ]);
    expect(trees.map((t) => [t.tool, t.tree.source, t.tree.kind])).toEqual([
      ['notes', made, 'directory'],
      ['notes', later, 'file'],
    ]);
    // Its place is on the file system it lies on, the path from that one's root.
    for (const t of trees) expect(t.tree.place.device).toMatch(/^\d+:\d+$/);
  });

  it('an uncleared tool, and the code and cwd of a cleared one, name no store', () => {
    expect(storeTrees([entry({ env: { A: { value: path.join(dir, 'notes') } } })])).toEqual([]);
    expect(storeTrees([entry({ clearance: ['secret'] })])).toEqual([]);
  });

  it('a call reaches an exec entry by its one name, an MCP server by its prefix', () => {
    const [exec] = storeTrees([
      entry({ env: { A: { value: path.join(dir, 'notes') } }, clearance: ['secret'] }),
    ]);
    if (exec === undefined) throw new Error('no store');
    expect(storeOf(exec, 'host__notes')).toBe(true);
    expect(storeOf(exec, 'host__notes2')).toBe(false);
    const mcp = { ...exec, names: { prefix: 'mcp__mem__' } };
    expect(storeOf(mcp, 'mcp__mem__create_entities')).toBe(true);
    expect(storeOf(mcp, 'mcp__memo__x')).toBe(false);
  });
});

describe('a store holding what runs wrote above an entry clearance', () => {
  const record = (p: string) => ({
    version: 1 as const,
    place: storeTrees([entry({ env: { A: { value: p } }, clearance: ['x'] })])[0]?.tree.place ?? {
      device: '0:0',
      path: '/',
    },
    host: p,
    kind: 'directory' as const,
    label: { confidentiality: ['secret'], integrity: [] },
    runs: [{ runId: 'deploy-1', at: '2026-12-07T00:00:00Z' }],
  });

  it('refuses the entry (host_tool_store_written); one cleared for it plans', () => {
    const notes = path.join(dir, 'notes');
    const records = [record(notes)];
    const everyday = entry({ env: { STORE: { value: path.join(notes, 'n.json') } } });
    expect(() => {
      checkStoreRecords([everyday], records);
    }).toThrow(
      /host tool notes keeps its state in .*which holds \[secret\] that run deploy-1 wrote there/,
    );
    const cleared = entry({
      env: { STORE: { value: path.join(notes, 'n.json') } },
      clearance: ['secret'],
    });
    expect(() => {
      checkStoreRecords([cleared], records);
    }).not.toThrow();
    const elsewhere = entry({ env: { STORE: { value: path.join(dir, 'other', 'n.json') } } });
    expect(() => {
      checkStoreRecords([elsewhere], records);
    }).not.toThrow();
  });
});
