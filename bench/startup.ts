// bench/startup.ts: cfh as a whole process, measured from outside (issue 21, start-up).
//
//   version    `bin/cfh --version`: wall p50 and peak RSS, against `node -e 0` (the floor
//              of any Node program) run in the same rounds
//   run        `bin/cfh sandbox run -- true` (profile default: no network), against
//              `docker run --rm --network none IMAGE true` through the docker CLI, the same
//              image (the one cfh's run recorded), alternated round by round
//   cpu        user+sys of the cfh process per run (process.resourceUsage at exit, read by a
//              probe given with NODE_OPTIONS; cfh starts no other process for `true`)
//
// bin/cfh runs the bundle `npm run build` writes (dist/bundle/). CFH_BENCH_RUNS (default 9)
// sets the rounds. Runs go to a scratch artifact root; the leftover check counts only the
// containers of the runs this bench planned. `bench/run.sh startup`; a row source of
// bench-all (rows()).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
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
  type BenchRow,
} from './bench-util.js';
import { median } from './stats.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CFH = path.join(ROOT, 'bin', 'cfh');

interface Sample {
  readonly wallMs: number;
  readonly cpuS?: number;
  readonly rssMiB?: number;
}

/** Runs a program to its end; with `probe`, reads the node process's own usage at exit. */
async function timed(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  probe?: string,
): Promise<Sample> {
  const out = probe === undefined ? undefined : `${probe}.${String(Math.random()).slice(2)}`;
  const started = performance.now();
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(file, args, {
      stdio: ['ignore', 'ignore', 'ignore'],
      env:
        out === undefined
          ? env
          : { ...env, NODE_OPTIONS: `--import=${probe ?? ''}`, CFH_BENCH_USAGE: out },
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  const wallMs = performance.now() - started;
  if (code !== 0) throw new Error(`${file} ${args.join(' ')}: exited ${String(code)}`);
  if (out === undefined) return { wallMs };
  const usage = JSON.parse(await readFile(out, 'utf8')) as { cpuS: number; rssMiB: number };
  return { wallMs, ...usage };
}

export async function rows(): Promise<readonly BenchRow[]> {
  const runs = intFromEnv('CFH_BENCH_RUNS', 9, 1);
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'cfh-bench-startup-'));
  const art = path.join(scratch, 'runs');
  const probe = path.join(scratch, 'usage.mjs');
  await writeFile(
    probe,
    "import { writeFileSync } from 'node:fs';\nprocess.on('exit', () => {\n" +
      '  const u = process.resourceUsage();\n' +
      '  writeFileSync(process.env.CFH_BENCH_USAGE, JSON.stringify({\n' +
      '    cpuS: (u.userCPUTime + u.systemCPUTime) / 1e6, rssMiB: u.maxRSS / 1024 }));\n});\n',
  );
  const env = { ...process.env, CFH_LOG_LEVEL: 'error', CFH_ARTIFACT_ROOT: art };
  const run = ['sandbox', 'run', '--', 'true'];
  let list: readonly BenchRow[];
  let runIds: Set<string>;
  try {
    // One run first: it names the image (its snapshot), warms the page cache and the
    // compile cache alike for every series.
    await timed(CFH, run, env);
    const [first] = await readdir(art);
    const snapshot = JSON.parse(
      await readFile(path.join(art, first ?? '', 'snapshot.json'), 'utf8'),
    ) as { image: { ref: string } };
    const image = snapshot.image.ref;
    const docker = ['run', '--rm', '--network', 'none', image, 'true'];
    await timed('docker', docker, env);

    const s = { version: [], node: [], versionUse: [], run: [], runUse: [], docker: [] } as Record<
      string,
      Sample[]
    >;
    for (let i = 0; i < runs; i += 1) {
      s.version?.push(await timed(CFH, ['--version'], env));
      s.node?.push(await timed(process.execPath, ['-e', '0'], env));
      s.versionUse?.push(await timed(CFH, ['--version'], env, probe));
      s.run?.push(await timed(CFH, run, env));
      s.docker?.push(await timed('docker', docker, env));
      s.runUse?.push(await timed(CFH, run, env, probe));
    }
    const p50 = (k: string, f: (x: Sample) => number | undefined): number =>
      median((s[k] ?? []).map((x) => f(x) ?? Number.NaN));
    const wall = (x: Sample): number => x.wallMs;
    const versionMs = p50('version', wall);
    const nodeMs = p50('node', wall);
    const runMs = p50('run', wall);
    const dockerMs = p50('docker', wall);
    const versionRss = p50('versionUse', (x) => x.rssMiB);
    const runCpu = p50('runUse', (x) => x.cpuS);
    const runRss = p50('runUse', (x) => x.rssMiB);
    list = [
      {
        figure: 'cfh --version, wall p50',
        value: versionMs,
        unit: 'ms',
        baseline: `node -e 0, p50 ${nodeMs.toFixed(0)} ms (x${(versionMs / nodeMs).toFixed(2)})`,
        goal: '<= 80 ms',
        met: versionMs <= 80,
      },
      {
        figure: 'cfh --version, peak RSS p50',
        value: versionRss,
        unit: 'MiB',
        baseline: 'none (absolute)',
        goal: '<= 60 MiB',
        met: versionRss <= 60,
      },
      {
        figure: 'cfh sandbox run -- true, wall p50',
        value: runMs / dockerMs,
        unit: 'x',
        baseline: `docker run --rm --network none IMAGE true (CLI), p50 ${dockerMs.toFixed(0)} ms; cfh ${runMs.toFixed(0)} ms`,
        goal: '<= 1.0',
        met: runMs <= dockerMs,
      },
      {
        figure: 'cfh sandbox run -- true, CPU (user+sys) p50',
        value: runCpu,
        unit: 's',
        baseline: `none (absolute); peak RSS p50 ${runRss.toFixed(0)} MiB`,
        goal: '<= 0.25 s',
        met: runCpu <= 0.25,
      },
    ];
  } finally {
    runIds = new Set(await readdir(art).catch(() => []));
    await rm(scratch, { recursive: true, force: true });
  }
  const left = await checkLeftovers(dockerClient(readEnvironment()), {
    tag: 'startup',
    names: new Set(),
    runIds,
  });
  if (left > 0) throw new Error(`startup: ${String(left)} containers left behind`);
  return list;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runBench(async () => {
    printRows('cfh start-up, whole process (medians)', await rows());
    return 0;
  });
}
