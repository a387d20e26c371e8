// The containers a run's tools execute in. Two kinds, both derived from the run's
// ContainerSpec, so the image, mounts and modes, user, seccomp filter, limits and owner
// labels are the sandbox's own, and paths are resolved by the kernel inside, never on the
// host. Each idles under its init process; each tool call is an exec, bounded by
// /usr/bin/timeout inside the container.
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
import { EngineError } from '../errors.js';
import type { ContainerSpec } from '../substrate/container-spec.js';
import type { ContainerRuntime, ExecResult, StartedContainer } from '../substrate/runtime.js';

export type ToolContainerKind = 'workload' | 'file-tool';

export interface ToolExecution extends ExecResult {
  readonly timedOut: boolean;
  readonly durationMs: number;
  readonly containerId: string;
}

/** Binaries a tool container runs on its own account, by absolute path on the image root. */
export const TIMEOUT_BINARY = '/usr/bin/timeout';
const SLEEP_BINARY = '/usr/bin/sleep';

/**
 * How long past its own bound a call may go before cfh stops waiting for it. The bound is
 * enforced inside the container by timeout, which in the workload runs with the profile's
 * env (a LD_PRELOAD there could disarm it); this backstop holds whatever runs inside.
 */
const BACKSTOP_GRACE_MS = 5_000;

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

  private constructor(kind: ToolContainerKind, container: StartedContainer, workingDir: string) {
    this.kind = kind;
    this.#container = container;
    this.#workingDir = workingDir;
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
      return new ToolContainer(kind, await created.start(signal), own.workingDir);
    } catch (error) {
      await created.remove();
      throw error;
    }
  }

  async run(
    argv: readonly string[],
    options: {
      stdin?: Buffer | undefined;
      timeoutMs: number;
      maxOutputBytes: number;
      signal?: AbortSignal | undefined;
    },
  ): Promise<ToolExecution> {
    const started = performance.now();
    const seconds = Math.max(1, Math.ceil(options.timeoutMs / 1000));
    const backstop = AbortSignal.timeout(seconds * 1000 + BACKSTOP_GRACE_MS);
    let result: ExecResult;
    try {
      result = await this.#container.exec(
        [TIMEOUT_BINARY, '-s', 'KILL', String(seconds), ...argv],
        {
          workingDir: this.#workingDir,
          stdin: options.stdin,
          maxOutputBytes: options.maxOutputBytes,
          signal:
            options.signal === undefined ? backstop : AbortSignal.any([options.signal, backstop]),
        },
      );
    } catch (error) {
      if (options.signal?.aborted === true || !backstop.aborted) throw error;
      // The call outlived its bound: cfh stops waiting (what it printed is not kept).
      return {
        exitCode: 137,
        stdout: Buffer.alloc(0),
        stderr: Buffer.alloc(0),
        stdoutTruncated: false,
        stderrTruncated: false,
        timedOut: true,
        durationMs: Math.round(performance.now() - started),
        containerId: this.#container.id,
      };
    }
    const elapsedMs = performance.now() - started;
    // SIGKILL (137) is `timeout -s KILL` only when the time was up; otherwise something
    // killed the command: the memory limit (model-correctable), or the container itself
    // died or was removed, which is a containment failure that ends the run (AH-TOOL-6).
    const killed = result.exitCode === 137;
    const timedOut = killed && elapsedMs >= seconds * 1000 * 0.95;
    if (killed && !timedOut && (await this.#stopping(options.signal))) {
      throw new EngineError(
        'tool_container_lost',
        `tool container ${this.#container.name} stopped during a call (exit ${result.exitCode})`,
        { details: { containerId: this.#container.id } },
      );
    }
    return {
      ...result,
      timedOut,
      durationMs: Math.round(elapsedMs),
      containerId: this.#container.id,
    };
  }

  /**
   * Whether the container is going away. A container being killed can still read as
   * running for a moment after its processes died, so it is asked for up to a second; a
   * live container (the memory limit killed only the command) costs that second, once.
   */
  async #stopping(signal?: AbortSignal): Promise<boolean> {
    for (let i = 0; i < 10; i += 1) {
      if (!(await this.#container.running(signal))) return true;
      await sleep(100, undefined, { signal });
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
