// Where a run's tool calls execute. Each call names its container kind: `exec` the
// workload container, the file tools the file-tool container (tool-container.ts says why
// they are apart). Both kinds follow the profile's `toolLifetime`: `per-run` (each kind
// created at the first call of that kind that passes validation and the mediator, reused,
// removed at the end) or `per-call` (created for one call and removed after it). Disposal
// waits for starts and calls still in flight, and nothing starts after it, so no container
// outlives the run (AH-LIFE-3).
import type { ToolLifetime } from '../config/profile-schema.js';
import { HarnessInvariantError, errorMessage } from '../errors.js';
import type { ContainerSpec } from '../substrate/container-spec.js';
import type { ContainerRuntime } from '../substrate/runtime.js';
import { ToolContainer, type ToolContainerKind, type ToolExecution } from './tool-container.js';

export interface ToolRunOptions {
  /** The container kind the tool runs in (its BuiltinTool `runsIn`). */
  readonly runsIn: ToolContainerKind;
  readonly stdin?: Buffer | undefined;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly signal?: AbortSignal | undefined;
}

/** One tool container, as the evidence names it. */
export interface ToolContainerRecord {
  readonly containerId: string;
  readonly name: string;
  readonly kind: ToolContainerKind;
  readonly lifetime: ToolLifetime;
}

export interface ToolContainerEvents {
  started(container: ToolContainerRecord): Promise<void>;
  removed(container: ToolContainerRecord): Promise<void>;
  /** A removal that failed; `cfh reap` removes the container later. */
  removalFailed(container: ToolContainerRecord, error: string): void;
}

export interface ToolExecutor extends AsyncDisposable {
  readonly lifetime: ToolLifetime;
  run(argv: readonly string[], options: ToolRunOptions): Promise<ToolExecution>;
}

/**
 * The run's spec each kind of tool container derives from (toolContainerSpec): the same for
 * both, unless the run narrows the file tools' mounts (a draft run keeps only the draft
 * copy writable for them, so a write decided as draft-only can land nowhere else).
 */
export type ToolSpecs = Readonly<Record<ToolContainerKind, ContainerSpec>>;

export function toolExecutor(
  lifetime: ToolLifetime,
  runtime: ContainerRuntime,
  specs: ToolSpecs,
  events: ToolContainerEvents,
): ToolExecutor {
  return lifetime === 'per-run'
    ? new PerRunExecutor(runtime, specs, events)
    : new PerCallExecutor(runtime, specs, events);
}

function recordOf(container: ToolContainer, lifetime: ToolLifetime): ToolContainerRecord {
  return { containerId: container.id, name: container.name, kind: container.kind, lifetime };
}

async function startRecorded(
  runtime: ContainerRuntime,
  specs: ToolSpecs,
  options: ToolRunOptions,
  lifetime: ToolLifetime,
  events: ToolContainerEvents,
  suffix = '',
): Promise<ToolContainer> {
  const container = await ToolContainer.start(
    runtime,
    specs[options.runsIn],
    options.runsIn,
    options.signal,
    suffix,
  );
  try {
    await events.started(recordOf(container, lifetime));
  } catch (error) {
    await removeRecorded(container, lifetime, events);
    throw error;
  }
  return container;
}

async function removeRecorded(
  container: ToolContainer,
  lifetime: ToolLifetime,
  events: ToolContainerEvents,
): Promise<void> {
  const record = recordOf(container, lifetime);
  try {
    await container.remove();
  } catch (error) {
    events.removalFailed(record, errorMessage(error));
    return;
  }
  await events.removed(record);
}

function closed(): HarnessInvariantError {
  return new HarnessInvariantError(
    'tool_executor_closed',
    'a tool call was started after the run disposed of its tool containers',
  );
}

class PerRunExecutor implements ToolExecutor {
  readonly lifetime = 'per-run' as const;
  readonly #runtime: ContainerRuntime;
  readonly #specs: ToolSpecs;
  readonly #events: ToolContainerEvents;
  readonly #starting = new Map<ToolContainerKind, Promise<ToolContainer>>();
  #closed = false;

  constructor(runtime: ContainerRuntime, specs: ToolSpecs, events: ToolContainerEvents) {
    this.#runtime = runtime;
    this.#specs = specs;
    this.#events = events;
  }

  async run(argv: readonly string[], options: ToolRunOptions): Promise<ToolExecution> {
    if (this.#closed) throw closed();
    let starting = this.#starting.get(options.runsIn);
    if (starting === undefined) {
      starting = startRecorded(this.#runtime, this.#specs, options, this.lifetime, this.#events);
      this.#starting.set(options.runsIn, starting);
    }
    const container = await starting;
    return container.run(argv, options);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#closed = true;
    // A start still in flight is waited for, so nothing is left behind.
    await Promise.all(
      [...this.#starting.values()].map(async (starting) => {
        const container = await starting.catch(() => undefined);
        if (container !== undefined) await removeRecorded(container, this.lifetime, this.#events);
      }),
    );
  }
}

class PerCallExecutor implements ToolExecutor {
  readonly lifetime = 'per-call' as const;
  readonly #runtime: ContainerRuntime;
  readonly #specs: ToolSpecs;
  readonly #events: ToolContainerEvents;
  readonly #inFlight = new Set<Promise<unknown>>();
  #calls = 0;
  #closed = false;

  constructor(runtime: ContainerRuntime, specs: ToolSpecs, events: ToolContainerEvents) {
    this.#runtime = runtime;
    this.#specs = specs;
    this.#events = events;
  }

  run(argv: readonly string[], options: ToolRunOptions): Promise<ToolExecution> {
    if (this.#closed) return Promise.reject(closed());
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
    const container = await startRecorded(
      this.#runtime,
      this.#specs,
      options,
      this.lifetime,
      this.#events,
      suffix,
    );
    try {
      return await container.run(argv, options);
    } finally {
      await removeRecorded(container, this.lifetime, this.#events);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#closed = true;
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }
}
