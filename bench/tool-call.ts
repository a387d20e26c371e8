// The agent harness's own overhead per tool call: the model/tool loop, argument
// validation, the mediator, evidence writing, against the raw container execution it wraps,
// for per-run and per-call tool containers, in one process.
//
// Workload (BENCH_TOOLS, comma-separated, default exec): tool calls that do almost nothing,
// so the overhead dominates:
//   exec       {"command": ["true"]}, in the workload tool container
//   read_file  {"path": "/workspace/small.txt"}: the built-in python3 helper reads a 16-byte
//              file from the temp workspace, in the file-tool container (python's start-up
//              dominates the container side)
//   mixed      exec and read_file in turn: a per-run sample needs both containers, the
//              second started at its first use (call 2), as the executor does
// The raw series sends the tool's own argv and stdin (BUILTIN_TOOLS' command()) bare; the
// container and harness series send them as ToolContainer.run does, to the call supervisor
// (tools/call-supervisor.ts), whose cost the ratios include; every series uses the
// container spec of the tool's kind
// (toolContainerSpec) derived from the one planSandboxRun derives from the profile
// (BENCH_PROFILE, default untrusted-repo: it lists exec; workspace rw, no network), and
// starts each exec where ToolContainer does (/workspace for exec, / for the file helper).
//
// Series, for each tool lifetime:
//   per-run   one container of each kind the sample uses (`/usr/bin/sleep infinity` under
//             init, as ToolContainer.start creates it), started at its first call (that
//             call's time includes the start), serves every call of that kind; a call is
//             one exec in it.
//     raw        dockerode, no cfh code: createContainer + start, then per call exec create,
//                hijacked start (stdin written when the tool has some), demux to the end of
//                the stream, exec inspect for the exit code; remove at the end.
//     container  cfh's container layer without the loop: ToolContainer.start, then
//                ToolContainer.run per call (DockerRuntime's exec path: bounded collectors).
//     harness    executeAgentRun with a scripted model: N turns proposing one call each, then
//                a final text turn; real preflight, run directory, snapshot, event log with
//                its fsyncs, transcript, outputs/, report, in a temp artifact root.
//   per-call  a container per call, removed after it (the harness series takes it from the
//             profile's warm pool, pool.size; bench/tool-pool.ts sets the pool against a
//             per-run exec with the model's thinking time, which the pool needs).
//     raw        dockerode create + start + exec (as above) + remove (force) per call.
//     container  ToolContainer.start + run + remove per call (what PerCallExecutor does,
//                without its evidence events).
//     harness    executeAgentRun as above with toolLifetime per-call (the planner's override).
//
// How a harness call is timed: the scripted gateway is wrapped so that every model request
// stamps the clock. Turn k's request comes right after tool call k-1 was answered, so the
// gap between consecutive requests is one whole loop iteration with exactly one tool call:
// the model response handled (events, transcript, budgets), the call validated (zod),
// mediated, executed, its outputs and tool_executed written, the next model_call_started
// written. N calls give N samples per run; the run's set-up and teardown (plan, preflight,
// run directory, snapshot, first request; final answer, container removal, report) fall
// outside every gap and are reported apart as the run's fixed cost. The runtime handed to
// executeAgentRun is wrapped too, summing the time spent inside its container calls (create,
// start, exec, remove), so each gap splits into engine time and the harness's own time.
// Per-run samples count calls 2..N in every series: the first call of a per-run sample
// also creates and starts the container, and is reported apart ("first call"); in a mixed
// sample call 2 starts the second container, in every series alike.
//
// Two measures of the overhead are printed, and they answer differently to noise:
//   harness/raw, harness − raw   across series (different containers, different moments):
//               what the issue asks for, but on a busy engine an exec's own variance (tens
//               of ms, hundreds for a container's life) can exceed the overhead, so the
//               difference can come out negative.
//   harness's own   within each harness call (the gap minus the time in the runtime): the
//               loop, validation, mediator and evidence alone, on the same call; engine
//               noise falls out of it.
// Every series also records this process's CPU time (process.cpuUsage, user + system)
// during each call: what cfh's code burns per call, which a loaded machine inflates far less
// than it inflates wall time.
//
// Each round runs one sample of every series, in an order rotated by one per round, so drift
// falls on all of them alike; warm-up rounds are run and discarded. Times are reported,
// never asserted. The exit status is non-zero only when something failed (a call's result,
// a run's outcome or its evidence not what the workload expects) or a container was left
// behind: containers labelled cfh.bench=<tag>, named by the bench, or labelled with the run
// id of a run it planned (other processes' cfh containers are left alone).
//
// Run: bench/run.sh tools   (BENCH_ROUNDS, default 4; BENCH_WARMUP, default 1;
//      BENCH_PER_RUN_CALLS per per-run sample, default 10; BENCH_PER_CALL_CALLS per per-call
//      sample, default 3; BENCH_TOOLS (exec, read_file, mixed), default exec; BENCH_PROFILE,
//      default untrusted-repo)
import { writePlanHosts } from './plan-hosts.js';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { readEnvironment, type CfhEnvironment } from '../src/config/env.js';
import type { ToolLifetime } from '../src/config/profile-schema.js';
import { executeAgentRun } from '../src/engine/agent/agent-run.js';
import {
  planSandboxRun,
  type RunPlan,
  type SandboxRunOptions,
} from '../src/engine/run/run-plan.js';
import { CancelRequest } from '../src/engine/run/terminal.js';
import { RUN_FILES } from '../src/evidence/run-directory.js';
import { verifyEventChain } from '../src/evidence/event-log.js';
import { createLogger } from '../src/log.js';
import type { ModelGateway, ModelRequest, ModelResponse } from '../src/model/gateway.js';
import { Script, ScriptedGateway } from '../src/model/scripted-gateway.js';
import { currentOwner, type OwnerIdentity } from '../src/sandbox/owner.js';
import { currentHostIdentity } from '../src/sandbox/sandbox-user.js';
import type { ContainerSpec } from '../src/substrate/container-spec.js';
import { DockerRuntime, toCreateOptions } from '../src/substrate/docker/adapter.js';
import type {
  AttachedOutput,
  ContainerExit,
  ContainerRuntime,
  CreatedContainer,
  EngineFacts,
  ExecOptions,
  ExecResult,
  GuardSpec,
  BuildOptions,
  CreatedGuard,
  ImageFacts,
  ImageSummary,
  FrozenContainers,
  LabelledObject,
  NetworkFacts,
  ProgressListener,
  RunResourceUsage,
  StartedContainer,
  TerminalSize,
} from '../src/substrate/runtime.js';
import { BUILTIN_TOOLS, type BuiltinTool } from '../src/tools/builtins.js';
import {
  ToolContainer,
  toolContainerName,
  toolContainerSpec,
} from '../src/tools/tool-container.js';
import { fmt, median, round1, round3, rounded, summarize, type Summary } from './stats.js';
import {
  rawExec,
  BENCH_LABEL,
  checkLeftovers,
  dockerClient,
  intFromEnv,
  runBench,
  table,
} from './bench-util.js';

const NAME_PREFIX = 'cfh-bench-tools-';
const FILE_NAME = 'small.txt';
const FILE_CONTENT = 'sixteen bytes..\n';

const LIFETIMES = ['per-run', 'per-call'] as const satisfies readonly ToolLifetime[];
const LAYERS = ['raw', 'container', 'harness'] as const;
type Layer = (typeof LAYERS)[number];
type SeriesKey = `${ToolLifetime}/${Layer}`;
const SERIES: readonly SeriesKey[] = LIFETIMES.flatMap((l) =>
  LAYERS.map((x) => `${l}/${x}` as const),
);

const LABELS: Record<SeriesKey, string> = {
  'per-run/raw': 'per-run  raw exec (dockerode)',
  'per-run/container': 'per-run  ToolContainer.run',
  'per-run/harness': 'per-run  harness (executeAgentRun)',
  'per-call/raw': 'per-call raw create+start+exec+remove',
  'per-call/container': 'per-call ToolContainer start+run+remove',
  'per-call/harness': 'per-call harness (executeAgentRun)',
};

/** One sample of one series: a container's worth (per-run) or N containers (per-call). */
interface Sample {
  /** The calls that count: 2..N for per-run, 1..N for per-call. */
  readonly calls: readonly number[];
  /** This process's CPU time (user + system) during each of those calls. */
  readonly cpu: readonly number[];
  /** Per-run: container create + start + the first call. Per-call: the first call. */
  readonly firstMs: number;
  /** Harness: time inside the runtime's container calls, per counted call. */
  readonly engine?: readonly number[];
  /** Harness: planSandboxRun + executeAgentRun. */
  readonly wallMs?: number;
  /** Harness: wall minus the N loop iterations (set-up, first request, final turn, teardown). */
  readonly fixedMs?: number;
}

/** One tool call of a workload. */
interface BenchCall {
  readonly tool: BuiltinTool;
  readonly input: unknown;
  readonly describe: string;
  /** Throws unless one execution's exit code and stdout are what the call must produce. */
  check(exitCode: number, stdout: Buffer): void;
}

interface Workload {
  readonly name: string;
  readonly describe: string;
  /** Call i of a sample is calls[i % calls.length]. */
  readonly calls: readonly BenchCall[];
}

function builtin(name: string): BuiltinTool {
  const tool = BUILTIN_TOOLS.find((t) => t.name === name);
  if (tool === undefined) throw new Error(`no built-in tool ${name}`);
  return tool;
}

const EXEC_TRUE: BenchCall = {
  tool: builtin('exec'),
  input: { command: ['true'] },
  describe: 'exec {"command":["true"]}',
  check: (exitCode) => {
    if (exitCode !== 0) throw new Error(`exec true exited ${exitCode}`);
  },
};

const READ_SMALL: BenchCall = {
  tool: builtin('read_file'),
  input: { path: `/workspace/${FILE_NAME}` },
  describe: `read_file {"path":"/workspace/${FILE_NAME}"} (${FILE_CONTENT.length} bytes)`,
  check: (exitCode, stdout) => {
    const reply = JSON.parse(stdout.toString('utf8')) as { content?: unknown };
    if (exitCode !== 0 || reply.content !== FILE_CONTENT) {
      throw new Error(`read_file: exit ${exitCode}, stdout ${stdout.toString('utf8')}`);
    }
  },
};

function workloads(names: readonly string[]): Workload[] {
  return names.map((name) => {
    if (name === 'exec') return { name, describe: EXEC_TRUE.describe, calls: [EXEC_TRUE] };
    if (name === 'read_file') return { name, describe: READ_SMALL.describe, calls: [READ_SMALL] };
    if (name === 'mixed') {
      return {
        name,
        describe: `mixed: ${EXEC_TRUE.describe} and ${READ_SMALL.describe} in turn`,
        calls: [EXEC_TRUE, READ_SMALL],
      };
    }
    throw new Error(`BENCH_TOOLS: '${name}' is not one of exec, read_file, mixed`);
  });
}

/** Call i of a workload's sample. */
function nth<T>(calls: readonly T[], i: number): T {
  const call = calls[i % calls.length];
  if (call === undefined) throw new Error('unreachable: a workload without calls');
  return call;
}

function cpuMs(u: NodeJS.CpuUsage): number {
  return (u.user + u.system) / 1000;
}

/** Wall time and this process's CPU time of each call. */
class Meter {
  readonly #wall: number[] = [];
  readonly #cpu: number[] = [];

  async time<T>(f: () => Promise<T>): Promise<T> {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    try {
      return await f();
    } finally {
      this.#wall.push(performance.now() - t0);
      this.#cpu.push(cpuMs(process.cpuUsage(c0)));
    }
  }

  /** The calls after the first `skip`; the first call's time plus `startMs` apart. */
  sample(skip: number, startMs: number): Sample {
    return {
      calls: this.#wall.slice(skip),
      cpu: this.#cpu.slice(skip),
      firstMs: startMs + (this.#wall[0] ?? Number.NaN),
    };
  }
}

/** Stamps the clock (and the engine time so far) at every model request. */
class TimedGateway implements ModelGateway {
  readonly adapter: string;
  readonly route: Readonly<Record<string, string>>;
  readonly model: string;
  readonly counting: ModelGateway['counting'];
  readonly #inner: ModelGateway;
  readonly #stamp: () => void;

  constructor(inner: ModelGateway, stamp: () => void) {
    this.#inner = inner;
    this.#stamp = stamp;
    this.adapter = inner.adapter;
    this.route = inner.route;
    this.model = inner.model;
    this.counting = inner.counting;
  }

  countInputTokens(request: ModelRequest, signal: AbortSignal): Promise<number | undefined> {
    return this.#inner.countInputTokens(request, signal);
  }

  complete(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
    this.#stamp();
    return this.#inner.complete(request, signal);
  }
}

/** Sums the time spent inside container calls (create, start, exec, wait, kill, remove). */
class EngineClock {
  ms = 0;
  async time<T>(f: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await f();
    } finally {
      this.ms += performance.now() - t0;
    }
  }
}

class TimedStarted implements StartedContainer {
  readonly #inner: StartedContainer;
  readonly #clock: EngineClock;
  readonly id: string;
  readonly name: string;

  constructor(inner: StartedContainer, clock: EngineClock) {
    this.#inner = inner;
    this.#clock = clock;
    this.id = inner.id;
    this.name = inner.name;
  }

  wait(signal?: AbortSignal): Promise<ContainerExit> {
    return this.#clock.time(() => this.#inner.wait(signal));
  }

  kill(signal?: string): Promise<void> {
    return this.#clock.time(() => this.#inner.kill(signal));
  }

  running(signal?: AbortSignal): Promise<boolean> {
    return this.#clock.time(() => this.#inner.running(signal));
  }

  exec(argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
    return this.#clock.time(() => this.#inner.exec(argv, options));
  }

  resize(size: TerminalSize, signal?: AbortSignal): Promise<void> {
    return this.#clock.time(() => this.#inner.resize(size, signal));
  }

  remove(): Promise<void> {
    return this.#clock.time(() => this.#inner.remove());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.remove();
  }
}

class TimedCreated implements CreatedContainer {
  readonly #inner: CreatedContainer;
  readonly #clock: EngineClock;
  readonly id: string;
  readonly name: string;

  constructor(inner: CreatedContainer, clock: EngineClock) {
    this.#inner = inner;
    this.#clock = clock;
    this.id = inner.id;
    this.name = inner.name;
  }

  attach(signal?: AbortSignal): Promise<AttachedOutput> {
    return this.#clock.time(() => this.#inner.attach(signal));
  }

  async start(signal?: AbortSignal): Promise<StartedContainer> {
    return new TimedStarted(await this.#clock.time(() => this.#inner.start(signal)), this.#clock);
  }

  remove(): Promise<void> {
    return this.#clock.time(() => this.#inner.remove());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.remove();
  }
}

/** The runtime handed to executeAgentRun: DockerRuntime, with container calls timed. */
class TimedRuntime implements ContainerRuntime {
  readonly #inner: ContainerRuntime;
  readonly clock = new EngineClock();

  constructor(inner: ContainerRuntime) {
    this.#inner = inner;
  }

  async createContainer(spec: ContainerSpec, signal?: AbortSignal): Promise<CreatedContainer> {
    return new TimedCreated(
      await this.clock.time(() => this.#inner.createContainer(spec, signal)),
      this.clock,
    );
  }

  ping(signal?: AbortSignal): Promise<void> {
    return this.#inner.ping(signal);
  }
  createIsolatedNetwork(
    name: string,
    labels: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): Promise<NetworkFacts> {
    return this.#inner.createIsolatedNetwork(name, labels, signal);
  }
  createGuard(spec: GuardSpec, signal?: AbortSignal): Promise<CreatedGuard> {
    return this.#inner.createGuard(spec, signal);
  }
  facts(signal?: AbortSignal): Promise<EngineFacts> {
    return this.#inner.facts(signal);
  }
  collectUsage(usageGroup: string, signal?: AbortSignal): Promise<RunResourceUsage> {
    return this.#inner.collectUsage(usageGroup, signal);
  }
  version(signal?: AbortSignal): Promise<{ serverVersion: string; apiVersion: string }> {
    return this.#inner.version(signal);
  }
  inspectImage(ref: string, signal?: AbortSignal): Promise<ImageFacts | undefined> {
    return this.#inner.inspectImage(ref, signal);
  }
  listLabelled(label: string, signal?: AbortSignal): Promise<LabelledObject[]> {
    return this.#inner.listLabelled(label, signal);
  }
  removeObject(object: LabelledObject, signal?: AbortSignal): Promise<void> {
    return this.#inner.removeObject(object, signal);
  }
  freezeLabelled(label: string, value: string, signal?: AbortSignal): Promise<FrozenContainers> {
    return this.#inner.freezeLabelled(label, value, signal);
  }
  importImage(
    rootfs: Readable,
    ref: { repo: string; tag: string },
    changes: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    return this.#inner.importImage(rootfs, ref, changes, signal);
  }
  pullImage(ref: string, onProgress: ProgressListener, signal?: AbortSignal): Promise<void> {
    return this.#inner.pullImage(ref, onProgress, signal);
  }
  buildImage(
    context: Readable,
    options: BuildOptions,
    onProgress: ProgressListener,
    signal?: AbortSignal,
  ): Promise<void> {
    return this.#inner.buildImage(context, options, onProgress, signal);
  }
  listImages(label: string, signal?: AbortSignal): Promise<ImageSummary[]> {
    return this.#inner.listImages(label, signal);
  }
  removeImage(ref: string, signal?: AbortSignal): Promise<void> {
    return this.#inner.removeImage(ref, signal);
  }
}

async function main(): Promise<number> {
  const rounds = intFromEnv('BENCH_ROUNDS', 4, 1);
  const warmup = intFromEnv('BENCH_WARMUP', 1, 0);
  const perRunCalls = intFromEnv('BENCH_PER_RUN_CALLS', 10, 2);
  const perCallCalls = intFromEnv('BENCH_PER_CALL_CALLS', 3, 1);
  const profileName = process.env.BENCH_PROFILE ?? 'untrusted-repo';
  const tools = workloads(
    (process.env.BENCH_TOOLS ?? 'exec')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );
  const callsOf = (lifetime: ToolLifetime): number =>
    lifetime === 'per-run' ? perRunCalls : perCallCalls;
  const tag = `${process.pid}-${Date.now().toString(36)}`;

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cfh-bench-tools-'));
  const workspace = path.join(tmp, 'workspace');
  const artifactRoot = path.join(tmp, 'runs');
  mkdirSync(workspace);
  writeFileSync(path.join(workspace, FILE_NAME), FILE_CONTENT, { mode: 0o644 });

  const env: CfhEnvironment = { ...readEnvironment(), artifactRoot };
  const docker = dockerClient(env);
  const runtime = new DockerRuntime({ dockerHost: env.dockerHost });
  const logger = createLogger('silent');
  const owner: OwnerIdentity = currentOwner();
  const host = currentHostIdentity();

  const controller = new AbortController();
  process.once('SIGINT', () => {
    controller.abort(new CancelRequest('SIGINT'));
  });
  const signal = controller.signal;
  const interrupted = (): boolean => signal.aborted;

  // Every container name this process asks for and every cfh run it plans, for the check.
  const names = new Set<string>();
  const runIds = new Set<string>();
  let seq = 0;
  const nextName = (kind: string): string => {
    const name = `${NAME_PREFIX}${kind}-${tag}-${seq++}`;
    names.add(name);
    return name;
  };

  const plan = (lifetime: ToolLifetime): RunPlan => {
    const n = callsOf(lifetime);
    const options: SandboxRunOptions = {
      profile: profileName,
      workspace,
      artifactRoot,
      toolLifetime: lifetime,
      // N tool turns and the final one.
      budgets: { maxModelTurns: String(n + 1), maxToolCalls: String(n) },
      command: ['sleep', 'infinity'],
    };
    const p = planSandboxRun(options, env, host, owner);
    runIds.add(p.runId);
    return p;
  };

  // What every series sends per call, from the tool and a plan, as the loop derives it.
  let reference: RunPlan;
  let engine: Docker.DockerVersion;
  try {
    reference = plan('per-run');
    for (const c of tools.flatMap((w) => w.calls)) {
      if (!reference.profile.tools.includes(c.tool.name)) {
        throw new Error(
          `profile ${profileName} does not list the tool ${c.tool.name} (tools: ${reference.profile.tools.join(', ')})`,
        );
      }
    }
    engine = await docker.version();
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw error;
  }
  const image = reference.spec.image;
  writePlanHosts(reference.spec);
  const capMs =
    reference.profile.toolTimeoutSeconds === undefined
      ? Number.POSITIVE_INFINITY
      : reference.profile.toolTimeoutSeconds * 1000;
  const callOf = (c: BenchCall) => {
    const limit = Math.min(
      c.tool.resultSizeLimitChars,
      reference.profile.budgets.maxToolResultChars,
    );
    const { argv, stdin } = c.tool.command(c.input, {
      maxChars: limit,
      mounts: reference.spec.mounts.map((m) => m.target),
    });
    const timeoutMs = Math.min(c.tool.timeoutMs, capMs);
    return {
      call: c,
      kind: c.tool.runsIn,
      argv,
      stdin,
      timeoutMs,
      maxOutputBytes: c.tool.resultSizeLimitChars * 4,
      // The raw series runs the tool's command bare: what cfh adds to it, its call
      // supervisor included (tools/call-supervisor.ts), is what the ratios measure.
      bare: argv,
      // The container the tool runs in (the workload's for exec, the file-tool one for the
      // file tools) and where its exec starts, as ToolContainer derives them.
      spec: toolContainerSpec(reference.spec, c.tool.runsIn),
    };
  };
  // The raw series' create request: the tool container's, with the bench's label instead
  // of cfh's owner labels (so cfh reap never sees it) and a bench name.
  const rawRequest = (spec: ContainerSpec): Docker.ContainerCreateOptions => ({
    ...toCreateOptions(spec),
    name: nextName('raw'),
    Labels: { [BENCH_LABEL]: tag },
  });

  console.log('cfh tool-call bench');
  console.log(
    `  node ${process.version}, engine ${engine.Version} (API ${engine.ApiVersion}), ${os.cpus().length} cpus, ${os.platform()} ${os.release()}`,
  );
  console.log(
    `  image ${image}, profile ${profileName} (runtime ${reference.profile.runtime}, workspace ${reference.profile.workspace.mode}, network ${reference.profile.network.mode})`,
  );
  console.log(`  tools: ${tools.map((w) => w.describe).join('; ')}`);
  for (const c of new Set(tools.flatMap((w) => w.calls))) {
    const { bare, stdin, kind } = callOf(c);
    console.log(
      `  ${c.tool.name} argv sent (${kind} container): ${bare.slice(0, 6).join(' ')}${bare.length > 6 ? ' …' : ''}${stdin === undefined ? '' : ' (+ JSON on stdin)'}`,
    );
  }
  console.log(
    `  rounds ${rounds} (+${warmup} warm-up) per tool; per sample ${perRunCalls} calls (per-run), ${perCallCalls} calls (per-call)`,
  );
  console.log(`  series order rotated by one per round: ${SERIES.join(', ')}`);
  console.log(`  workspace + artifact root under ${tmp}`);
  console.log('');

  async function rawSample(w: Workload, lifetime: ToolLifetime): Promise<Sample> {
    const n = callsOf(lifetime);
    const calls = w.calls.map(callOf);
    const meter = new Meter();
    if (lifetime === 'per-run') {
      // One container per kind, started at its first call, as the per-run executor does.
      const containers = new Map<string, Docker.Container>();
      try {
        for (let i = 0; i < n; i++) {
          const call = nth(calls, i);
          const r = await meter.time(async () => {
            let container = containers.get(call.kind);
            if (container === undefined) {
              container = await docker.createContainer(rawRequest(call.spec));
              containers.set(call.kind, container);
              await container.start();
            }
            return rawExec(container, call.bare, call.stdin, call.spec.workingDir);
          });
          call.call.check(r.exitCode, r.stdout);
        }
        return meter.sample(1, 0);
      } finally {
        for (const c of containers.values()) await c.remove({ force: true, v: true });
      }
    }
    for (let i = 0; i < n; i++) {
      const call = nth(calls, i);
      const r = await meter.time(async () => {
        const container = await docker.createContainer(rawRequest(call.spec));
        try {
          await container.start();
          return await rawExec(container, call.bare, call.stdin, call.spec.workingDir);
        } finally {
          await container.remove({ force: true, v: true });
        }
      });
      call.call.check(r.exitCode, r.stdout);
    }
    return meter.sample(0, 0);
  }

  async function containerSample(w: Workload, lifetime: ToolLifetime): Promise<Sample> {
    const n = callsOf(lifetime);
    const calls = w.calls.map(callOf);
    const spec = plan(lifetime).spec;
    const optionsOf = (call: (typeof calls)[number]) => ({
      stdin: call.stdin,
      timeoutMs: call.timeoutMs,
      maxOutputBytes: call.maxOutputBytes,
      signal,
    });
    const meter = new Meter();
    if (lifetime === 'per-run') {
      const containers = new Map<string, ToolContainer>();
      try {
        for (let i = 0; i < n; i++) {
          const call = nth(calls, i);
          const r = await meter.time(async () => {
            let container = containers.get(call.kind);
            if (container === undefined) {
              names.add(toolContainerName(spec, call.kind));
              container = await ToolContainer.start(runtime, spec, call.kind, signal);
              containers.set(call.kind, container);
            }
            return container.run(call.argv, optionsOf(call));
          });
          call.call.check(r.exitCode, r.stdout);
        }
        return meter.sample(1, 0);
      } finally {
        for (const c of containers.values()) await c.remove();
      }
    }
    for (let i = 0; i < n; i++) {
      const call = nth(calls, i);
      const suffix = `-c${i + 1}`;
      names.add(toolContainerName(spec, call.kind, suffix));
      const r = await meter.time(async () => {
        const container = await ToolContainer.start(runtime, spec, call.kind, signal, suffix);
        try {
          return await container.run(call.argv, optionsOf(call));
        } finally {
          await container.remove();
        }
      });
      call.call.check(r.exitCode, r.stdout);
    }
    return meter.sample(0, 0);
  }

  async function harnessSample(w: Workload, lifetime: ToolLifetime): Promise<Sample> {
    const n = callsOf(lifetime);
    const script = Script.parse({
      model: 'scripted',
      turns: [
        ...Array.from({ length: n }, (_, i) => {
          const call = nth(w.calls, i);
          return { tool_calls: [{ name: call.tool.name, input: call.input }] };
        }),
        { text: 'done' },
      ],
    });
    const t0 = performance.now();
    const p = plan(lifetime);
    const timed = new TimedRuntime(runtime);
    const stamps: { at: number; engine: number; cpu: NodeJS.CpuUsage }[] = [];
    const gateway = new TimedGateway(new ScriptedGateway(script, 'bench/tool-call.ts'), () => {
      stamps.push({ at: performance.now(), engine: timed.clock.ms, cpu: process.cpuUsage() });
    });
    const outcome = await executeAgentRun(
      p,
      {
        slots: { prompt: `make ${n} calls: ${w.name}` },
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
        runtime: timed,
        logger,
        owner,
        gateway,
        hostProcessDir: env.hostProcessDir,
        writtenLabelsDir: env.writtenLabelsDir,
        draftRoot: env.draftRoot,
      },
      signal,
    );
    const wallMs = performance.now() - t0;
    if (
      outcome.status !== 'completed' ||
      outcome.toolCalls?.total !== n ||
      outcome.toolCalls.byStatus.success !== n ||
      stamps.length !== n + 1
    ) {
      throw new Error(
        `agent run ${outcome.runId}: ${outcome.status} (${outcome.terminalReason}), tool calls ${JSON.stringify(outcome.toolCalls)}, ${stamps.length} model requests`,
      );
    }
    const kinds = new Set(Array.from({ length: n }, (_, i) => nth(w.calls, i).tool.runsIn)).size;
    // Per-call takes its containers from the warm pool (pool.size, tool-pool.ts), which also
    // leaves the warm ones it made: at least one per call, every one removed.
    checkEvidence(outcome.artifactDir, lifetime === 'per-run' ? kinds : n, n, lifetime);
    const gaps: number[] = [];
    const inEngine: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < n; i++) {
      const a = stamps[i];
      const b = stamps[i + 1];
      if (a === undefined || b === undefined) throw new Error('unreachable: stamps');
      gaps.push(b.at - a.at);
      inEngine.push(b.engine - a.engine);
      cpu.push(cpuMs(b.cpu) - cpuMs(a.cpu));
    }
    const loopMs = gaps.reduce((s, x) => s + x, 0);
    const skip = lifetime === 'per-run' ? 1 : 0;
    return {
      calls: gaps.slice(skip),
      cpu: cpu.slice(skip),
      engine: inEngine.slice(skip),
      firstMs: gaps[0] ?? Number.NaN,
      wallMs,
      fixedMs: wallMs - loopMs,
    };
  }

  const runSeries = (w: Workload, key: SeriesKey): Promise<Sample> => {
    const [lifetime, layer] = key.split('/') as [ToolLifetime, Layer];
    if (layer === 'raw') return rawSample(w, lifetime);
    if (layer === 'container') return containerSample(w, lifetime);
    return harnessSample(w, lifetime);
  };

  const results: ToolResults[] = [];
  let failure: Error | undefined;
  let leftoverCount: number;
  const started = performance.now();
  try {
    for (const w of tools) {
      const samples = Object.fromEntries(SERIES.map((k) => [k, [] as Sample[]])) as Record<
        SeriesKey,
        Sample[]
      >;
      for (let round = 0; round < warmup + rounds && !interrupted(); round++) {
        const measured = round >= warmup;
        const order = SERIES.map((_, i) => SERIES[(i + round) % SERIES.length] as SeriesKey);
        const parts = new Map<SeriesKey, string>();
        for (const key of order) {
          const s = await runSeries(w, key);
          if (measured) samples[key].push(s);
          parts.set(key, median(s.calls).toFixed(1));
        }
        const label = measured ? `round ${round - warmup + 1}/${rounds}` : `warm-up ${round + 1}`;
        console.error(
          `  ${w.name} ${label.padEnd(13)} p50 per call, ms: ` +
            LIFETIMES.map(
              (l) => `${l} ${LAYERS.map((x) => `${x} ${parts.get(`${l}/${x}`) ?? '-'}`).join(' ')}`,
            ).join(' | '),
        );
      }
      if (interrupted()) throw new Error('interrupted');
      results.push({ workload: w, samples });
    }
  } catch (error) {
    failure = interrupted()
      ? new Error('interrupted')
      : error instanceof Error
        ? error
        : new Error(String(error));
  } finally {
    leftoverCount = await checkLeftovers(docker, { tag, names, runIds });
    rmSync(tmp, { recursive: true, force: true });
  }
  if (failure !== undefined) throw failure;

  report({
    rounds,
    warmup,
    perRunCalls,
    perCallCalls,
    profile: profileName,
    image,
    engine: `${engine.Version} (API ${engine.ApiVersion})`,
    results,
    elapsedS: (performance.now() - started) / 1000,
    leftovers: leftoverCount,
  });
  return leftoverCount === 0 ? 0 : 1;
}

/** The run's evidence holds what N calls must leave: an intact chain, one record per call. */
function checkEvidence(dir: string, containers: number, n: number, lifetime: ToolLifetime): void {
  const body = readFileSync(path.join(dir, RUN_FILES.events), 'utf8');
  const chain = verifyEventChain(body);
  const types = body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { type: string }).type);
  const count = (t: string): number => types.filter((x) => x === t).length;
  const problems = [
    chain.ok ? undefined : `event chain: ${chain.problem ?? 'broken'}`,
    count('tool_executed') === n ? undefined : `${count('tool_executed')} tool_executed`,
    count('permission_decision') === n
      ? undefined
      : `${count('permission_decision')} permission_decision`,
    count('tool_container_started') === containers ||
    (lifetime === 'per-call' && count('tool_container_started') >= containers)
      ? undefined
      : `${count('tool_container_started')} tool_container_started`,
    count('tool_container_removed') === count('tool_container_started')
      ? undefined
      : `${count('tool_container_removed')} tool_container_removed`,
    count('run_finished') === 1 ? undefined : `${count('run_finished')} run_finished`,
  ].filter((x) => x !== undefined);
  if (problems.length > 0) throw new Error(`evidence of ${dir}: ${problems.join('; ')}`);
}

interface ToolResults {
  readonly workload: Workload;
  readonly samples: Record<SeriesKey, readonly Sample[]>;
}

interface Results {
  readonly rounds: number;
  readonly warmup: number;
  readonly perRunCalls: number;
  readonly perCallCalls: number;
  readonly profile: string;
  readonly image: string;
  readonly engine: string;
  readonly results: readonly ToolResults[];
  readonly elapsedS: number;
  readonly leftovers: number;
}

function byLifetime<T>(f: (l: ToolLifetime) => T): Record<ToolLifetime, T> {
  return { 'per-run': f('per-run'), 'per-call': f('per-call') };
}

function report(r: Results): void {
  const json: Record<string, unknown> = {};
  for (const { workload, samples } of r.results) {
    const name = workload.name;
    const all = (key: SeriesKey, f: (s: Sample) => readonly number[]): number[] =>
      samples[key].flatMap((s) => [...f(s)]);
    const perCall = Object.fromEntries(
      SERIES.map((k) => [k, summarize(all(k, (s) => s.calls))]),
    ) as Record<SeriesKey, Summary>;
    const cpu = Object.fromEntries(
      SERIES.map((k) => [k, summarize(all(k, (s) => s.cpu))]),
    ) as Record<SeriesKey, Summary>;

    console.log('');
    console.log(
      `${workload.describe}: per tool call, ms (${r.rounds} rounds after ${r.warmup} warm-up;` +
        ` per-run: calls 2..${r.perRunCalls} of each sample, per-call: all ${r.perCallCalls});` +
        ` cpu = this process's CPU time (user + system) during the call`,
    );
    table(
      [
        'series',
        'n',
        'p50',
        'p90',
        'mean',
        'min',
        'max',
        'p50/raw',
        'mean/raw',
        'cpu p50',
        'cpu mean',
      ],
      SERIES.map((key) => {
        const s = perCall[key];
        const base = perCall[`${key.split('/')[0] as ToolLifetime}/raw`];
        return [
          LABELS[key],
          String(s.n),
          fmt(s.p50),
          fmt(s.p90),
          fmt(s.mean),
          fmt(s.min),
          fmt(s.max),
          (s.p50 / base.p50).toFixed(3),
          (s.mean / base.mean).toFixed(3),
          fmt(cpu[key].p50),
          fmt(cpu[key].mean),
        ];
      }),
    );

    // The harness's gaps split into time inside the runtime's container calls and the rest.
    const split = byLifetime((l) => {
      const key: SeriesKey = `${l}/harness`;
      const gaps = all(key, (s) => s.calls);
      const inEngine = all(key, (s) => s.engine ?? []);
      const own = gaps.map((g, i) => g - (inEngine[i] ?? Number.NaN));
      return { gap: summarize(gaps), engine: summarize(inEngine), own: summarize(own) };
    });

    const ratios = byLifetime((l) => {
      const raw = perCall[`${l}/raw`];
      const container = perCall[`${l}/container`];
      const harness = perCall[`${l}/harness`];
      return {
        harnessOverRawP50: round3(harness.p50 / raw.p50),
        harnessOverRawMean: round3(harness.mean / raw.mean),
        containerOverRawP50: round3(container.p50 / raw.p50),
        harnessOverContainerP50: round3(harness.p50 / container.p50),
        addedOverRawMsP50: round1(harness.p50 - raw.p50),
        addedOverRawMsMean: round1(harness.mean - raw.mean),
        addedOverContainerMsP50: round1(harness.p50 - container.p50),
        ownMsP50: round1(split[l].own.p50),
        ownMsMean: round1(split[l].own.mean),
        cpuAddedOverRawMsP50: round1(cpu[`${l}/harness`].p50 - cpu[`${l}/raw`].p50),
        cpuAddedOverContainerMsP50: round1(cpu[`${l}/harness`].p50 - cpu[`${l}/container`].p50),
      };
    });

    console.log('');
    for (const l of LIFETIMES) {
      const x = ratios[l];
      console.log(
        `${l.padEnd(8)} harness/raw p50 ${x.harnessOverRawP50.toFixed(3)}  mean ${x.harnessOverRawMean.toFixed(3)};` +
          ` adds ${fmt(x.addedOverRawMsP50)} ms per call at p50 (${fmt(x.addedOverRawMsMean)} mean) over raw,` +
          ` ${fmt(x.addedOverContainerMsP50)} over ToolContainer; harness's own code ${fmt(x.ownMsP50)} ms per call at p50 (${fmt(x.ownMsMean)} mean);` +
          ` CPU +${fmt(x.cpuAddedOverRawMsP50)} ms over raw, +${fmt(x.cpuAddedOverContainerMsP50)} over ToolContainer at p50`,
      );
    }

    console.log('');
    console.log(
      `${name}: inside a harness call, ms (the gap between model requests = time in the runtime's container calls + the harness's own: loop, validation, mediator, evidence)`,
    );
    table(
      ['lifetime', 'part', 'p50', 'p90', 'mean', 'min', 'max'],
      LIFETIMES.flatMap((l) => {
        const s = split[l];
        const row = (part: string, x: Summary): string[] => [
          l,
          part,
          fmt(x.p50),
          fmt(x.p90),
          fmt(x.mean),
          fmt(x.min),
          fmt(x.max),
        ];
        return [
          row('whole call (gap)', s.gap),
          row(
            l === 'per-run' ? 'in runtime: exec' : 'in runtime: create/start/exec/remove',
            s.engine,
          ),
          row("harness's own", s.own),
        ];
      }),
    );

    // Per sample: the harness's fixed cost, and the first call of a per-run sample.
    const med = (key: SeriesKey, f: (s: Sample) => number | undefined): number =>
      median(samples[key].map((s) => f(s) ?? Number.NaN));
    const fixed = {
      perRunWallMs: med('per-run/harness', (s) => s.wallMs),
      perRunFixedMs: med('per-run/harness', (s) => s.fixedMs),
      perCallWallMs: med('per-call/harness', (s) => s.wallMs),
      perCallFixedMs: med('per-call/harness', (s) => s.fixedMs),
      firstCallRawMs: med('per-run/raw', (s) => s.firstMs),
      firstCallContainerMs: med('per-run/container', (s) => s.firstMs),
      firstCallHarnessMs: med('per-run/harness', (s) => s.firstMs),
    };
    console.log('');
    console.log(`${name}: per sample, medians, ms`);
    table(
      ['what', 'ms', 'contains'],
      [
        [
          `per-run  harness run (${r.perRunCalls} calls)`,
          fmt(fixed.perRunWallMs),
          'planSandboxRun + executeAgentRun',
        ],
        [
          '  of which fixed',
          fmt(fixed.perRunFixedMs),
          'wall − the N call gaps: preflight, run dir, snapshot, final turn, container removal, report',
        ],
        [
          `per-call harness run (${r.perCallCalls} calls)`,
          fmt(fixed.perCallWallMs),
          'planSandboxRun + executeAgentRun',
        ],
        ['  of which fixed', fmt(fixed.perCallFixedMs), 'as above, no container outside the calls'],
        [
          'per-run  first call, raw',
          fmt(fixed.firstCallRawMs),
          'container create + start + first exec',
        ],
        [
          'per-run  first call, ToolContainer',
          fmt(fixed.firstCallContainerMs),
          'ToolContainer.start + first run',
        ],
        [
          'per-run  first call, harness',
          fmt(fixed.firstCallHarnessMs),
          'first gap: container start + call + tool_container_started',
        ],
      ],
    );

    json[name] = {
      input: workload.calls.map((c) => c.input),
      perCall: Object.fromEntries(SERIES.map((k) => [k, rounded(perCall[k])])),
      cpuPerCall: Object.fromEntries(SERIES.map((k) => [k, rounded(cpu[k])])),
      ratios,
      harnessSplit: Object.fromEntries(
        LIFETIMES.map((l) => [
          l,
          {
            gap: rounded(split[l].gap),
            engine: rounded(split[l].engine),
            own: rounded(split[l].own),
          },
        ]),
      ),
      perSampleMedianMs: Object.fromEntries(Object.entries(fixed).map(([k, v]) => [k, round1(v)])),
    };
  }

  console.log('');
  console.log(`elapsed ${r.elapsedS.toFixed(1)} s`);
  console.log(
    JSON.stringify({
      bench: 'tool-call',
      rounds: r.rounds,
      warmup: r.warmup,
      perRunCalls: r.perRunCalls,
      perCallCalls: r.perCallCalls,
      profile: r.profile,
      image: r.image,
      engine: r.engine,
      node: process.version,
      unit: 'ms',
      tools: json,
      leftovers: r.leftovers,
    }),
  );
}

runBench(main);
