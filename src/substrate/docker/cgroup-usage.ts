// What a run's containers used, read from the host's cgroup filesystem after they are gone.
// Every sandbox container of a run is created under the cgroup parent
// /cfh-usage/<run>/<container> (substrate/docker/request.ts). The runtime (runc, and runsc for its
// sandbox's host processes) creates the container's own cgroup below it and removes only
// that one, so once the container is removed the parents still hold its final counters:
// the memory and pids high-water marks and the cumulative CPU time are charged up the
// hierarchy and survive the child's removal. Reading them then is exact however fast the
// container exited, where the engine's stats API answers only while it runs. The run's own
// directory gives the total (its memory peak is the peak of all containers at once).
import { readFile, readdir, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { ResourceCounters, RunResourceUsage } from '../runtime.js';

export const CGROUP_ROOT = '/sys/fs/cgroup';
const USAGE_DIR = 'cfh-usage';
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** The cgroup parent of one container of the run `group`, or undefined for an unsafe name. */
export function cgroupParentOf(group: string, container: string): string | undefined {
  if (!SAFE_NAME.test(group) || !SAFE_NAME.test(container)) return undefined;
  return `/${USAGE_DIR}/${group}/${container}`;
}

type Layout = { readonly version: 'v1' | 'v2'; readonly dir: (ctrl: string) => string };

/**
 * Reads the counters of the run `group` and removes its cgroup directories. Never throws:
 * what cannot be read is said (`unavailable`), and a counter the kernel does not keep is
 * absent, never zero (as AH-USAGE-1 asks of model usage).
 */
export async function collectCgroupUsage(
  group: string,
  root = CGROUP_ROOT,
): Promise<RunResourceUsage> {
  const t0 = performance.now();
  if (!SAFE_NAME.test(group)) return { unavailable: `run id ${group} is not a cgroup name` };
  const layout = await layoutOf(root, group);
  if (layout === undefined) {
    return {
      unavailable: `no cgroup ${USAGE_DIR}/${group} under ${root}: no container of the run was created, or the engine is not on this host`,
    };
  }
  const names = await childDirs(layout.dir(layout.version === 'v1' ? 'memory' : ''));
  const total = await countersOf(layout, '');
  const containers: RunResourceUsageContainer[] = [];
  for (const name of names) containers.push({ name, ...(await countersOf(layout, name)) });
  const t1 = performance.now();
  const removed = await removeGroup(root, group, names, layout.version);
  return {
    source: layout.version === 'v1' ? 'cgroup-v1' : 'cgroup-v2',
    total,
    containers,
    removed,
    readMs: ms(t1 - t0),
    removeMs: ms(performance.now() - t1),
  };
}

type RunResourceUsageContainer = ResourceCounters & { readonly name: string };

async function layoutOf(root: string, group: string): Promise<Layout | undefined> {
  // v1: one hierarchy per controller; v2: one unified tree (cgroup.controllers at its root).
  const v1 = path.join(root, 'memory', USAGE_DIR, group);
  if ((await text(path.join(v1, 'memory.max_usage_in_bytes'))) !== undefined) {
    return { version: 'v1', dir: (ctrl) => path.join(root, ctrl, USAGE_DIR, group) };
  }
  const v2 = path.join(root, USAGE_DIR, group);
  if ((await text(path.join(v2, 'cgroup.controllers'))) !== undefined) {
    return { version: 'v2', dir: () => v2 };
  }
  return undefined;
}

async function countersOf(layout: Layout, child: string): Promise<ResourceCounters> {
  const at = (ctrl: string, file: string): Promise<number | undefined> =>
    integer(path.join(layout.dir(ctrl), child, file));
  if (layout.version === 'v1') {
    const [memory, total, user, system, pids] = await Promise.all([
      at('memory', 'memory.max_usage_in_bytes'),
      at('cpuacct', 'cpuacct.usage'),
      at('cpuacct', 'cpuacct.usage_user'),
      at('cpuacct', 'cpuacct.usage_sys'),
      at('pids', 'pids.peak'),
    ]);
    return counters(memory, cpuMs(total, 1e6), cpuMs(user, 1e6), cpuMs(system, 1e6), pids);
  }
  const [memory, stat, pids] = await Promise.all([
    at('', 'memory.peak'),
    text(path.join(layout.dir(''), child, 'cpu.stat')),
    at('', 'pids.peak'),
  ]);
  const field = (name: string): number | undefined => {
    const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(stat ?? '');
    return m?.[1] === undefined ? undefined : Number(m[1]);
  };
  return counters(
    memory,
    cpuMs(field('usage_usec'), 1e3),
    cpuMs(field('user_usec'), 1e3),
    cpuMs(field('system_usec'), 1e3),
    pids,
  );
}

function counters(
  memoryPeakBytes: number | undefined,
  cpuTotalMs: number | undefined,
  cpuUserMs: number | undefined,
  cpuSystemMs: number | undefined,
  pidsPeak: number | undefined,
): ResourceCounters {
  return {
    ...(memoryPeakBytes === undefined ? {} : { memoryPeakBytes }),
    ...(cpuTotalMs === undefined ? {} : { cpuTotalMs }),
    ...(cpuUserMs === undefined ? {} : { cpuUserMs }),
    ...(cpuSystemMs === undefined ? {} : { cpuSystemMs }),
    ...(pidsPeak === undefined ? {} : { pidsPeak }),
  };
}

function ms(value: number): number {
  return Math.round(value * 10) / 10;
}

function cpuMs(value: number | undefined, perMs: number): number | undefined {
  return value === undefined ? undefined : Math.round((value / perMs) * 1000) / 1000;
}

/** Removes the run's directories in every hierarchy (leaves first); false if any stayed. */
async function removeGroup(
  root: string,
  group: string,
  names: readonly string[],
  version: 'v1' | 'v2',
): Promise<boolean> {
  const bases =
    version === 'v2'
      ? [path.join(root, USAGE_DIR, group)]
      : (await childDirs(root, HIERARCHY)).map((h) => path.join(root, h, USAGE_DIR, group));
  // Each hierarchy apart, in parallel; within one, the containers' directories first.
  const results = await Promise.all(
    bases.map(async (base) => {
      const leaves = await Promise.all(names.map((n) => removeDir(path.join(base, n))));
      return leaves.every(Boolean) && (await removeDir(base));
    }),
  );
  const removed = results.every(Boolean);
  return removed;
}

/** A v1 hierarchy's mount point: `memory`, `cpu,cpuacct`, `unified` (symlinks are skipped). */
const HIERARCHY = /^[a-z_=,]+$/;

/** True when the directory is gone (absent in a hierarchy the runtime did not use is fine). */
async function removeDir(dir: string): Promise<boolean> {
  try {
    await rmdir(dir);
    return true;
  } catch (error) {
    return isCode(error, 'ENOENT');
  }
}

async function childDirs(dir: string, names = SAFE_NAME): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory() && names.test(e.name))
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
}

async function text(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

async function integer(file: string): Promise<number | undefined> {
  const t = (await text(file))?.trim();
  return t !== undefined && /^\d+$/.test(t) ? Number(t) : undefined;
}

function isCode(error: unknown, code: string): boolean {
  return error instanceof Error && 'code' in error && error.code === code;
}
