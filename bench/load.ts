// bench/load.ts: cfh under load (issue 21): 16 command runs and 8 agent runs (scripted
// model, tools in containers) started at once on this machine, against the same 24 runs one
// at a time in the same bench process. Reports failures, engine objects left (containers
// labelled with one of this bench's run ids only), and p50/p99 per run of each kind, at once
// against alone. CFH_BENCH_LOAD_COMMANDS / CFH_BENCH_LOAD_AGENTS change the mix.
// `bench/run.sh load`; a row source of bench-all (rows()).
import { spawn } from 'node:child_process';
import { chown, cp, mkdtemp, readdir, rm } from 'node:fs/promises';
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
import { percentile } from './stats.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CFH = path.join(ROOT, 'bin', 'cfh');

type Kind = 'command' | 'agent';
interface Outcome {
  readonly kind: Kind;
  readonly ms: number;
  readonly ok: boolean;
}

async function workspace(scratch: string, name: string): Promise<string> {
  const ws = path.join(scratch, name);
  await cp(path.join(ROOT, 'examples', 'sample-repo'), ws, { recursive: true });
  // untrusted-repo writes as the sandbox user (65534) when cfh is root, as `make demo` does.
  if (process.getuid?.() === 0) {
    for (const p of [
      ws,
      ...(await readdir(ws, { recursive: true })).map((f) => path.join(ws, f)),
    ]) {
      await chown(p, 65534, 65534);
    }
  }
  return ws;
}

async function one(kind: Kind, scratch: string, art: string, i: string): Promise<Outcome> {
  const args =
    kind === 'command'
      ? ['sandbox', 'run', '--artifact-root', art, '--', 'sh', '-c', 'echo hi']
      : [
          'sandbox',
          'run',
          '--artifact-root',
          art,
          '--profile',
          'untrusted-repo',
          '--workspace',
          await workspace(scratch, `ws-${i}`),
          '--non-interactive',
          '--prompt',
          'Run the calc tests and tell me whether calc works',
          '--script',
          path.join(ROOT, 'examples', 'agent', 'fix-and-test.yaml'),
        ];
  const started = performance.now();
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(CFH, args, {
      stdio: 'ignore',
      env: { ...process.env, CFH_LOG_LEVEL: 'error' },
    });
    child.once('error', () => {
      resolve(-1);
    });
    child.once('exit', resolve);
  });
  return { kind, ms: performance.now() - started, ok: code === 0 };
}

export async function rows(): Promise<readonly BenchRow[]> {
  const commands = intFromEnv('CFH_BENCH_LOAD_COMMANDS', 16, 0);
  const agents = intFromEnv('CFH_BENCH_LOAD_AGENTS', 8, 0);
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'cfh-bench-load-'));
  const art = path.join(scratch, 'runs');
  const kinds: Kind[] = [
    ...Array<Kind>(commands).fill('command'),
    ...Array<Kind>(agents).fill('agent'),
  ];
  try {
    const alone: Outcome[] = [];
    for (const [i, k] of kinds.entries()) alone.push(await one(k, scratch, art, `a${String(i)}`));
    const atOnce = await Promise.all(kinds.map((k, i) => one(k, scratch, art, `b${String(i)}`)));
    const failures = [...alone, ...atOnce].filter((o) => !o.ok).length;
    const runIds = new Set(await readdir(art).catch(() => []));
    const left = await checkLeftovers(dockerClient(readEnvironment()), {
      tag: 'load',
      names: new Set(),
      runIds,
    });
    const list: BenchRow[] = [
      {
        figure: `load: ${String(commands)} command + ${String(agents)} agent runs at once, failures`,
        value: failures,
        unit: 'count',
        baseline: `the same ${String(kinds.length)} runs one at a time (failures counted in both)`,
        goal: '0',
        met: failures === 0,
      },
      {
        figure: 'load: engine objects left by the runs',
        value: left,
        unit: 'count',
        baseline: `containers labelled with one of the ${String(runIds.size)} runs' ids`,
        goal: '0',
        met: left === 0,
      },
    ];
    for (const kind of ['command', 'agent'] as const) {
      const ms = (os: readonly Outcome[]): number[] =>
        os.filter((o) => o.kind === kind).map((o) => o.ms);
      for (const p of [50, 99]) {
        const a = percentile(ms(alone), p);
        const b = percentile(ms(atOnce), p);
        if (Number.isNaN(a)) continue;
        list.push({
          figure: `load: ${kind} run, p${String(p)} at once`,
          value: b / a,
          unit: 'x',
          baseline: `the same runs one at a time, p${String(p)} ${(a / 1000).toFixed(2)} s; at once ${(b / 1000).toFixed(2)} s`,
          goal: 'reported (2 cores)',
          met: true,
        });
      }
    }
    return list;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runBench(async () => {
    printRows('cfh under load (2 cores shared)', await rows());
    return 0;
  });
}
