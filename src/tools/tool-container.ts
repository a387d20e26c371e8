// The containers a run's tools execute in. Two kinds, both derived from the run's
// ContainerSpec, so the mounts and modes, user, seccomp filter, limits and owner labels are
// the sandbox's own (the file-tool container's image is cfh's own sandbox image, never the
// workload's: engine/agent/agent-tool-setup.ts toolSpecs), and paths are resolved by the kernel inside, never on the
// host. Each idles under its init process; each tool call is an exec of the call supervisor
// (call-supervisor.ts), which runs the command in a session the call cannot leave, ends it
// at its deadline, and kills that whole session when cfh stops the call (AH-LIFE-3).
//
//   workload  (cfh-tools-<run>)  where `exec` runs the model's programs: the profile's env,
//             the run's network posture, working directory /workspace.
//   file-tool (cfh-files-<run>)  where the file tools' helpers run, and nothing else: no
//             model-controlled process ever runs in it, so none can reach a helper through
//             /proc/<pid>/fd (its own PID namespace) or through its /tmp. Its env is cfh's
//             alone (no profile env: no PYTHON*, LD_*, BASH_ENV, PATH into the workspace),
//             its network is always none, and every helper starts in / from an absolute path
//             on the image's read-only root, which no mount may cover (AH-CONT-1/2).
import { setTimeout as sleep } from 'node:timers/promises';
import { ContainmentError, EngineError } from '../errors.js';
import type { ContainerSpec } from '../substrate/container-spec.js';
import type { ContainerRuntime, ExecResult, StartedContainer } from '../substrate/runtime.js';
import {
  STOP_BOUND_MS,
  STOP_WORD,
  printed,
  readReport,
  reportBytes,
  supervisedExec,
  type CallStop,
  type SupervisorReport,
} from './call-supervisor.js';

export type ToolContainerKind = 'workload' | 'file-tool';

export interface ToolExecution extends ExecResult {
  readonly timedOut: boolean;
  readonly durationMs: number;
  readonly containerId: string;
  /** The call ran out of time and was stopped: how (none when it ended on its own). */
  readonly stop?: CallStop | undefined;
}

export interface ToolCallOptions {
  stdin?: Buffer | undefined;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal | undefined;
  /**
   * Told how the call was stopped (its deadline, `signal`, its supervisor lost), once
   * nothing of it runs any more and before the call returns or throws: the evidence has the
   * stop before the call's outcome is reported (AH-LIFE-3, AH-INT-5).
   */
  onStop?: ((stop: CallStop) => Promise<void>) | undefined;
}

/** Binaries a tool container runs on its own account, by absolute path on the image root. */
const SLEEP_BINARY = '/usr/bin/sleep';

/**
 * How long past its deadline and its stop a call may go before cfh says the stop word
 * itself. The supervisor ends the call at its deadline; this holds whatever runs inside.
 */
const BACKSTOP_GRACE_MS = 5_000;

/** How long past its own stop bound cfh waits for the supervisor's report after the word. */
const STOP_GRACE_MS = 3_000;

/** How long cfh waits for a container it killed to stop. */
const KILL_WAIT_MS = 10_000;

/**
 * The file-tool container's whole environment. Nothing here names a place the sandbox can
 * write; the helpers need no more (python3 runs isolated, ignoring its environment anyway).
 */
export const FILE_TOOL_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/bin:/bin',
  LANG: 'C.UTF-8',
  HOME: '/nonexistent',
};

const NAME_PREFIX: Readonly<Record<ToolContainerKind, string>> = {
  workload: 'cfh-tools-',
  'file-tool': 'cfh-files-',
};

/** `cfh-tools-<run>` / `cfh-files-<run>`; `suffix` tells per-call containers apart (`-c3`). */
export function toolContainerName(
  spec: ContainerSpec,
  kind: ToolContainerKind,
  suffix = '',
): string {
  return `${spec.name.replace(/^cfh-/, NAME_PREFIX[kind])}${suffix}`;
}

/**
 * The run's spec without the mounts at `targets`: the workload container of a CFC run keeps
 * out each mount planning withheld (AH-CFC-10, cfc/label-map.ts), so exec can neither read
 * it nor carry it to a sink; the file-tool container keeps every mount (its results are
 * labelled one by one).
 */
export function withoutMounts(spec: ContainerSpec, targets: readonly string[]): ContainerSpec {
  if (targets.length === 0) return spec;
  // With each mount nested in one withheld (cfh's read-only mounts over host-obeyed paths:
  // sandbox/host-obeyed-mounts.ts): left alone, the engine would make its mount point.
  const under = (target: string): boolean =>
    targets.some((t) => target === t || target.startsWith(`${t}/`));
  return { ...spec, mounts: spec.mounts.filter((m) => !under(m.target)) };
}

/**
 * The run's spec without the environment values `names`: the workload container of a CFC
 * run keeps out each value planning withheld (AH-CFC-10, cfc/env-labels.ts); the file-tool
 * container never has them (FILE_TOOL_ENV).
 */
export function withoutEnv(spec: ContainerSpec, names: readonly string[]): ContainerSpec {
  if (names.length === 0) return spec;
  const out = new Set(names);
  return {
    ...spec,
    env: Object.fromEntries(Object.entries(spec.env).filter(([name]) => !out.has(name))),
  };
}

/** The container of `kind`, derived from the run's spec; only what the kind needs differs. */
export function toolContainerSpec(
  spec: ContainerSpec,
  kind: ToolContainerKind,
  suffix = '',
): ContainerSpec {
  const idle: ContainerSpec = {
    ...spec,
    name: toolContainerName(spec, kind, suffix),
    command: [SLEEP_BINARY, 'infinity'],
  };
  if (kind === 'workload') return idle;
  return {
    ...idle,
    env: FILE_TOOL_ENV,
    // The run's working directory, the workspace, as for every executor (AH-CONT-6): the
    // helpers never resolve through it (python3 -I keeps it off the import path, grep is
    // given absolute operands), so nothing there can change what they run.
    networkMode: 'none',
    // With no network runsc is its `runsc` registration (`--network=none`), never
    // runsc-host, whatever the workload's posture needs.
    engineRuntime: spec.runtime,
  };
}

export class ToolContainer implements AsyncDisposable {
  readonly kind: ToolContainerKind;
  readonly #container: StartedContainer;
  /** Where every exec starts: the run's working directory, /workspace, for both kinds. */
  readonly #workingDir: string;
  /** Every call's env: the kind's spec env (the profile's for the workload, cfh's for files). */
  readonly #env: Readonly<Record<string, string>>;
  /** Set once cfh killed the container to stop a call: no call runs in it after that. */
  #lost: EngineError | undefined;

  private constructor(
    kind: ToolContainerKind,
    container: StartedContainer,
    own: Pick<ContainerSpec, 'workingDir' | 'env'>,
  ) {
    this.kind = kind;
    this.#container = container;
    this.#workingDir = own.workingDir;
    this.#env = own.env;
  }

  get id(): string {
    return this.#container.id;
  }

  get name(): string {
    return this.#container.name;
  }

  /** `spec` is the run's; the container is its `kind` (toolContainerSpec). */
  static async start(
    runtime: ContainerRuntime,
    spec: ContainerSpec,
    kind: ToolContainerKind,
    signal?: AbortSignal,
    suffix = '',
  ): Promise<ToolContainer> {
    const own = toolContainerSpec(spec, kind, suffix);
    const created = await runtime.createContainer(own, signal);
    try {
      return new ToolContainer(kind, await created.start(signal), own);
    } catch (error) {
      await created.remove();
      throw error;
    }
  }

  /**
   * Runs one call under its supervisor. It ends on its own, or is stopped: at its deadline
   * by the supervisor, on `signal` by the word cfh says; either way its whole session is
   * killed and `onStop` told before this returns (a timeout) or throws (the signal's
   * reason). A supervisor that does not answer has its container killed instead.
   */
  async run(argv: readonly string[], options: ToolCallOptions): Promise<ToolExecution> {
    if (this.#lost !== undefined) throw this.#lost;
    const started = performance.now();
    const exec = supervisedExec({ ...options, argv, env: this.#env });
    const backstop = AbortSignal.timeout(options.timeoutMs + STOP_BOUND_MS + BACKSTOP_GRACE_MS);
    const stopping =
      options.signal === undefined ? backstop : AbortSignal.any([options.signal, backstop]);
    const stoppedAt = whenAborted(stopping);
    let report: SupervisorReport | undefined;
    /** What the supervisor itself said on stderr (a Python traceback, when it failed). */
    let said = '';
    try {
      const result = await this.#container.exec(exec.argv, {
        workingDir: this.#workingDir,
        env: exec.env,
        stdin: exec.stdin,
        maxOutputBytes: reportBytes(options.maxOutputBytes),
        signal: stopping,
        stopWord: { word: STOP_WORD, graceMs: STOP_BOUND_MS + STOP_GRACE_MS },
      });
      report = readReport(result.exitCode, result.stdout, result.stdoutTruncated);
      said = result.stderr.toString('utf8').slice(-500).trim();
    } catch (error) {
      // Before the word an engine failure is the engine's; after it the supervisor did not
      // answer in time.
      if (!stopping.aborted) throw error;
    }
    if (report === undefined) return this.#unanswered(options, stoppedAt(), backstop.aborted, said);
    if ('setup' in report) {
      throw new ContainmentError(
        'call_supervisor_failed',
        `the call supervisor could not confine a call in ${this.name}: ${report.setup}`,
        { containerId: this.id },
      );
    }
    let stop: CallStop | undefined;
    if (report.stopped !== null) {
      const { why, session, processes, ms, gone } = report.stopped;
      // The word without the caller's signal is cfh's backstop: the call's time was up.
      const reason = why === 'cancelled' && options.signal?.aborted !== true ? 'timeout' : why;
      const containerId = this.id;
      stop = { containerId, reason, method: 'session', session, processes, waitedMs: ms, gone };
      if (!gone) stop = await this.#killed(stop);
      await options.onStop?.(stop);
    }
    if (options.signal?.aborted === true) throw options.signal.reason;
    const stdout = printed(report.stdout);
    const stderr = printed(report.stderr);
    return {
      exitCode: report.exit ?? 137,
      stdout: stdout.bytes,
      stderr: stderr.bytes,
      stdoutTruncated: stdout.truncated,
      stderrTruncated: stderr.truncated,
      timedOut: report.timedOut || stop?.reason === 'timeout',
      durationMs: Math.round(performance.now() - started),
      containerId: this.id,
      stop,
    };
  }

  /**
   * The exec ended without a report. The container itself went away (removed, killed):
   * the run's containment failed (AH-TOOL-6). Otherwise the supervisor died or stopped
   * answering while its call may still run: the container is killed with everything in it
   * (fail closed), and the run fails unless the call was being cancelled anyway.
   */
  async #unanswered(
    options: ToolCallOptions,
    stoppedAt: number | undefined,
    pastBackstop: boolean,
    said: string,
  ): Promise<never> {
    if (await this.#stopping()) {
      options.signal?.throwIfAborted();
      throw new EngineError(
        'tool_container_lost',
        `tool container ${this.name} stopped during a call`,
        { details: { containerId: this.id } },
      );
    }
    const reason =
      options.signal?.aborted === true ? 'cancelled' : pastBackstop ? 'timeout' : 'supervisor_lost';
    const waitedMs = stoppedAt === undefined ? 0 : Math.round(performance.now() - stoppedAt);
    const stop = await this.#killed({
      containerId: this.id,
      reason,
      method: 'container',
      session: null,
      processes: null,
      waitedMs,
      gone: false,
    });
    await options.onStop?.(stop);
    options.signal?.throwIfAborted();
    throw new ContainmentError(
      'call_supervisor_failed',
      `the call supervisor in ${this.name} did not report${said === '' ? '' : ` (${said})`}; the container was killed to stop its call`,
      { containerId: this.id },
    );
  }

  /** Kills the container to stop a call (everything in it dies); no call runs in it again. */
  async #killed(stop: CallStop): Promise<CallStop> {
    this.#lost = new EngineError(
      'tool_container_lost',
      `tool container ${this.name} was killed to stop a call whose session could not be ended`,
      { details: { containerId: this.id } },
    );
    const t0 = performance.now();
    await this.#container.kill('SIGKILL').catch(() => undefined);
    let gone = false;
    while (!gone && performance.now() - t0 < KILL_WAIT_MS) {
      gone = !(await this.#container.running().catch(() => true));
      if (!gone) await sleep(100);
    }
    const waitedMs = stop.waitedMs + Math.round(performance.now() - t0);
    return { ...stop, method: 'container', waitedMs, gone };
  }

  /**
   * Whether the container is going away. A container being killed can still read as
   * running for a moment after its processes died, so it is asked for up to a second.
   */
  async #stopping(): Promise<boolean> {
    for (let i = 0; i < 10; i += 1) {
      if (!(await this.#container.running())) return true;
      await sleep(100);
    }
    return false;
  }

  /** Whether it still runs (a pooled container, before a call takes it). */
  running(signal?: AbortSignal): Promise<boolean> {
    return this.#container.running(signal);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#container.remove();
  }

  remove(): Promise<void> {
    return this.#container.remove();
  }
}

/** When `signal` aborted (performance.now()), once it has. */
function whenAborted(signal: AbortSignal): () => number | undefined {
  let at: number | undefined;
  if (signal.aborted) at = performance.now();
  else
    signal.addEventListener(
      'abort',
      () => {
        at = performance.now();
      },
      { once: true },
    );
  return () => at;
}
