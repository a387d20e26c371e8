// What a network posture (`allowlist`, `open`) adds to a run, against the same run with the
// network disabled, in one process; and where the set-up's time goes.
//
// Each round runs, in this order, one iteration of every series, so drift falls on all of
// them alike:
//   disabled   planSandboxRun + executeSandboxRun of `true`, network disabled: the baseline.
//   allowlist  the same with `--network allowlist --allow bench.cfh.test:8080` (nothing is
//              connected to; the set-up is what is measured).
//   open       the same with `--network open`.
//   floor      the engine's floor (bench/posture-floor.ts): raw dockerode making the same
//              object graph (network, guard, workload joined to it, torn down in reverse)
//              against a raw container with its network disabled. What a posture adds on
//              the engine alone, whoever asks; cfh's share is its added time minus that.
//   steps      openEgress (src/sandbox/egress-sandbox.ts) alone for an allowlist posture,
//              once ready, then its close: its `setupMs` says what each step took (network
//              create, gateway listeners, config dir, guard create, guard start with its
//              rules and conntrack reader).
// Warm-up rounds are run and discarded. The target (a posture adds at most 200 ms to a run,
// issue "Postures") is reported, never asserted: the exit status is non-zero only when
// something failed or an engine object was left behind.
//
// Run: bench/run.sh posture   (BENCH_ROUNDS, default 10; BENCH_WARMUP, default 1); a row
// source of bench-all (rows()).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEnvironment, type CfhEnvironment } from '../src/config/env.js';
import { planSandboxRun, type SandboxRunOptions } from '../src/engine/run/run-plan.js';
import { executeSandboxRun, type RunDeps } from '../src/engine/command/sandbox-run.js';
import { CancelRequest } from '../src/engine/run/terminal.js';
import { loadRecipe } from '../src/image/recipe.js';
import { createLogger } from '../src/log.js';
import { egressNames, openEgress } from '../src/sandbox/egress-sandbox.js';
import { currentOwner } from '../src/sandbox/owner.js';
import { currentHostIdentity } from '../src/sandbox/sandbox-user.js';
import { LABEL_RUN_ID } from '../src/sandbox/owner.js';
import { DockerRuntime } from '../src/substrate/docker/adapter.js';
import { writePlanHosts } from './plan-hosts.js';
import { PostureFloor } from './posture-floor.js';
import { fmt, round1, summarize, type Summary } from './stats.js';
import {
  BENCH_LABEL,
  checkLeftovers,
  dockerClient,
  intFromEnv,
  printRows,
  runBench,
  table,
  type BenchRow,
} from './bench-util.js';

const TARGET_ADDED_MS = 200;
const SERIES = ['disabled', 'allowlist', 'open'] as const;
type Series = (typeof SERIES)[number];

interface Results {
  readonly rounds: number;
  readonly warmup: number;
  /** Whole-run wall time of each series. */
  readonly wall: Record<Series, Summary>;
  /** The engine's floor: raw dockerode, network disabled and the posture's graph. */
  readonly floor: { readonly disabled: Summary; readonly posture: Summary };
  /** The floor's posture steps, ms per sample. */
  readonly floorSteps: Record<string, number[]>;
  /** openEgress's steps (allowlist), ms per sample. */
  readonly steps: Record<string, number[]>;
  /** Containers and networks left behind (removed). */
  readonly leftovers: number;
}

/** Runs the rounds; throws when something failed; removes what was left behind. */
async function measure(): Promise<Results> {
  const rounds = intFromEnv('BENCH_ROUNDS', 10, 1);
  const warmup = intFromEnv('BENCH_WARMUP', 1, 0);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cfh-bench-posture-'));
  const workspace = path.join(tmp, 'workspace');
  const artifactRoot = path.join(tmp, 'runs');
  mkdirSync(workspace);
  const env: CfhEnvironment = { ...readEnvironment(), artifactRoot };
  const docker = dockerClient(env);
  const runtime = new DockerRuntime({ dockerHost: env.dockerHost });
  const deps: RunDeps = {
    runtime,
    logger: createLogger('silent'),
    owner: currentOwner(),
    hostProcessDir: env.hostProcessDir,
    writtenLabelsDir: env.writtenLabelsDir,
    draftRoot: env.draftRoot,
  };
  const host = currentHostIdentity();
  const controller = new AbortController();
  const onSigint = (): void => {
    controller.abort(new CancelRequest('SIGINT'));
  };
  process.once('SIGINT', onSigint);
  const options: Record<Series, SandboxRunOptions> = {
    disabled: { command: ['true'], workspace, artifactRoot, network: 'disabled' },
    allowlist: {
      command: ['true'],
      workspace,
      artifactRoot,
      network: 'allowlist',
      allow: ['bench.cfh.test:8080'],
    },
    open: { command: ['true'], workspace, artifactRoot, network: 'open' },
  };
  const names = new Set<string>();
  const runIds = new Set<string>();
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  writePlanHosts(planSandboxRun(options.disabled, env, host, deps.owner).spec);
  const floor = new PostureFloor(docker, loadRecipe().ref, tag, names);

  const run = async (series: Series): Promise<number> => {
    const plan = planSandboxRun(options[series], env, host, deps.owner);
    names.add(plan.spec.name);
    runIds.add(plan.runId);
    const t0 = performance.now();
    const outcome = await executeSandboxRun(plan, deps, {}, controller.signal);
    const wall = performance.now() - t0;
    if (outcome.status !== 'completed' || outcome.exitCode !== 0)
      throw new Error(
        `${series} run ${outcome.runId}: ${outcome.status} (${outcome.terminalReason})`,
      );
    return wall;
  };
  const steps = async (): Promise<Record<string, number>> => {
    const plan = planSandboxRun(options.allowlist, env, host, deps.owner);
    runIds.add(plan.runId);
    const egressNamesOf = egressNames(`${plan.runId}-steps`);
    names.add(egressNamesOf.guard);
    const t0 = performance.now();
    const opened = await openEgress({
      runtime,
      names: egressNamesOf,
      image: plan.image.guard?.ref ?? loadRecipe().ref,
      posture: plan.profile.network,
      labels: { ...plan.spec.labels, [LABEL_RUN_ID]: plan.runId },
      upstreamResolver: undefined,
      onEvent: () => undefined,
      logger: deps.logger,
      signal: controller.signal,
    });
    await opened.ready;
    const open = performance.now() - t0;
    await opened.close();
    return { ...opened.setupMs, total: open, close: performance.now() - t0 - open };
  };

  const wall: Record<Series, number[]> = { disabled: [], allowlist: [], open: [] };
  const stepSamples: Record<string, number[]> = {};
  const floorWall = { disabled: [] as number[], posture: [] as number[] };
  const floorSteps: Record<string, number[]> = {};
  let failure: unknown;
  let leftovers: number;
  try {
    for (let round = 0; round < warmup + rounds && !controller.signal.aborted; round++) {
      const sample: Partial<Record<Series, number>> = {};
      for (const s of SERIES) sample[s] = await run(s);
      const st = await steps();
      const off = await floor.disabled();
      const on = await floor.posture();
      if (round >= warmup) {
        for (const s of SERIES) wall[s].push(sample[s] ?? 0);
        for (const [k, v] of Object.entries(st)) (stepSamples[k] ??= []).push(v);
        floorWall.disabled.push(off.totalMs);
        floorWall.posture.push(on.totalMs);
        for (const [k, v] of Object.entries(on.steps)) (floorSteps[k] ??= []).push(v);
      }
      console.error(
        `  ${round < warmup ? 'warm-up' : `round ${round - warmup + 1}/${rounds}`}  ${SERIES.map((s) => `${s} ${(sample[s] ?? 0).toFixed(0)}`).join('  ')}  steps ${Object.entries(
          st,
        )
          .map(([k, v]) => `${k} ${v.toFixed(0)}`)
          .join(' ')}  floor ${off.totalMs.toFixed(0)}/${on.totalMs.toFixed(0)} ms`,
      );
    }
  } catch (error) {
    failure = error;
  } finally {
    process.off('SIGINT', onSigint);
    leftovers = await checkLeftovers(docker, { tag, names, runIds });
    const networks = await docker.listNetworks();
    const ours = networks.filter(
      (n) => runIds.has(n.Labels?.[LABEL_RUN_ID] ?? '') || n.Labels?.[BENCH_LABEL] === tag,
    );
    for (const n of ours)
      await docker
        .getNetwork(n.Id)
        .remove()
        .catch(() => undefined);
    if (ours.length > 0) console.log(`  ${ours.length} network(s) left behind, removed`);
    leftovers += ours.length;
    rmSync(tmp, { recursive: true, force: true });
  }
  if (failure !== undefined)
    throw failure instanceof Error ? failure : new Error('bench failed', { cause: failure });
  if (controller.signal.aborted) throw new Error('interrupted');
  return {
    rounds,
    warmup,
    wall: {
      disabled: summarize(wall.disabled),
      allowlist: summarize(wall.allowlist),
      open: summarize(wall.open),
    },
    floor: { disabled: summarize(floorWall.disabled), posture: summarize(floorWall.posture) },
    floorSteps,
    steps: stepSamples,
    leftovers,
  };
}

function rowsOf(r: Results): BenchRow[] {
  const s = r.wall;
  const floorAdded = r.floor.posture.p50 - r.floor.disabled.p50;
  const floorRow: BenchRow = {
    figure: "posture: the engine's floor, the same objects by raw dockerode, added p50",
    value: floorAdded,
    unit: 'ms',
    baseline: `raw container, network disabled, p50 ${r.floor.disabled.p50.toFixed(0)} ms; network + guard + joined workload, torn down, ${r.floor.posture.p50.toFixed(0)} ms`,
    goal: 'reported (the limit)',
    met: true,
  };
  return [
    ...(['allowlist', 'open'] as const).map((n): BenchRow => {
      const added = s[n].p50 - s.disabled.p50;
      return {
        figure: `posture ${n}: set-up added to a run of true (in process), p50`,
        value: added,
        unit: 'ms',
        baseline: `the same run, network disabled, p50 ${s.disabled.p50.toFixed(0)} ms; ${n} ${s[n].p50.toFixed(0)} ms (x${(s[n].p50 / s.disabled.p50).toFixed(2)}); beyond the engine's floor ${signed(added - floorAdded)} ms`,
        goal: `<= ${TARGET_ADDED_MS} ms added`,
        met: added <= TARGET_ADDED_MS,
      };
    }),
    floorRow,
  ];
}

function signed(ms: number): string {
  return `${ms >= 0 ? '+' : ''}${ms.toFixed(0)}`;
}

/** The bench's figures, for bench-all; throws when an engine object was left behind. */
export async function rows(): Promise<readonly BenchRow[]> {
  const r = await measure();
  if (r.leftovers > 0)
    throw new Error(`posture: ${String(r.leftovers)} engine objects left behind`);
  return rowsOf(r);
}

async function main(): Promise<number> {
  const r = await measure();
  const { rounds, warmup, wall: s, steps: stepSamples, leftovers } = r;
  console.log('');
  console.log(`whole run of \`true\`, ms (${rounds} rounds after ${warmup} warm-up)`);
  table(
    ['series', 'p50', 'p90', 'mean', 'min', 'max', 'added p50', 'p50 x'],
    SERIES.map((n) => [
      n,
      fmt(s[n].p50),
      fmt(s[n].p90),
      fmt(s[n].mean),
      fmt(s[n].min),
      fmt(s[n].max),
      n === 'disabled' ? '-' : `+${fmt(round1(s[n].p50 - s.disabled.p50))}`,
      (s[n].p50 / s.disabled.p50).toFixed(3),
    ]),
  );
  console.log('');
  console.log('openEgress steps (allowlist), ms');
  table(
    ['step', 'p50', 'mean', 'min', 'max'],
    Object.entries(stepSamples).map(([k, v]) => {
      const x = summarize(v);
      return [k, fmt(x.p50), fmt(x.mean), fmt(x.min), fmt(x.max)];
    }),
  );
  console.log('');
  console.log("the engine's floor (raw dockerode, same rounds), ms");
  table(
    ['series', 'p50', 'mean', 'min', 'max'],
    [
      ['raw disabled', r.floor.disabled],
      ['raw posture graph', r.floor.posture],
    ].map(([n, x]) => {
      const v = x as Summary;
      return [n as string, fmt(v.p50), fmt(v.mean), fmt(v.min), fmt(v.max)];
    }),
  );
  table(
    ['floor step', 'p50', 'mean', 'min', 'max'],
    Object.entries(r.floorSteps).map(([k, v]) => {
      const x = summarize(v);
      return [k, fmt(x.p50), fmt(x.mean), fmt(x.min), fmt(x.max)];
    }),
  );
  const list = rowsOf(r);
  console.log('');
  printRows('network postures (medians; the baseline run side by side)', list);
  console.log(
    JSON.stringify({
      bench: 'posture-setup',
      rounds,
      warmup,
      wallMs: s,
      floorMs: r.floor,
      stepsMs: Object.fromEntries(
        Object.entries(stepSamples).map(([k, v]) => [k, summarize(v).p50]),
      ),
      rows: list,
      leftovers,
    }),
  );
  return leftovers === 0 ? 0 : 1;
}

// Run as a script (bench/run.sh posture), not when bench-all imports rows().
if (process.argv[1] === fileURLToPath(import.meta.url)) runBench(main);
