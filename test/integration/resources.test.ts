// What a run's containers used, from their cgroups, read once they are removed: peak memory,
// CPU time and peak pids in report.json `resources`, in `--json` and in `runs show`, for a
// command run (runc and runsc) and an agent run (per tool container and a total). The
// counters are the kernel's, so they are exact however fast the container exits, and the
// run's cgroup directories are released afterwards.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, docker, onlyRunDir, readJson, useScratch } from './helpers.js';
import { profileFile, scriptFile } from './host-tools-support.js';

const scratch = useScratch('resources');
const MiB = 1024 * 1024;
let n = 0;
let runsc = false;

beforeAll(async () => {
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  runsc = Object.keys(info.Runtimes ?? {}).includes('runsc');
});

// ~64 MiB touched, ~0.3 s of CPU burnt in user space, then an immediate exit.
const ALLOCATE_AND_BURN = [
  'python3',
  '-c',
  [
    'import time',
    'b = bytearray(64 * 1024 * 1024)',
    'for i in range(0, len(b), 4096): b[i] = 1',
    't = time.process_time()',
    'while time.process_time() - t < 0.3: pass',
  ].join('\n'),
];

async function commandRun(
  command: readonly string[],
  extra: readonly string[] = [],
): Promise<{ json: any; report: any; dir: string }> {
  n += 1;
  const root = scratch.path(`art-${n}`);
  const r = await cfh([
    'sandbox',
    'run',
    ...extra,
    '--workspace',
    await scratch.sampleRepo(),
    '--artifact-root',
    root,
    '--json',
    '--',
    ...command,
  ]);
  expect(r.exitCode, r.stderr).toBe(0);
  const dir = await onlyRunDir(root);
  return { json: JSON.parse(r.stdout), report: await readJson(path.join(dir, 'report.json')), dir };
}

function released(runId: string): void {
  for (const ctrl of ['memory', 'cpuacct', 'pids'])
    expect(existsSync(`/sys/fs/cgroup/${ctrl}/cfh-usage/${runId}`), ctrl).toBe(false);
}

describe('resource usage from the container cgroup', () => {
  it('a command that allocates 64 MiB and burns 0.3 s records at least that', async () => {
    const { json, report, dir } = await commandRun(ALLOCATE_AND_BURN);
    const res = report.resources;
    expect(res.source).toMatch(/^cgroup-v[12]$/);
    expect(res.total.memoryPeakBytes).toBeGreaterThanOrEqual(64 * MiB);
    expect(res.total.cpuTotalMs).toBeGreaterThanOrEqual(200);
    expect(res.total.pidsPeak).toBeGreaterThanOrEqual(1);
    expect(res.containers).toHaveLength(1);
    expect(res.containers[0].name).toBe(report.container.name);
    expect(res.containers[0].memoryPeakBytes).toBeGreaterThanOrEqual(64 * MiB);
    expect(json.resources).toEqual(res);
    released(json.runId);
    // `runs show` says it in human units.
    const show = await cfh(['runs', 'show', '--artifact-root', path.dirname(dir), json.runId]);
    expect(show.stdout).toMatch(/resources\s+memory peak \d+(\.\d)? MiB, CPU \d+(\.\d+)? m?s/);
  });

  it('`true` records small numbers', async () => {
    const { report } = await commandRun(['true']);
    const t = report.resources.total;
    expect(t.memoryPeakBytes).toBeGreaterThan(0);
    expect(t.memoryPeakBytes).toBeLessThan(32 * MiB);
    expect(t.cpuTotalMs).toBeLessThan(200);
  });

  it('variant: children that allocate at once are one peak, and their pids count', async () => {
    const child = "python3 -c 'b = bytearray(40 * 1024 * 1024); import time; time.sleep(0.5)'";
    const { report } = await commandRun(['sh', '-c', `${child} & ${child} & wait`]);
    const t = report.resources.total;
    // Two 40 MiB children alive together: the peak is of both, not of one.
    expect(t.memoryPeakBytes).toBeGreaterThanOrEqual(80 * MiB);
    expect(t.pidsPeak).toBeGreaterThanOrEqual(3);
  });

  it('under runsc: the sandbox host processes are accounted', async (ctx) => {
    if (!runsc) ctx.skip('runsc not registered with the engine');
    const { json, report } = await commandRun(ALLOCATE_AND_BURN, ['--runtime', 'runsc']);
    expect(report.assurance.level).toBe('strong');
    expect(report.resources.total.memoryPeakBytes).toBeGreaterThanOrEqual(64 * MiB);
    expect(report.resources.total.cpuTotalMs).toBeGreaterThanOrEqual(200);
    released(json.runId);
  });

  it('an agent run: each tool container and the total', async () => {
    const profile = await profileFile(scratch, 'tools', { tools: ['exec', 'read_file'] });
    const script = await scriptFile(scratch, 'alloc', [
      [{ name: 'exec', input: { command: ALLOCATE_AND_BURN } }],
      [{ name: 'read_file', input: { path: 'README.md' } }],
    ]);
    const root = scratch.path('art-agent');
    const r = await cfh([
      ...agentRunArgs({
        workspace: await scratch.sampleRepo(),
        artifactRoot: root,
        profile,
        script,
      }),
      '--json',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout);
    const report = await readJson<Record<string, any>>(
      path.join(await onlyRunDir(root), 'report.json'),
    );
    const res = report.resources as {
      total: { cpuTotalMs: number; memoryPeakBytes: number };
      containers: { name: string; cpuTotalMs: number; memoryPeakBytes: number }[];
    };
    expect(json.resources).toEqual(res);
    expect(res.containers.length).toBeGreaterThanOrEqual(2);
    const workload = res.containers.find((c) => /^cfh-tools-/.test(c.name));
    expect(workload?.memoryPeakBytes ?? 0, JSON.stringify(res)).toBeGreaterThanOrEqual(64 * MiB);
    const cpuSum = res.containers.reduce((s, c) => s + c.cpuTotalMs, 0);
    // The run's own counter is the sum of its containers' (the same kernel counter, one up).
    expect(res.total.cpuTotalMs).toBeGreaterThanOrEqual(cpuSum - 1);
    expect(res.total.memoryPeakBytes).toBeGreaterThanOrEqual(workload?.memoryPeakBytes ?? 0);
    released(json.runId);
  });
});
