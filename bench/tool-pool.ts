// A per-call tool call from the warm pool (issue 21) against a per-run exec call, whole
// harness calls in one process: executeAgentRun with a scripted model that "thinks" for
// BENCH_THINK_MS before each answer (the time the pool refills in), over the same profile,
// workspace and `exec {"command":["true"]}` call. Three series:
//   per-run            one workload container for the run, each call an exec in it
//   per-call pooled    a pristine container per call, taken from the pool (pool.size, the
//                      profile's, default 2), removed after its call
//   per-call unpooled  pool.size 0: each call creates, starts, execs and removes its own
// A call is timed from the model's answer (after its thinking) to the next model request:
// one loop iteration with one tool call, its decision, execution and evidence. Calls 2..N
// of each run count in every series (the first of a per-run run starts its container, the
// first of a pooled run can wait for the pool's first fill); the first is reported apart.
// Rounds rotate the series order; a warm-up round is discarded. Times are reported, never
// asserted; the exit status is non-zero only when a run failed or left a container behind.
//
// Run: bench/run.sh pool (BENCH_ROUNDS default 3, BENCH_WARMUP default 1, BENCH_CALLS per
// run default 6, BENCH_THINK_MS default 300, BENCH_PROFILE default untrusted-repo).
// `rows()` returns the figures for bench-all (bench-util's BenchRow).
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readEnvironment, type CfhEnvironment } from '../src/config/env.js';
import type { ToolLifetime } from '../src/config/profile-schema.js';
import { executeAgentRun } from '../src/engine/agent/agent-run.js';
import { planSandboxRun, type RunPlan } from '../src/engine/run/run-plan.js';
import { createLogger } from '../src/log.js';
import type { ModelGateway, ModelRequest, ModelResponse } from '../src/model/gateway.js';
import { Script, ScriptedGateway } from '../src/model/scripted-gateway.js';
import { currentOwner } from '../src/sandbox/owner.js';
import { currentHostIdentity } from '../src/sandbox/sandbox-user.js';
import { DockerRuntime } from '../src/substrate/docker/adapter.js';
import {
  checkLeftovers,
  dockerClient,
  intFromEnv,
  printRows,
  runBench,
  table,
  type BenchRow,
} from './bench-util.js';
import { fmt, median, summarize, type Summary } from './stats.js';

const SERIES = ['per-run', 'per-call pooled', 'per-call unpooled'] as const;
type Series = (typeof SERIES)[number];

/** Answers after `thinkMs`, stamping when each request came and each answer went. */
class ThinkingGateway implements ModelGateway {
  readonly adapter: string;
  readonly route: Readonly<Record<string, string>>;
  readonly model: string;
  readonly counting: ModelGateway['counting'];
  readonly asked: number[] = [];
  readonly answered: number[] = [];
  readonly #inner: ModelGateway;
  readonly #thinkMs: number;

  constructor(inner: ModelGateway, thinkMs: number) {
    this.#inner = inner;
    this.#thinkMs = thinkMs;
    this.adapter = inner.adapter;
    this.route = inner.route;
    this.model = inner.model;
    this.counting = inner.counting;
  }

  countInputTokens(request: ModelRequest, signal: AbortSignal): Promise<number | undefined> {
    return this.#inner.countInputTokens(request, signal);
  }

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
    this.asked.push(performance.now());
    await sleep(this.#thinkMs, undefined, { signal });
    const response = await this.#inner.complete(request, signal);
    this.answered.push(performance.now());
    return response;
  }
}

interface Results {
  readonly calls: Record<Series, Summary>;
  readonly first: Record<Series, number>;
  readonly thinkMs: number;
  readonly callsPerRun: number;
  readonly rounds: number;
  readonly leftovers: number;
}

async function measure(): Promise<Results> {
  const rounds = intFromEnv('BENCH_ROUNDS', 3, 1);
  const warmup = intFromEnv('BENCH_WARMUP', 1, 0);
  const n = intFromEnv('BENCH_CALLS', 6, 2);
  const thinkMs = intFromEnv('BENCH_THINK_MS', 300, 0);
  const profile = process.env.BENCH_PROFILE ?? 'untrusted-repo';
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cfh-bench-pool-'));
  const workspace = path.join(tmp, 'workspace');
  const artifactRoot = path.join(tmp, 'runs');
  mkdirSync(workspace);
  // The profile's workspace is rw: the sandbox user (root's unprivileged stand-in) writes it.
  if (process.getuid?.() === 0) chownSync(workspace, 65534, 65534);
  const env: CfhEnvironment = { ...readEnvironment(), artifactRoot };
  const docker = dockerClient(env);
  const runtime = new DockerRuntime({ dockerHost: env.dockerHost });
  const logger = createLogger('silent');
  const owner = currentOwner();
  const host = currentHostIdentity();
  const runIds = new Set<string>();
  const signal = new AbortController().signal;

  const plan = (series: Series): RunPlan => {
    const lifetime: ToolLifetime = series === 'per-run' ? 'per-run' : 'per-call';
    const p = planSandboxRun(
      {
        profile,
        workspace,
        artifactRoot,
        toolLifetime: lifetime,
        budgets: { maxModelTurns: String(n + 1), maxToolCalls: String(n) },
        command: ['sleep', 'infinity'],
      },
      env,
      host,
      owner,
    );
    runIds.add(p.runId);
    if (series !== 'per-call unpooled') return p;
    return { ...p, profile: { ...p.profile, pool: { size: 0 } } };
  };

  const sample = async (series: Series): Promise<number[]> => {
    const p = plan(series);
    const script = Script.parse({
      model: 'scripted',
      turns: [
        ...Array.from({ length: n }, () => ({
          tool_calls: [{ name: 'exec', input: { command: ['true'] } }],
        })),
        { text: 'done' },
      ],
    });
    const gateway = new ThinkingGateway(new ScriptedGateway(script, 'bench/tool-pool.ts'), thinkMs);
    const outcome = await executeAgentRun(
      p,
      {
        slots: { prompt: `make ${n} calls` },
        mode: 'run',
        approvals: {
          user: 'bench',
          interactive: false,
          notInteractiveBecause: 'bench: nobody to ask',
          preApprovedRules: [],
          file: null,
          surfaces: [],
        },
      },
      {
        runtime,
        logger,
        owner,
        gateway,
        hostProcessDir: env.hostProcessDir,
        writtenLabelsDir: env.writtenLabelsDir,
        draftRoot: env.draftRoot,
      },
      signal,
    );
    if (outcome.status !== 'completed' || outcome.toolCalls?.byStatus.success !== n)
      throw new Error(
        `${series} run ${outcome.runId}: ${outcome.status} (${outcome.terminalReason})`,
      );
    // Call k: from the answer that proposed it to the next request.
    return Array.from(
      { length: n },
      (_, k) => (gateway.asked[k + 1] ?? NaN) - (gateway.answered[k] ?? NaN),
    );
  };

  const all = Object.fromEntries(SERIES.map((s) => [s, [] as number[]])) as Record<
    Series,
    number[]
  >;
  const firsts = Object.fromEntries(SERIES.map((s) => [s, [] as number[]])) as Record<
    Series,
    number[]
  >;
  let leftovers: number;
  try {
    for (let round = 0; round < warmup + rounds; round++) {
      const order = SERIES.map((_, i) => SERIES[(i + round) % SERIES.length] as Series);
      for (const series of order) {
        const gaps = await sample(series);
        if (round < warmup) continue;
        firsts[series].push(gaps[0] ?? NaN);
        all[series].push(...gaps.slice(1));
      }
      console.error(
        `  ${round < warmup ? 'warm-up' : `round ${round - warmup + 1}/${rounds}`}: p50 ms ` +
          SERIES.map((s) => `${s} ${median(all[s]).toFixed(1)}`).join(', '),
      );
    }
  } finally {
    leftovers = await checkLeftovers(docker, { tag: 'none', names: new Set(), runIds });
    rmSync(tmp, { recursive: true, force: true });
  }
  const calls = Object.fromEntries(SERIES.map((s) => [s, summarize(all[s])])) as Record<
    Series,
    Summary
  >;
  const first = Object.fromEntries(SERIES.map((s) => [s, median(firsts[s])])) as Record<
    Series,
    number
  >;
  return { calls, first, thinkMs, callsPerRun: n, rounds, leftovers };
}

function rowsOf(r: Results): BenchRow[] {
  const base = r.calls['per-run'].p50;
  const row = (series: Series, goal: number | undefined): BenchRow => {
    const ms = r.calls[series].p50;
    const ratio = ms / base;
    return {
      figure: `${series} exec tool call, p50 (model thinks ${r.thinkMs} ms)`,
      value: ratio,
      unit: 'x',
      baseline: `per-run exec tool call (harness), same process, p50 ${fmt(base)} ms; ${series} ${fmt(ms)} ms`,
      goal: goal === undefined ? 'reported' : `<= ${goal}`,
      met: goal === undefined || ratio <= goal,
    };
  };
  return [row('per-call pooled', 1.5), row('per-call unpooled', undefined)];
}

/** The bench's figures, for bench-all; throws when a container was left behind. */
export async function rows(): Promise<readonly BenchRow[]> {
  const r = await measure();
  if (r.leftovers > 0) throw new Error(`pool: ${String(r.leftovers)} containers left behind`);
  return rowsOf(r);
}

async function main(): Promise<number> {
  const r = await measure();
  console.log('');
  console.log(
    `exec {"command":["true"]}: per tool call, ms (calls 2..${r.callsPerRun} of each run, ${r.rounds} rounds; model thinks ${r.thinkMs} ms, not counted)`,
  );
  const base = r.calls['per-run'];
  table(
    ['series', 'n', 'p50', 'p90', 'mean', 'min', 'max', 'p50/per-run', 'first call'],
    SERIES.map((s) => {
      const x = r.calls[s];
      return [
        s,
        String(x.n),
        fmt(x.p50),
        fmt(x.p90),
        fmt(x.mean),
        fmt(x.min),
        fmt(x.max),
        (x.p50 / base.p50).toFixed(3),
        fmt(r.first[s]),
      ];
    }),
  );
  const out = rowsOf(r);
  console.log('');
  printRows('warm pool (medians; the baseline run side by side)', out);
  console.log(
    JSON.stringify({
      bench: 'tool-pool',
      p50Ms: Object.fromEntries(SERIES.map((s) => [s, r.calls[s].p50])),
      rows: out,
      leftovers: r.leftovers,
    }),
  );
  return r.leftovers === 0 ? 0 : 1;
}

// Run as a script (bench/run.sh pool), not when bench-all imports rows().
if (process.argv[1]?.endsWith('tool-pool.js') === true) runBench(main);
