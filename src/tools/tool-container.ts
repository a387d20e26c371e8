// The container a run's tools execute in (issue 5): derived from the same ContainerSpec as
// any sandbox, so the same mounts, user, seccomp filter and limits apply, and paths are
// resolved by the kernel inside it, never on the host. It idles under its init process;
// each tool call is an exec, bounded by `timeout` (coreutils) inside the container.
import { setTimeout as sleep } from 'node:timers/promises';
import { EngineError } from '../errors.js';
import type { ContainerSpec } from '../substrate/container-spec.js';
import type { ContainerRuntime, ExecResult, StartedContainer } from '../substrate/runtime.js';

export interface ToolExecution extends ExecResult {
  readonly timedOut: boolean;
  readonly durationMs: number;
  readonly containerId: string;
}

export function toolContainerName(spec: ContainerSpec, suffix = ''): string {
  return `${spec.name.replace(/^cfh-/, 'cfh-tools-')}${suffix}`;
}

export class ToolContainer implements AsyncDisposable {
  readonly #container: StartedContainer;

  private constructor(container: StartedContainer) {
    this.#container = container;
  }

  get id(): string {
    return this.#container.id;
  }

  /** `suffix` tells per-call containers of one run apart: `cfh-tools-<run>-c3`. */
  static async start(
    runtime: ContainerRuntime,
    spec: ContainerSpec,
    signal?: AbortSignal,
    suffix = '',
  ): Promise<ToolContainer> {
    const created = await runtime.createContainer(
      { ...spec, name: toolContainerName(spec, suffix), command: ['sleep', 'infinity'] },
      signal,
    );
    try {
      return new ToolContainer(await created.start(signal));
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
    const result = await this.#container.exec(['timeout', '-s', 'KILL', String(seconds), ...argv], {
      stdin: options.stdin,
      maxOutputBytes: options.maxOutputBytes,
      signal: options.signal,
    });
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

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#container.remove();
  }

  remove(): Promise<void> {
    return this.#container.remove();
  }
}
