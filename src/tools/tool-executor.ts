// Where a run's tool calls execute. Each call names its container kind: `exec` the
// workload container, the file tools the file-tool container (tool-container.ts says why
// they are apart). Both kinds follow the profile's `toolLifetime`: `per-run` (each kind
// created at the first call of that kind that passes validation and the mediator, reused,
// removed at the end) or `per-call` (one container for one call, removed after it: taken
// from a warm pool of pristine ones made ahead, tool-pool.ts, or with no pool created at the
// call). Disposal waits for starts, fills and calls still in flight, and nothing starts
// after it, so no container outlives the run (AH-LIFE-3).
import type { ToolLifetime } from '../config/profile-schema.js';
import { HarnessInvariantError, errorMessage } from '../errors.js';
import type { ContainerSpec } from '../substrate/container-spec.js';
import type { ContainerRuntime } from '../substrate/runtime.js';
import {
  ToolContainer,
  type ToolCallOptions,
  type ToolContainerKind,
  type ToolExecution,
} from './tool-container.js';
import { WarmPool, type PooledFacts, type TakenFacts } from './tool-pool.js';

export interface ToolRunOptions extends Readonly<ToolCallOptions> {
  /** The container kind the tool runs in (its BuiltinTool `runsIn`). */
  readonly runsIn: ToolContainerKind;
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
  /** A per-call container made ahead is ready in its pool (after `started`). */
  pooled?(container: ToolContainerRecord, facts: PooledFacts): Promise<void>;
  /** A call takes a pooled container, before it runs in it. */
  taken?(container: ToolContainerRecord, facts: TakenFacts): Promise<void>;
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

/** Per-call only: how many containers of each kind wait ahead, and which kinds the tools use. */
export interface PoolSetting {
  readonly size: number;
  readonly kinds: readonly ToolContainerKind[];
}

export function toolExecutor(
  lifetime: ToolLifetime,
  runtime: ContainerRuntime,
  specs: ToolSpecs,
  events: ToolContainerEvents,
  pool: PoolSetting = { size: 0, kinds: [] },
): ToolExecutor {
  return lifetime === 'per-run'
    ? new PerRunExecutor(runtime, specs, events)
    : new PerCallExecutor(runtime, specs, events, pool);
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
  readonly #pools = new Map<ToolContainerKind, WarmPool>();
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Removals of used pooled containers, each finished before a later call takes one. */
  readonly #removing = new Set<Promise<void>>();
  #calls = 0;
  #closed = false;

  constructor(
    runtime: ContainerRuntime,
    specs: ToolSpecs,
    events: ToolContainerEvents,
    pool: PoolSetting,
  ) {
    this.#runtime = runtime;
    this.#specs = specs;
    this.#events = events;
    if (pool.size === 0) return;
    for (const kind of new Set(pool.kinds)) {
      const warm = new WarmPool(runtime, specs[kind], kind, pool.size, this.#hooks(), () => {
        this.#calls += 1;
        return `-c${this.#calls}`;
      });
      this.#pools.set(kind, warm);
      warm.fill();
    }
  }

  #hooks(): ConstructorParameters<typeof WarmPool>[4] {
    const events = this.#events;
    return {
      made: async (container, facts) => {
        await events.started(recordOf(container, this.lifetime));
        await events.pooled?.(recordOf(container, this.lifetime), facts);
      },
      taken: async (container, facts) => {
        await events.taken?.(recordOf(container, this.lifetime), facts);
      },
      discard: (container) => removeRecorded(container, this.lifetime, events),
    };
  }

  run(argv: readonly string[], options: ToolRunOptions): Promise<ToolExecution> {
    if (this.#closed) return Promise.reject(closed());
    const pool = this.#pools.get(options.runsIn);
    let call: Promise<ToolExecution>;
    if (pool === undefined) {
      this.#calls += 1;
      call = this.#runOnce(argv, options, `-c${this.#calls}`);
    } else call = this.#runPooled(pool, argv, options);
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

  /**
   * The call runs in a pooled container and answers as soon as its exec ends; the container
   * is removed meanwhile, and a call started later takes its own only once every earlier
   * call's container is gone, so nothing a call left running (a background process, a file
   * in /tmp) outlives it into a later one.
   */
  async #runPooled(
    pool: WarmPool,
    argv: readonly string[],
    options: ToolRunOptions,
  ): Promise<ToolExecution> {
    await Promise.all([...this.#removing]);
    const container = await pool.take(options.signal);
    try {
      return await container.run(argv, options);
    } finally {
      const removal = removeRecorded(container, this.lifetime, this.#events).catch(() => undefined);
      this.#removing.add(removal);
      void removal.finally(() => this.#removing.delete(removal));
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#closed = true;
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
    await Promise.all([...this.#pools.values()].map((p) => p[Symbol.asyncDispose]()));
    while (this.#removing.size > 0) await Promise.all([...this.#removing]);
  }
}
