// The warm pool of one kind of per-call tool container (issue 21): up to `size` pristine
// containers, created and started ahead from the run's exact spec for that kind (so the
// same image, mounts and modes, user, seccomp filter, limits, owner labels and start gate
// as a container created at its call: toolContainerSpec), refilled as each is taken, and
// never handed out twice. A call takes one, runs in it once, and it is removed.
//
// What holds between the fill and the take (AH-CONT-1, a TOCTOU the pool widens): a pooled
// container was gated when it started (runc: what the engine mounted is what cfh checked),
// and a bind mount is pinned to the object it bound, so a source swapped later cannot reach
// it; yet a call must not run on a mount whose host source is no longer the checked object
// (a per-call container created then would be refused). So every take re-checks every
// source exactly as a create does and refuses the call the same way (`mount_source_changed`),
// and the container must still be running. A fill that fails (a swapped source, the engine)
// is held: the pool stops filling and the next take throws that error, so a call never runs
// in anything less checked than a fresh container (fail closed).
//
// A fill is never aborted half-way: an aborted create can leave an engine object the client
// never learned the id of. Disposal waits for every fill in flight and removes every
// container not handed out; each carries the run's labels, so `cfh reap` finds any a killed
// cfh left.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../evidence/canonical-json.js';
import { EngineError, HarnessInvariantError } from '../errors.js';
import { describeSpec, type ContainerSpec } from '../substrate/container-spec.js';
import { recheckSources } from '../substrate/mount-gate.js';
import type { ContainerRuntime } from '../substrate/runtime.js';
import { ToolContainer, toolContainerSpec, type ToolContainerKind } from './tool-container.js';

/** What the evidence says of a pooled container when it is ready. */
export interface PooledFacts {
  /** sha256 of the kind's container spec as the evidence describes it, less its name. */
  readonly specDigest: string;
  /** When its create was asked (ISO 8601). */
  readonly madeAt: string;
  /** Create, start and gate, ms. */
  readonly readyMs: number;
}

/** What the evidence says of a pooled container when a call takes it. */
export interface TakenFacts extends PooledFacts {
  /** How long it waited in the pool once ready, ms. */
  readonly idleMs: number;
  /** How long the call waited for it, ms (0: it was ready). */
  readonly waitedMs: number;
  /** No call ran in it before: each is handed out once, and only after it was made. */
  readonly unused: true;
}

export interface PoolHooks {
  /** It is ready (started, gated): record it. A throw removes it and fails the fill. */
  made(container: ToolContainer, facts: PooledFacts): Promise<void>;
  /** A call takes it: record it before the call runs. */
  taken(container: ToolContainer, facts: TakenFacts): Promise<void>;
  /** Remove it (and record the removal). */
  discard(container: ToolContainer): Promise<void>;
}

interface Warm {
  readonly container: ToolContainer;
  readonly facts: PooledFacts;
  readonly readyAt: number;
}

/** The digest a pool's containers are made for: the kind's spec, names aside. */
export function poolSpecDigest(spec: ContainerSpec, kind: ToolContainerKind): string {
  const own = toolContainerSpec(spec, kind);
  return createHash('sha256')
    .update(canonicalJson(describeSpec({ ...own, name: '' })))
    .digest('hex');
}

export class WarmPool implements AsyncDisposable {
  readonly kind: ToolContainerKind;
  readonly size: number;
  readonly specDigest: string;
  readonly #runtime: ContainerRuntime;
  readonly #spec: ContainerSpec;
  readonly #hooks: PoolHooks;
  /** `-c<N>`: the Nth container this pool made (the executor's names for per-call ones). */
  readonly #suffix: () => string;
  /** Made or being made, not yet taken: at most `size`. */
  readonly #slots: Promise<Warm>[] = [];
  /** Every fill and every discard still in flight. */
  readonly #pending = new Set<Promise<unknown>>();
  readonly #handedOut = new Set<string>();
  #failure: Error | undefined;
  #closed = false;

  constructor(
    runtime: ContainerRuntime,
    spec: ContainerSpec,
    kind: ToolContainerKind,
    size: number,
    hooks: PoolHooks,
    suffix: () => string,
  ) {
    if (!Number.isInteger(size) || size < 1)
      throw new HarnessInvariantError('tool_pool_invariant', `a pool of ${size} containers`);
    this.#runtime = runtime;
    this.#spec = spec;
    this.kind = kind;
    this.size = size;
    this.#hooks = hooks;
    this.#suffix = suffix;
    this.specDigest = poolSpecDigest(spec, kind);
  }

  /** Containers waiting in the pool, made or being made (never more than `size`). */
  get waiting(): number {
    return this.#slots.length;
  }

  /** Starts fills until `size` wait; none after a failed fill or once closed. */
  fill(): void {
    while (!this.#closed && this.#failure === undefined && this.#slots.length < this.size)
      this.#slots.push(this.#make());
  }

  /** A pristine container for one call: never handed out before, its mounts re-checked. */
  async take(signal?: AbortSignal): Promise<ToolContainer> {
    if (this.#closed) throw closedPool();
    if (this.#failure !== undefined) throw this.#failure;
    const asked = performance.now();
    // With a pool of `size` ≥ 1 filled ahead a slot exists, unless the last fill failed.
    const slot = this.#slots.shift() ?? this.#make();
    this.fill();
    let warm: Warm;
    try {
      warm = await untilAborted(slot, signal);
    } catch (error) {
      // Aborted while it was being made: it is still removed once made.
      this.#track(slot.then((w) => this.#hooks.discard(w.container)));
      throw error;
    }
    try {
      this.#check(warm, signal);
      if (!(await warm.container.running(signal))) {
        throw new EngineError(
          'tool_container_lost',
          `pooled tool container ${warm.container.name} stopped while it waited in the pool`,
          { details: { containerId: warm.container.id } },
        );
      }
      this.#handedOut.add(warm.container.id);
      const now = performance.now();
      await this.#hooks.taken(warm.container, {
        ...warm.facts,
        idleMs: Math.max(0, Math.round(now - Math.max(warm.readyAt, asked))),
        waitedMs: Math.max(0, Math.round(warm.readyAt - asked)),
        unused: true,
      });
    } catch (error) {
      await this.#hooks.discard(warm.container);
      throw error;
    }
    return warm.container;
  }

  /** Refuses a container that is not what a fresh create would be now. */
  #check(warm: Warm, signal: AbortSignal | undefined): void {
    signal?.throwIfAborted();
    if (this.#handedOut.has(warm.container.id) || warm.facts.specDigest !== this.specDigest) {
      throw new HarnessInvariantError(
        'tool_pool_invariant',
        `pooled tool container ${warm.container.name} is not a pristine container of this run's spec`,
        { containerId: warm.container.id },
      );
    }
    // AH-CONT-1: the sources are still the objects checked, as before any create.
    recheckSources(this.#spec);
  }

  #make(): Promise<Warm> {
    const suffix = this.#suffix();
    const made = (async (): Promise<Warm> => {
      const madeAt = new Date().toISOString();
      const t0 = performance.now();
      // Not abortable (the top comment says why); disposal waits for it instead.
      const container = await ToolContainer.start(
        this.#runtime,
        this.#spec,
        this.kind,
        undefined,
        suffix,
      );
      const facts: PooledFacts = {
        specDigest: this.specDigest,
        madeAt,
        readyMs: Math.round(performance.now() - t0),
      };
      try {
        await this.#hooks.made(container, facts);
      } catch (error) {
        await this.#hooks.discard(container);
        throw error;
      }
      return { container, facts, readyAt: performance.now() };
    })();
    this.#track(made);
    made.catch((error: unknown) => {
      this.#failure ??= error instanceof Error ? error : new Error(String(error));
    });
    return made;
  }

  #track(p: Promise<unknown>): void {
    const settled = p.then(
      () => undefined,
      () => undefined,
    );
    this.#pending.add(settled);
    void settled.finally(() => this.#pending.delete(settled));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#closed = true;
    const left = this.#slots.splice(0);
    for (const slot of left) this.#track(slot.then((w) => this.#hooks.discard(w.container)));
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }
}

function closedPool(): HarnessInvariantError {
  return new HarnessInvariantError(
    'tool_executor_closed',
    'a tool call was started after the run disposed of its tool containers',
  );
}

/** `p`, or the signal's reason once it aborts (p itself goes on). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return p;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
