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
// (default 3) the runs per scenario. `bench/run.sh flood`; a row source of bench-all
// (rows(): the goal, issue 21, is at most 150 MiB per run under a 1 GiB flood, absolute).
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEnvironment } from '../src/config/env.js';
import {
  checkLeftovers,
  dockerClient,
  intFromEnv,
  printRows,
  runBench,
  table,
  type BenchRow,
} from './bench-util.js';
import { median } from './stats.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// What a person runs: bin/cfh (the bundle `npm run build` writes, with its Node flags).
const CFH = path.join(ROOT, 'bin', 'cfh');

const SCENARIOS = ['baseline', 'drained', 'undrained'] as const;
type Scenario = (typeof SCENARIOS)[number];
const GOAL_MIB = 150;

interface Results {
  readonly mib: number;
  readonly runs: number;
  /** Peak RSS (MiB) and wall time (s) of each run, per scenario. */
  readonly results: ReadonlyMap<Scenario, { rss: number[]; s: number[] }>;
  readonly leftovers: number;
}

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
    CFH,
    ['sandbox', 'run', '--workspace', ws, '--artifact-root', art, '--', ...command],
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

/** Runs every scenario CFH_BENCH_RUNS times; removes any container left behind. */
async function measure(): Promise<Results> {
  const mib = intFromEnv('CFH_BENCH_FLOOD_MIB', 1024, 1);
  const runs = intFromEnv('CFH_BENCH_RUNS', 3, 1);
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'cfh-bench-flood-'));
  const ws = path.join(scratch, 'ws');
  await cp(path.join(ROOT, 'examples', 'sample-repo'), ws, { recursive: true });
  const arts: string[] = [];
  const results = new Map<Scenario, { rss: number[]; s: number[] }>();
  let leftovers: number;
  try {
    for (let i = 0; i < runs; i += 1) {
      for (const scenario of SCENARIOS) {
        const art = path.join(scratch, `art-${scenario}-${i}`);
        arts.push(art);
        const r = await runOnce(scenario, ws, art, mib * 1024 * 1024);
        const entry = results.get(scenario) ?? { rss: [], s: [] };
        entry.rss.push(r.rssMiB);
        entry.s.push(r.seconds);
        results.set(scenario, entry);
      }
      console.error(
        `  run ${i + 1}/${runs}: peak RSS ` +
          SCENARIOS.map((x) => `${x} ${(results.get(x)?.rss.at(-1) ?? 0).toFixed(0)}`).join(', ') +
          ' MiB',
      );
    }
  } finally {
    // The runs planned, a failed one's included: each artifact root holds one run directory.
    const runIds = new Set<string>();
    for (const art of arts) for (const id of await readdir(art).catch(() => [])) runIds.add(id);
    await rm(scratch, { recursive: true, force: true });
    leftovers = await checkLeftovers(dockerClient(readEnvironment()), {
      tag: 'flood',
      names: new Set(),
      runIds,
    });
  }
  return { mib, runs, results, leftovers };
}

function rowsOf(r: Results): BenchRow[] {
  const rss = (s: Scenario): number => median(r.results.get(s)?.rss ?? []);
  const base = rss('baseline');
  const size = r.mib % 1024 === 0 ? `${r.mib / 1024} GiB` : `${r.mib} MiB`;
  const how = { drained: 'read to the end', undrained: 'not read' };
  return (['drained', 'undrained'] as const).map((s) => ({
    figure: `cfh sandbox run, ${size} flood on stdout (${how[s]}): peak RSS p50`,
    value: rss(s),
    unit: 'MiB',
    baseline: `none (absolute); cfh sandbox run -- true, peak RSS p50 ${base.toFixed(0)} MiB (x${(rss(s) / base).toFixed(2)})`,
    goal: `<= ${GOAL_MIB} MiB`,
    met: rss(s) <= GOAL_MIB,
  }));
}

/** The bench's figures, for bench-all; throws when a container was left behind. */
export async function rows(): Promise<readonly BenchRow[]> {
  const r = await measure();
  if (r.leftovers > 0) throw new Error(`flood: ${String(r.leftovers)} containers left behind`);
  return rowsOf(r);
}

async function main(): Promise<number> {
  const r = await measure();
  const base = median(r.results.get('baseline')?.rss ?? []);
  console.log(`cfh peak RSS, ${r.mib} MiB flood, ${r.runs} runs each (medians)\n`);
  table(
    ['scenario', 'peak RSS MiB', 'x baseline', 'run s'],
    SCENARIOS.map((s) => {
      const e = r.results.get(s) ?? { rss: [], s: [] };
      const rss = median(e.rss);
      return [s, rss.toFixed(0), (rss / base).toFixed(2), median(e.s).toFixed(2)];
    }),
  );
  console.log('');
  printRows('cfh under a flood (medians; the baseline run side by side)', rowsOf(r));
  return r.leftovers === 0 ? 0 : 1;
}

// Run as a script (bench/run.sh flood), not when bench-all imports rows().
if (process.argv[1] === fileURLToPath(import.meta.url)) runBench(main);
