// Making containers: every create goes through here, so every container is held by the
// host tether from the moment it exists (AH-LIFE-3) and gets the run's cgroup parent where
// the engine takes one (cgroup-usage.ts).
import type Docker from 'dockerode';
import type { ContainerSpec } from '../container-spec.js';
import type { RunResourceUsage } from '../runtime.js';
import { collectCgroupUsage } from './cgroup-usage.js';
import { throwIfAborted } from './errors.js';
import { releaseHeld, type HostTether } from './host-tether.js';
import { toCreateOptions } from './request.js';

/**
 * Creates a container whole: the request is never aborted mid-way, since the engine may
 * make the container whatever the client does, and cfh would not know its id to remove it
 * (AH-LIFE-3). A create is short; when the caller's signal aborted meanwhile, the container
 * just made is removed and the abort thrown.
 */
export async function createWhole(
  docker: Docker,
  tether: HostTether,
  options: Docker.ContainerCreateOptions,
  signal: AbortSignal | undefined,
): Promise<Docker.Container> {
  throwIfAborted(signal);
  const container = await docker.createContainer(options);
  // Held before it can start: it dies with this process, however that ends.
  tether.hold(container.id);
  if (signal?.aborted === true) {
    releaseHeld(container.id);
    await container.remove({ force: true, v: true }).catch(() => undefined);
    throwIfAborted(signal);
  }
  return container;
}

/** Creates sandbox containers with the run's accounting while the engine takes it. */
export class ContainerMaker {
  readonly #docker: Docker;
  readonly #tether: HostTether;
  /** Whether containers get the run's cgroup parent (false once the engine refused one). */
  #accounting = true;

  constructor(docker: Docker, tether: HostTether) {
    this.#docker = docker;
    this.#tether = tether;
  }

  /**
   * With the run's cgroup parent. An engine on the systemd cgroup driver takes only
   * `*.slice` parents and refuses ours: then, and for the rest of this process, containers
   * are created without it and the run's usage says it was not accounted.
   */
  async create(spec: ContainerSpec, signal: AbortSignal | undefined): Promise<Docker.Container> {
    try {
      return await createWhole(
        this.#docker,
        this.#tether,
        toCreateOptions(spec, this.#accounting),
        signal,
      );
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      if (!this.#accounting || spec.usageGroup === undefined || !/slice/i.test(text)) throw error;
      this.#accounting = false;
      return await createWhole(this.#docker, this.#tether, toCreateOptions(spec, false), signal);
    }
  }

  usage(usageGroup: string, signal?: AbortSignal): Promise<RunResourceUsage> {
    signal?.throwIfAborted();
    if (!this.#accounting)
      return Promise.resolve({
        unavailable: 'the engine uses the systemd cgroup driver, which refuses cfh-usage parents',
      });
    return collectCgroupUsage(usageGroup);
  }
}
