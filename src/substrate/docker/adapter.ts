// The Docker adapter of ContainerRuntime: the one object the composition root makes
// (cli/run-main.ts). It holds the client, the host tether and the container maker, and
// hands each request to the module of its concern. Only this folder imports dockerode
// (scripts/check-layers.mjs); every engine error leaves it as a typed CfhError.
import Docker from 'dockerode';
import type { Readable } from 'node:stream';
import type { ContainerSpec } from '../container-spec.js';
import { recheckSources } from '../mount-gate.js';
import type {
  BuildOptions,
  ContainerRuntime,
  CreatedContainer,
  CreatedGuard,
  EngineFacts,
  FrozenContainers,
  GuardSpec,
  ImageFacts,
  ImageSummary,
  LabelledObject,
  NetworkFacts,
  ProgressListener,
  RunResourceUsage,
} from '../runtime.js';
import { DockerCreatedContainer } from './container.js';
import { ContainerMaker } from './create.js';
import { engineError } from './errors.js';
import { engineFacts, engineVersion } from './facts.js';
import { hostTether, type EngineAddress, type HostTether } from './host-tether.js';
import { buildImage, importImage, pullImage } from './image-streams.js';
import { inspectImage, listImages, removeImage } from './images.js';
import { freezeLabelled, listLabelled, removeObject } from './janitor.js';
import { createGuard, createIsolatedNetwork } from './networks.js';

export { toCreateOptions } from './request.js';

export interface DockerRuntimeOptions {
  /** `unix:///path` or a bare socket path; defaults to /var/run/docker.sock. */
  readonly dockerHost?: string | undefined;
}

/** Where the engine listens: a unix socket (the default) or plain tcp. */
function engineAddress(host: string | undefined): EngineAddress {
  if (host === undefined || host === '') return { socketPath: '/var/run/docker.sock' };
  if (host.startsWith('unix://')) return { socketPath: host.slice('unix://'.length) };
  if (host.startsWith('/')) return { socketPath: host };
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return { host: url.hostname, port: Number(url.port || 2375) };
}

export class DockerRuntime implements ContainerRuntime {
  readonly #docker: Docker;
  /** Kills this process's containers when it ends without removing them. */
  readonly #tether: HostTether;
  readonly #maker: ContainerMaker;

  constructor(options: DockerRuntimeOptions = {}) {
    const address = engineAddress(options.dockerHost);
    this.#docker = new Docker(address);
    this.#tether = hostTether(address);
    this.#maker = new ContainerMaker(this.#docker, this.#tether);
  }

  async ping(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    try {
      await this.#docker.ping();
    } catch (error) {
      throw engineError(error, 'ping');
    }
  }

  facts(signal?: AbortSignal): Promise<EngineFacts> {
    return engineFacts(this.#docker, signal);
  }

  version(signal?: AbortSignal): Promise<{ serverVersion: string; apiVersion: string }> {
    return engineVersion(this.#docker, signal);
  }

  createIsolatedNetwork(
    name: string,
    labels: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): Promise<NetworkFacts> {
    return createIsolatedNetwork(this.#docker, name, labels, signal);
  }

  createGuard(spec: GuardSpec, signal?: AbortSignal): Promise<CreatedGuard> {
    return createGuard(this.#docker, this.#tether, spec, signal);
  }

  async createContainer(spec: ContainerSpec, signal?: AbortSignal): Promise<CreatedContainer> {
    // The object cfh checked, or no container (mount-gate.ts).
    recheckSources(spec);
    try {
      return new DockerCreatedContainer(await this.#maker.create(spec, signal), spec);
    } catch (error) {
      // A source replaced since the check makes the engine refuse (a missing bind source):
      // that is a containment failure, and says so.
      recheckSources(spec);
      throw engineError(error, `create container ${spec.name}`);
    }
  }

  collectUsage(usageGroup: string, signal?: AbortSignal): Promise<RunResourceUsage> {
    return this.#maker.usage(usageGroup, signal);
  }

  inspectImage(ref: string, signal?: AbortSignal): Promise<ImageFacts | undefined> {
    return inspectImage(this.#docker, ref, signal);
  }

  listImages(label: string, signal?: AbortSignal): Promise<ImageSummary[]> {
    return listImages(this.#docker, label, signal);
  }

  removeImage(ref: string, signal?: AbortSignal): Promise<void> {
    return removeImage(this.#docker, ref, signal);
  }

  importImage(
    rootfs: Readable,
    ref: { repo: string; tag: string },
    changes: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    return importImage(this.#docker, rootfs, ref, changes, signal);
  }

  pullImage(ref: string, onProgress: ProgressListener, signal?: AbortSignal): Promise<void> {
    return pullImage(this.#docker, ref, onProgress, signal);
  }

  buildImage(
    context: Readable,
    options: BuildOptions,
    onProgress: ProgressListener,
    signal?: AbortSignal,
  ): Promise<void> {
    return buildImage(this.#docker, context, options, onProgress, signal);
  }

  listLabelled(label: string, signal?: AbortSignal): Promise<LabelledObject[]> {
    return listLabelled(this.#docker, label, signal);
  }

  removeObject(object: LabelledObject, signal?: AbortSignal): Promise<void> {
    return removeObject(this.#docker, object, signal);
  }

  freezeLabelled(label: string, value: string, signal?: AbortSignal): Promise<FrozenContainers> {
    return freezeLabelled(this.#docker, label, value, signal);
  }
}
