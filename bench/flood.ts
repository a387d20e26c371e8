// bench/flood.ts: cfh's peak resident memory while a command floods its output, against
// the same cfh running `true` (the baseline, in the same process of this bench).
//
//   baseline   cfh sandbox run -- true
//   drained    cfh sandbox run -- head -c SIZE /dev/zero, cfh's stdout read to the end
//   undrained  the same with cfh's stdout a pipe nobody reads (the reader appears only
//              after the run is recorded, then closes it)
//
// Peak RSS is the kernel's high-water mark (VmHWM in /proc/PID/status) of the cfh process,
// read until it exits. CFH_BENCH_FLOOD_MIB (default 1024) sets the flood, CFH_BENCH_RUNS
// (default 3) the runs per scenario. `bench/run.sh flood`.
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEnvironment } from '../src/config/env.js';
import { checkLeftovers, dockerClient, intFromEnv, runBench, table } from './bench-util.js';
import { median } from './stats.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = path.join(ROOT, 'dist-bench', 'src', 'cli', 'main.js');

type Scenario = 'baseline' | 'drained' | 'undrained';

async function peakOf(pid: number, exited: Promise<unknown>): Promise<number> {
  let peak = 0;
  const state = { running: true };
  void exited.then(() => (state.running = false));
  while (state.running) {
    try {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      peak = Math.max(peak, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    } catch {
      break;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return peak / 1024;
}

async function runOnce(
  scenario: Scenario,
  ws: string,
  art: string,
  bytes: number,
): Promise<{ rssMiB: number; seconds: number }> {
  const command = scenario === 'baseline' ? ['true'] : ['head', '-c', String(bytes), '/dev/zero'];
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [MAIN, 'sandbox', 'run', '--workspace', ws, '--artifact-root', art, '--', ...command],
    { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, CFH_LOG_LEVEL: 'error' } },
  );
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (scenario === 'undrained') {
    child.stdout.pause();
    // Close the pipe once the run's terminal record exists; until then nobody reads.
    void (async () => {
      for (;;) {
        const runs = await readdir(art).catch(() => []);
        const state =
          runs[0] === undefined
            ? ''
            : await readFile(path.join(art, runs[0], 'state.json'), 'utf8').catch(() => '');
        if (/"(completed|failed|cancelled)"/.test(state)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      child.stdout.destroy();
    })();
  } else {
    child.stdout.resume();
  }
  const rssMiB = await peakOf(child.pid ?? -1, exited);
  const code = await exited;
  if (code !== 0) throw new Error(`${scenario}: cfh exited ${String(code)}`);
  return { rssMiB, seconds: (performance.now() - started) / 1000 };
}

async function main(): Promise<number> {
  const mib = intFromEnv('CFH_BENCH_FLOOD_MIB', 1024, 1);
  const runs = intFromEnv('CFH_BENCH_RUNS', 3, 1);
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'cfh-bench-flood-'));
  const ws = path.join(scratch, 'ws');
  await cp(path.join(ROOT, 'examples', 'sample-repo'), ws, { recursive: true });
  const runIds = new Set<string>();
  const results = new Map<Scenario, { rss: number[]; s: number[] }>();
  try {
    for (let i = 0; i < runs; i += 1) {
      for (const scenario of ['baseline', 'drained', 'undrained'] as const) {
        const art = path.join(scratch, `art-${scenario}-${i}`);
        const r = await runOnce(scenario, ws, art, mib * 1024 * 1024);
        for (const id of await readdir(art)) runIds.add(id);
        const entry = results.get(scenario) ?? { rss: [], s: [] };
        entry.rss.push(r.rssMiB);
        entry.s.push(r.seconds);
        results.set(scenario, entry);
      }
    }
    const base = median(results.get('baseline')?.rss ?? []);
    console.log(`cfh peak RSS, ${mib} MiB flood, ${runs} runs each (medians)\n`);
    table(
      ['scenario', 'peak RSS MiB', 'x baseline', 'run s'],
      (['baseline', 'drained', 'undrained'] as const).map((s) => {
        const e = results.get(s) ?? { rss: [], s: [] };
        const rss = median(e.rss);
        return [s, rss.toFixed(0), (rss / base).toFixed(2), median(e.s).toFixed(2)];
      }),
    );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const left = await checkLeftovers(dockerClient(readEnvironment()), {
    tag: 'flood',
    names: new Set(),
    runIds,
  });
  return left === 0 ? 0 : 1;
}

runBench(main);
