// Where a run's tool calls execute (issue 5): a `per-run` container (created at the first
// call that passes validation and the mediator, reused, removed at the end) or a
// `per-call` container (created for one call and removed after it). Disposal waits for
// starts and calls still in flight, so no container outlives the run (AH-LIFE-3).
import type { ToolLifetime } from '../config/profile-schema.js';
import { errorMessage } from '../errors.js';
import type { ContainerSpec } from '../substrate/container-spec.js';
import type { ContainerRuntime } from '../substrate/runtime.js';
import { ToolContainer, type ToolExecution } from './tool-container.js';

export interface ToolRunOptions {
  readonly stdin?: Buffer | undefined;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly signal?: AbortSignal | undefined;
}

export interface ToolContainerEvents {
  started(containerId: string, lifetime: ToolLifetime): Promise<void>;
  removed(containerId: string, lifetime: ToolLifetime): Promise<void>;
  /** A removal that failed; `cfh reap` removes the container later. */
  removalFailed(containerId: string, error: string): void;
}

export interface ToolExecutor extends AsyncDisposable {
  readonly lifetime: ToolLifetime;
  run(argv: readonly string[], options: ToolRunOptions): Promise<ToolExecution>;
}

export function toolExecutor(
  lifetime: ToolLifetime,
  runtime: ContainerRuntime,
  spec: ContainerSpec,
  events: ToolContainerEvents,
): ToolExecutor {
  return lifetime === 'per-run'
    ? new PerRunExecutor(runtime, spec, events)
    : new PerCallExecutor(runtime, spec, events);
}

async function removeRecorded(
  container: ToolContainer,
  lifetime: ToolLifetime,
  events: ToolContainerEvents,
): Promise<void> {
  try {
    await container.remove();
  } catch (error) {
    events.removalFailed(container.id, errorMessage(error));
    return;
  }
  await events.removed(container.id, lifetime);
}

class PerRunExecutor implements ToolExecutor {
  readonly lifetime = 'per-run' as const;
  readonly #runtime: ContainerRuntime;
  readonly #spec: ContainerSpec;
  readonly #events: ToolContainerEvents;
  #starting: Promise<ToolContainer> | undefined;

  constructor(runtime: ContainerRuntime, spec: ContainerSpec, events: ToolContainerEvents) {
    this.#runtime = runtime;
    this.#spec = spec;
    this.#events = events;
  }

  async run(argv: readonly string[], options: ToolRunOptions): Promise<ToolExecution> {
    this.#starting ??= ToolContainer.start(this.#runtime, this.#spec, options.signal).then(
      async (c) => {
        await this.#events.started(c.id, this.lifetime);
        return c;
      },
    );
    const container = await this.#starting;
    return container.run(argv, options);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    // A start still in flight is waited for, so nothing is left behind.
    const container = await this.#starting?.catch(() => undefined);
    if (container !== undefined) await removeRecorded(container, this.lifetime, this.#events);
  }
}

class PerCallExecutor implements ToolExecutor {
  readonly lifetime = 'per-call' as const;
  readonly #runtime: ContainerRuntime;
  readonly #spec: ContainerSpec;
  readonly #events: ToolContainerEvents;
  readonly #inFlight = new Set<Promise<unknown>>();
  #calls = 0;

  constructor(runtime: ContainerRuntime, spec: ContainerSpec, events: ToolContainerEvents) {
    this.#runtime = runtime;
    this.#spec = spec;
    this.#events = events;
  }

  run(argv: readonly string[], options: ToolRunOptions): Promise<ToolExecution> {
    this.#calls += 1;
    const call = this.#runOnce(argv, options, `-c${this.#calls}`);
    const tracked = call.catch(() => undefined);
    this.#inFlight.add(tracked);
    void tracked.finally(() => this.#inFlight.delete(tracked));
    return call;
  }

  async #runOnce(
    argv: readonly string[],
    options: ToolRunOptions,
    suffix: string,
  ): Promise<ToolExecution> {
    const container = await ToolContainer.start(this.#runtime, this.#spec, options.signal, suffix);
    try {
      await this.#events.started(container.id, this.lifetime);
      return await container.run(argv, options);
    } finally {
      await removeRecorded(container, this.lifetime, this.#events);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }
}
