// The container a run's tools execute in (issue 5): derived from the same ContainerSpec as
// any sandbox, so the same mounts, user, seccomp filter and limits apply, and paths are
// resolved by the kernel inside it, never on the host. It idles under its init process;
// each tool call is an exec, bounded by `timeout` (coreutils) inside the container.
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
    // `timeout -s KILL` makes the command die of SIGKILL: 137.
    return {
      ...result,
      timedOut: result.exitCode === 137,
      durationMs: Math.round(performance.now() - started),
      containerId: this.#container.id,
    };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#container.remove();
  }

  remove(): Promise<void> {
    return this.#container.remove();
  }
}
