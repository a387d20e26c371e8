// Reading a run's cgroup counters (substrate/docker/cgroup-usage.ts) over a synthetic cgroup tree:
// v1 and v2 layouts, units converted, a counter the kernel does not keep stays absent (never
// zero), the run's directories are released, and a tree that is not there says why. The
// real kernel's counters are proved in integration/resources.test.ts.
import { mkdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cgroupParentOf, collectCgroupUsage } from '../../src/substrate/docker/cgroup-usage.js';
import { makeTempDir, removeTempDir } from './helpers.js';

const RUN = '20260101T000000Z-0123abcd';
let root = '';
beforeEach(async () => {
  root = await makeTempDir('cfh-cgroup-');
});
afterEach(async () => {
  await removeTempDir(root);
});

async function files(dir: string, entries: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, body] of Object.entries(entries)) await writeFile(path.join(dir, name), body);
}

describe('cgroup parents', () => {
  it('one per container, under the run', () => {
    expect(cgroupParentOf(RUN, `cfh-${RUN}`)).toBe(`/cfh-usage/${RUN}/cfh-${RUN}`);
  });
  it('a name that could leave the tree gets none', () => {
    for (const bad of ['..', '../x', 'a/b', '', '.hidden'])
      expect(cgroupParentOf(RUN, bad), bad).toBeUndefined();
    expect(cgroupParentOf('../etc', 'c')).toBeUndefined();
  });
});

describe('cgroup v1', () => {
  it('memory and pids peaks, CPU in ms, per container and for the run; then released', async () => {
    const run = (ctrl: string, child = ''): string =>
      path.join(root, ctrl, 'cfh-usage', RUN, child);
    for (const [child, mem, cpu] of [
      ['', '90000000', '700000000'],
      ['c1', '70000000', '400000000'],
      ['c2', '30000000', '300000000'],
    ] as const) {
      await files(run('memory', child), { 'memory.max_usage_in_bytes': `${mem}\n` });
      await files(run('cpuacct', child), {
        'cpuacct.usage': `${cpu}\n`,
        'cpuacct.usage_user': '100000000\n',
        'cpuacct.usage_sys': '250500000\n',
      });
      await files(run('pids', child), { 'pids.peak': '7\n' });
    }
    const u = await collectCgroupUsage(RUN, root);
    expect('source' in u && u.source).toBe('cgroup-v1');
    if (!('source' in u)) return;
    expect(u.total).toEqual({
      memoryPeakBytes: 90000000,
      cpuTotalMs: 700,
      cpuUserMs: 100,
      cpuSystemMs: 250.5,
      pidsPeak: 7,
    });
    expect(u.containers.map((c) => [c.name, c.memoryPeakBytes, c.cpuTotalMs])).toEqual([
      ['c1', 70000000, 400],
      ['c2', 30000000, 300],
    ]);
    // A synthetic tree holds files, which rmdir refuses: the reading says it stayed.
    expect(u.removed).toBe(false);
  });

  it('a kernel without pids.peak: pids absent, not zero', async () => {
    const run = (ctrl: string): string => path.join(root, ctrl, 'cfh-usage', RUN);
    await files(run('memory'), { 'memory.max_usage_in_bytes': '4096' });
    await files(run('pids'), { 'pids.current': '0' });
    const u = await collectCgroupUsage(RUN, root);
    if (!('source' in u)) throw new Error(u.unavailable);
    expect(u.total).toEqual({ memoryPeakBytes: 4096 });
    expect('pidsPeak' in u.total).toBe(false);
  });

  it('empty directories are removed in every hierarchy', async () => {
    for (const ctrl of ['memory', 'cpu,cpuacct', 'pids'])
      await mkdir(path.join(root, ctrl, 'cfh-usage', RUN, 'c1'), { recursive: true });
    // The memory hierarchy is found by its file; put it where a cgroupfs would have it.
    await writeFile(path.join(root, 'memory', 'cfh-usage', RUN, 'memory.max_usage_in_bytes'), '1');
    const u = await collectCgroupUsage(RUN, root);
    if (!('source' in u)) throw new Error(u.unavailable);
    expect(existsSync(path.join(root, 'cpu,cpuacct', 'cfh-usage', RUN))).toBe(false);
    expect(existsSync(path.join(root, 'pids', 'cfh-usage', RUN))).toBe(false);
  });
});

describe('cgroup v2', () => {
  it('memory.peak, cpu.stat in µs, pids.peak', async () => {
    const run = path.join(root, 'cfh-usage', RUN);
    await files(run, {
      'cgroup.controllers': 'cpu memory pids\n',
      'memory.peak': '123456\n',
      'cpu.stat': 'usage_usec 350000\nuser_usec 200000\nsystem_usec 150000\nnr_periods 0\n',
      'pids.peak': '3\n',
    });
    const u = await collectCgroupUsage(RUN, root);
    if (!('source' in u)) throw new Error(u.unavailable);
    expect(u.source).toBe('cgroup-v2');
    expect(u.total).toEqual({
      memoryPeakBytes: 123456,
      cpuTotalMs: 350,
      cpuUserMs: 200,
      cpuSystemMs: 150,
      pidsPeak: 3,
    });
  });
});

describe('what cannot be read says why', () => {
  it('no tree for the run (no container created, or an engine on another host)', async () => {
    const u = await collectCgroupUsage(RUN, root);
    expect(u).toEqual({ unavailable: expect.stringMatching(/no cgroup cfh-usage\//) });
  });
  it('a group name that could leave the tree is not read', async () => {
    expect(await collectCgroupUsage('../..', root)).toEqual({
      unavailable: expect.stringMatching(/not a cgroup name/),
    });
  });
});
