// Two runs at once on one host tree (engine/cfc/written-leases.ts): a live run's lease
// refuses a write by any run but one it delegated to that would change the label it reads the tree as (more
// confidential or less trusted), in
// the tree, inside it or around it; its own child's write, a write it holds, a run that is gone
// (its lease removed) and an unrelated tree do not refuse; a run whose tree was raised past
// its plan between planning and its lease fails (written_labels_changed); a lease ends with
// its run.
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { label } from '../../src/cfc/label.js';
import type { CfcPlan } from '../../src/cfc/label-map.js';
import { noteWritten } from '../../src/cfc/written-store.js';
import { holdLease, leaseAgainst } from '../../src/engine/cfc/written-leases.js';
import type { WrittenPlan } from '../../src/engine/cfc/written-notes.js';
import type { SourceTrees } from '../../src/host-trees.js';

let dir: string;
const signal = new AbortController().signal;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-leases-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
const state = () => path.join(dir, 'state');

function tree(p: string): SourceTrees {
  return {
    target: '/workspace',
    source: p,
    identity: { dev: '1', ino: p },
    kind: 'directory',
    names: 1,
    place: { device: '8:1', path: p },
    beneath: [],
  };
}

function plan(
  runId: string,
  p: string,
  confidentiality: string[],
  ancestry: string[] = [],
  mode = 'rw',
): WrittenPlan {
  const cfc = {
    mode: 'enforce-explicit',
    mounts: [
      {
        target: '/workspace',
        writable: true,
        label: label({ confidentiality }),
        clearance: confidentiality,
        labelSource: 'profile',
      },
    ],
  } as unknown as CfcPlan;
  return {
    profile: { workspace: { mode } },
    runId,
    ancestry,
    cfc,
    hostTrees: [tree(p)],
    storeTrees: [],
  };
}

const secret = label({ confidentiality: ['secret'] });
const at = (p: string) => ({
  place: { device: '8:1', path: p },
  source: p,
  kind: 'directory' as const,
});

describe('written leases', () => {
  it('a live run reading a tree under less refuses another run (a sibling too) a write of more, in it, inside or around it', async () => {
    const ws = path.join(dir, 'ws');
    await mkdir(ws);
    await using lease = await holdLease(plan('run-b', ws, []), state(), signal);
    expect(typeof lease[Symbol.asyncDispose]).toBe('function');
    expect(await leaseAgainst(state(), at(ws), secret, ['run-a'])).toMatch(
      /run run-b \(pid \d+\) has '.*ws' mounted and reads it as \{confidentiality: -; integrity: -\}: writing \{confidentiality: secret; integrity: -\}/,
    );
    expect(await leaseAgainst(state(), at(path.join(ws, 'sub')), secret, ['run-a'])).toBeDefined();
    expect(await leaseAgainst(state(), at(dir), secret, ['run-a'])).toBeDefined();
    // A child of run-b writes: it comes back to run-b under run-b's rules; a sibling's does not.
    expect(await leaseAgainst(state(), at(ws), secret, ['run-b1', 'run-b'])).toBeUndefined();
    expect(await leaseAgainst(state(), at(ws), secret, ['run-b2', 'run-top'])).toBeDefined();
    // Nothing confidential, another tree: no refusal.
    expect(await leaseAgainst(state(), at(ws), label({}), ['run-a'])).toBeUndefined();
    expect(
      await leaseAgainst(state(), at(path.join(dir, 'elsewhere')), secret, ['run-a']),
    ).toBeUndefined();
  });

  it("class: a descendant's write into a tree an ancestor reads under a lower label is refused, not exempt", async () => {
    const store = path.join(dir, 'parent-store');
    await mkdir(store);
    await using lease = await holdLease(plan('run-top', store, []), state(), signal);
    expect(typeof lease[Symbol.asyncDispose]).toBe('function');
    // Its child (run-kid) writes a secret there: the parent would read it as public.
    expect(await leaseAgainst(state(), at(store), secret, ['run-kid'], ['run-top'])).toMatch(
      /run run-top, which delegated to this one, has '.*parent-store' mounted and reads it as \{confidentiality: -; integrity: -\}: writing \{confidentiality: secret/,
    );
    // Less trusted, nothing confidential: the parent's rules weigh its child's trust.
    expect(
      await leaseAgainst(state(), at(store), label({}), ['run-kid'], ['run-top']),
    ).toBeUndefined();
  });

  it('a write less trusted than a live run reads the tree as is refused too; one as trusted is not', async () => {
    const ws = path.join(dir, 'vouched');
    await mkdir(ws);
    const vouched = plan('run-f', ws, []);
    const repo = {
      ...vouched,
      cfc: {
        ...vouched.cfc,
        mounts: vouched.cfc.mounts.map((m) => ({ ...m, label: label({ integrity: ['repo'] }) })),
      },
    };
    await using lease = await holdLease(repo, state(), signal);
    expect(typeof lease[Symbol.asyncDispose]).toBe('function');
    expect(await leaseAgainst(state(), at(ws), label({}), ['run-a'])).toMatch(
      /reads it as \{confidentiality: -; integrity: repo\}: writing \{confidentiality: -; integrity: -\}/,
    );
    expect(
      await leaseAgainst(state(), at(ws), label({ integrity: ['repo'] }), ['run-a']),
    ).toBeUndefined();
  });

  it('a draft run reads its copy: it does not hold the host workspace', async () => {
    const ws = path.join(dir, 'drafted');
    await mkdir(ws);
    await using lease = await holdLease(plan('run-g', ws, [], [], 'draft'), state(), signal);
    expect(typeof lease[Symbol.asyncDispose]).toBe('function');
    expect(await leaseAgainst(state(), at(ws), secret, ['run-a'])).toBeUndefined();
  });

  it('a run that holds the tree under what is written does not refuse it', async () => {
    const ws = path.join(dir, 'held');
    await mkdir(ws);
    await using lease = await holdLease(plan('run-c', ws, ['secret']), state(), signal);
    expect(typeof lease[Symbol.asyncDispose]).toBe('function');
    expect(await leaseAgainst(state(), at(ws), secret, ['run-a'])).toBeUndefined();
  });

  it('a lease ends with its run; one whose process is gone is removed by the next writer', async () => {
    const ws = path.join(dir, 'ends');
    await mkdir(ws);
    {
      await using lease = await holdLease(plan('run-d', ws, []), state(), signal);
      expect(typeof lease[Symbol.asyncDispose]).toBe('function');
      expect(await readdir(path.join(state(), 'leases'))).toContain('run-d.json');
    }
    expect(await readdir(path.join(state(), 'leases'))).not.toContain('run-d.json');
    const { writeFile } = await import('node:fs/promises');
    const dead = {
      version: 1,
      runId: 'run-dead',
      owner: { pid: 999_999_999, start: 'x/1', host: os.hostname() },
      trees: [
        {
          place: { device: '8:1', path: ws },
          host: ws,
          kind: 'directory',
          names: 1,
          beneath: [],
          label: { confidentiality: [], integrity: [] },
        },
      ],
    };
    await writeFile(path.join(state(), 'leases', 'run-dead.json'), JSON.stringify(dead));
    expect(await leaseAgainst(state(), at(ws), secret, ['run-a'])).toBeUndefined();
    expect(await readdir(path.join(state(), 'leases'))).not.toContain('run-dead.json');
    // A lease cfh cannot read refuses every write (what it holds is unknown), and says where.
    await writeFile(path.join(state(), 'leases', 'run-bad.json'), '{"version":1}');
    expect(await leaseAgainst(state(), at(ws), secret, ['run-a'])).toMatch(
      /the lease '.*run-bad\.json' cannot be read/,
    );
    const { rm: remove } = await import('node:fs/promises');
    await remove(path.join(state(), 'leases', 'run-bad.json'));
  });

  it('a run whose tree was raised past its plan before its lease fails: written_labels_changed', async () => {
    const ws = path.join(dir, 'raced');
    await mkdir(ws);
    await noteWritten(state(), at(ws), secret, 'run-a', signal);
    await expect(holdLease(plan('run-e', ws, []), state(), signal)).rejects.toMatchObject({
      code: 'written_labels_changed',
    });
    // The failed run leaves no lease behind.
    expect(await readdir(path.join(state(), 'leases'))).not.toContain('run-e.json');
  });
});
