// cfh's per-command overhead on the cold path (one short-lived container per command),
// against raw dockerode and against `docker run --rm`, in one process.
//
// Each round runs, in this order, one iteration of every series, so drift (page cache,
// engine state, CPU frequency) falls on all of them alike:
//   raw         dockerode create/start/wait/remove with a plain request: Image, Cmd
//               ['true'], NetworkMode none.
//   raw+spec    the same four calls with cfh's exact create request (toCreateOptions of a
//               plan: init, tmpfs, bind mount, seccomp, limits, cap drop). Tells the engine's
//               cost of the hardening apart from cfh's own work: the baseline of the target.
//   cfh         planSandboxRun + executeSandboxRun with io {} (capture only), evidence and
//               its fsyncs included: what a harness calling cfh pays per command.
//   docker-cli  `docker run --rm --network none IMAGE true` via execa (the bench may use
//               the docker CLI; the product may not).
// Warm-up rounds are run and discarded. Nothing is asserted about times: the target
// (cfh at most 5% over raw+spec at p50, issue 21) is reported, not enforced. The exit
// status is non-zero only when something failed or a container was left behind.
// cold-path-report.ts prints the tables.
//
// Run: bench/run.sh   (BENCH_ROUNDS, default 15; BENCH_WARMUP, default 2); a row source of
// bench-all (rows()).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { execa } from 'execa';
import { readEnvironment, type CfhEnvironment } from '../src/config/env.js';
import { planSandboxRun } from '../src/engine/run/run-plan.js';
import { writePlanHosts } from './plan-hosts.js';
import { executeSandboxRun, type RunDeps } from '../src/engine/command/sandbox-run.js';
import { CancelRequest } from '../src/engine/run/terminal.js';
import { loadRecipe } from '../src/image/recipe.js';
import { createLogger } from '../src/log.js';
import { currentOwner } from '../src/sandbox/owner.js';
import { currentHostIdentity } from '../src/sandbox/sandbox-user.js';
import { DockerRuntime, toCreateOptions } from '../src/substrate/docker/adapter.js';
import {
  BENCH_LABEL,
  checkLeftovers,
  dockerClient,
  intFromEnv,
  printRows,
  runBench,
  type BenchRow,
} from './bench-util.js';
import {
  report,
  SERIES,
  seriesSummaries,
  TARGET_RATIO,
  type CfhSample,
  type RawSample,
  type Results,
} from './cold-path-report.js';

const NAME_PREFIX = 'cfh-bench-';
const COMMAND = ['true'] as const;

/**
 * Runs the rounds and returns every sample; with `header`, prints what is measured first.
 * Throws when something failed; removes any container left behind (counted in leftovers).
 */
async function measure(header: boolean): Promise<Results> {
  const rounds = intFromEnv('BENCH_ROUNDS', 15, 1);
  const warmup = intFromEnv('BENCH_WARMUP', 2, 0);
  const image = loadRecipe().ref;
  const tag = `${process.pid}-${Date.now().toString(36)}`;

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cfh-bench-'));
  const workspace = path.join(tmp, 'workspace');
  const artifactRoot = path.join(tmp, 'runs');
  mkdirSync(workspace);

  const env: CfhEnvironment = { ...readEnvironment(), artifactRoot };
  const docker = dockerClient(env);
  const deps: RunDeps = {
    runtime: new DockerRuntime({ dockerHost: env.dockerHost }),
    logger: createLogger('silent'),
    owner: currentOwner(),
    // What the CLI's one builder passes (src/cli/run-deps.ts): the sweep the CLI runs.
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
  const interrupted = (): boolean => controller.signal.aborted;

  // Every container name this process asks for, and the cfh run ids, for the final check.
  const names = new Set<string>();
  const runIds = new Set<string>();
  let seq = 0;
  const nextName = (kind: string): string => {
    const name = `${NAME_PREFIX}${kind}-${tag}-${seq++}`;
    names.add(name);
    return name;
  };

  const planOptions = { command: COMMAND, workspace, artifactRoot };
  // cfh's create request, planned once outside any timing: raw+spec replays it, without
  // the start gate (a raw replay cannot answer it): cfh / raw+spec includes what the mount
  // checks cost (the re-check before create, the gate's report and cfh's word).
  const planned = planSandboxRun(planOptions, env, host, deps.owner).spec;
  writePlanHosts(planned);
  const specTemplate = toCreateOptions({ ...planned, mountCheck: 'recheck' });

  const engine = await docker.version();

  if (header) {
    console.log('cfh cold-path bench');
    console.log(
      `  node ${process.version}, engine ${engine.Version} (API ${engine.ApiVersion}), ${os.cpus().length} cpus, ${os.platform()} ${os.release()}`,
    );
    console.log(`  image ${image}, command [${COMMAND.join(' ')}], profile default (runc)`);
    console.log(`  rounds ${rounds} (+${warmup} warm-up), order per round: ${SERIES.join(', ')}`);
    console.log(`  workspace + artifact root under ${tmp}`);
    console.log('');
  }

  async function rawRun(options: Docker.ContainerCreateOptions): Promise<RawSample> {
    const t0 = performance.now();
    const container = await docker.createContainer(options);
    const t1 = performance.now();
    let removed = false;
    try {
      await container.start();
      const t2 = performance.now();
      const exit = (await container.wait()) as { StatusCode: number };
      const t3 = performance.now();
      if (exit.StatusCode !== 0) {
        throw new Error(`raw container ${String(options.name)} exited ${exit.StatusCode}`);
      }
      await container.remove({ force: true, v: true });
      removed = true;
      const t4 = performance.now();
      return {
        totalMs: t4 - t0,
        createMs: t1 - t0,
        startMs: t2 - t1,
        waitMs: t3 - t2,
        removeMs: t4 - t3,
      };
    } finally {
      if (!removed) await container.remove({ force: true, v: true }).catch(() => undefined);
    }
  }

  const raw = (): Promise<RawSample> =>
    rawRun({
      name: nextName('raw'),
      Image: image,
      Cmd: [...COMMAND],
      Labels: { [BENCH_LABEL]: tag },
      HostConfig: { NetworkMode: 'none' },
    });

  const rawSpec = (): Promise<RawSample> =>
    rawRun({ ...specTemplate, name: nextName('spec'), Labels: { [BENCH_LABEL]: tag } });

  async function cfh(): Promise<CfhSample> {
    const t0 = performance.now();
    const plan = planSandboxRun(planOptions, env, host, deps.owner);
    names.add(plan.spec.name);
    runIds.add(plan.runId);
    const t1 = performance.now();
    const outcome = await executeSandboxRun(plan, deps, {}, controller.signal);
    const t2 = performance.now();
    if (outcome.status !== 'completed' || outcome.exitCode !== 0) {
      throw new Error(
        `cfh run ${outcome.runId}: ${outcome.status} (${outcome.terminalReason}, exit ${outcome.exitCode})`,
      );
    }
    return { wallMs: t2 - t0, planMs: t1 - t0, timings: outcome.timings };
  }

  async function dockerCli(): Promise<number> {
    const name = nextName('cli');
    const t0 = performance.now();
    await execa(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        'none',
        '--name',
        name,
        '--label',
        `${BENCH_LABEL}=${tag}`,
        image,
        ...COMMAND,
      ],
      { stdin: 'ignore', cancelSignal: controller.signal },
    );
    return performance.now() - t0;
  }

  const rawSamples: RawSample[] = [];
  const specSamples: RawSample[] = [];
  const cfhSamples: CfhSample[] = [];
  const cliSamples: number[] = [];
  let failure: Error | undefined;
  let leftoverCount: number;

  try {
    for (let round = 0; round < warmup + rounds && !interrupted(); round++) {
      const a = await raw();
      const h = await rawSpec();
      const c = await cfh();
      const b = await dockerCli();
      const measured = round >= warmup;
      if (measured) {
        rawSamples.push(a);
        specSamples.push(h);
        cfhSamples.push(c);
        cliSamples.push(b);
      }
      const label = measured ? `round ${round - warmup + 1}/${rounds}` : `warm-up ${round + 1}`;
      console.error(
        `  ${label.padEnd(13)} raw ${a.totalMs.toFixed(1)}  raw+spec ${h.totalMs.toFixed(1)}  cfh ${c.wallMs.toFixed(1)}  docker-cli ${b.toFixed(1)} ms`,
      );
    }
  } catch (error) {
    failure = interrupted()
      ? new Error('interrupted')
      : error instanceof Error
        ? error
        : new Error(String(error));
  } finally {
    process.off('SIGINT', onSigint);
    leftoverCount = await checkLeftovers(docker, { tag, names, runIds });
    rmSync(tmp, { recursive: true, force: true });
  }
  if (failure !== undefined) throw failure;
  if (interrupted()) throw new Error('interrupted');

  return {
    rounds,
    warmup,
    image,
    engine: `${engine.Version} (API ${engine.ApiVersion})`,
    raw: rawSamples,
    spec: specSamples,
    cfh: cfhSamples,
    cli: cliSamples,
    leftovers: leftoverCount,
  };
}

function rowsOf(r: Results): BenchRow[] {
  const s = seriesSummaries(r);
  const cfh = s.cfh.p50;
  const spec = s['raw+spec'].p50;
  const ratio = cfh / spec;
  return [
    {
      figure: 'cold path in process: plan + executeSandboxRun of true, wall p50',
      value: ratio,
      unit: 'x',
      baseline:
        `raw dockerode create/start/wait/remove of cfh's own create request (no start gate),` +
        ` p50 ${spec.toFixed(0)} ms; cfh ${cfh.toFixed(0)} ms; plain request (NetworkMode none)` +
        ` ${s.raw.p50.toFixed(0)} ms (x${(cfh / s.raw.p50).toFixed(2)})`,
      goal: `<= ${TARGET_RATIO.toFixed(2)}`,
      met: ratio <= TARGET_RATIO,
    },
  ];
}

/** The bench's figures, for bench-all; throws when a container was left behind. */
export async function rows(): Promise<readonly BenchRow[]> {
  const r = await measure(false);
  if (r.leftovers > 0) throw new Error(`cold-path: ${String(r.leftovers)} containers left behind`);
  return rowsOf(r);
}

async function main(): Promise<number> {
  const r = await measure(true);
  report(r);
  console.log('');
  printRows('cold path (medians; baselines run side by side)', rowsOf(r));
  return r.leftovers === 0 ? 0 : 1;
}

// Run as a script (bench/run.sh cold-path), not when bench-all imports rows().
if (process.argv[1] === fileURLToPath(import.meta.url)) runBench(main);
