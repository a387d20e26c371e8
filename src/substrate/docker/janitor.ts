// What the reaper and the live draft ask of the engine: every object carrying a label,
// removing one, and holding a run's containers still (the cgroup freezer).
import type Docker from 'dockerode';
import type { FrozenContainers, LabelledObject } from '../runtime.js';
import { engineError, isStatus } from './errors.js';
import { releaseHeld } from './host-tether.js';

/** dockerode takes `abortSignal` in options; absent stays absent (exactOptionalPropertyTypes). */
export function abortable(signal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return signal === undefined ? {} : { abortSignal: signal };
}

/** The engine sends null where the typings promise a value (labels, tags, volume lists). */
function orEmpty<T>(value: T | null | undefined, empty: T): T {
  return value ?? empty;
}

/** Every container, network and volume carrying `label` (any value). */
export async function listLabelled(
  docker: Docker,
  label: string,
  signal?: AbortSignal,
): Promise<LabelledObject[]> {
  const filters = { label: [label] };
  try {
    const [containers, networks, volumes] = await Promise.all([
      docker.listContainers({ all: true, filters, ...abortable(signal) }),
      docker.listNetworks({ filters, ...abortable(signal) }),
      docker.listVolumes({ filters, ...abortable(signal) }),
    ]);
    return [
      ...containers.map((c) => ({
        kind: 'container' as const,
        id: c.Id,
        name: (c.Names[0] ?? c.Id).replace(/^\//, ''),
        labels: orEmpty(c.Labels, {}),
      })),
      ...networks.map((n) => ({
        kind: 'network' as const,
        id: n.Id,
        name: n.Name,
        labels: orEmpty(n.Labels, {}),
      })),
      ...orEmpty(volumes.Volumes, []).map((v) => ({
        kind: 'volume' as const,
        id: v.Name,
        name: v.Name,
        labels: orEmpty(v.Labels, {}),
      })),
    ];
  } catch (error) {
    throw engineError(error, 'list labelled objects');
  }
}

/** Gone already is not an error: what the caller wanted is true. */
export async function removeObject(
  docker: Docker,
  object: LabelledObject,
  signal?: AbortSignal,
): Promise<void> {
  try {
    if (object.kind === 'container') {
      await docker.getContainer(object.id).remove({ force: true, v: true, ...abortable(signal) });
      releaseHeld(object.id);
    } else if (object.kind === 'network') {
      await docker.getNetwork(object.id).remove({ ...abortable(signal) });
    } else {
      await docker.getVolume(object.id).remove({ ...abortable(signal) });
    }
  } catch (error) {
    if (isStatus(error, 404)) {
      releaseHeld(object.id);
      return;
    }
    throw engineError(error, `remove ${object.kind} ${object.name}`);
  }
}

/** Gone or stopped meanwhile: it runs nothing, which is what a pause is for. */
const settled = (error: unknown): boolean => isStatus(error, 404) || isStatus(error, 409);

/**
 * Every running container carrying `label=value`, paused until the returned handle is
 * disposed. A container that stops meanwhile is skipped: it runs nothing either.
 */
export async function freezeLabelled(
  docker: Docker,
  label: string,
  value: string,
  signal?: AbortSignal,
): Promise<FrozenContainers> {
  const paused: string[] = [];
  const thaw = async (): Promise<void> => {
    const failed: unknown[] = [];
    for (const id of paused.splice(0)) {
      try {
        await docker.getContainer(id).unpause();
      } catch (error) {
        if (!settled(error)) failed.push(error);
      }
    }
    if (failed.length > 0) throw engineError(failed[0], "unpause the run's containers");
  };
  try {
    const running = await docker.listContainers({
      filters: { label: [`${label}=${value}`], status: ['running'] },
      ...abortable(signal),
    });
    for (const c of running) {
      try {
        await docker.getContainer(c.Id).pause({ ...abortable(signal) });
        paused.push(c.Id);
      } catch (error) {
        if (!settled(error)) throw error;
      }
    }
  } catch (error) {
    await thaw().catch(() => undefined);
    throw engineError(error, "pause the run's containers");
  }
  return { ids: [...paused], [Symbol.asyncDispose]: thaw };
}
