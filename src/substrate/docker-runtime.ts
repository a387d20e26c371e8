// The Docker implementation of ContainerRuntime; with docker-container.ts, docker-exec.ts,
// docker-guard.ts and docker-request.ts, the only modules that import dockerode.
// Every engine error leaves here as a typed CfhError.
import Docker from 'dockerode';
import type * as Http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import type { ContainerSpec } from './container-spec.js';
import { engineError, isStatus, throwIfAborted } from './docker-errors.js';
import { DockerCreatedContainer } from './docker-container.js';
import { DockerGuard } from './docker-guard.js';
import {
  hostTether,
  releaseHeld,
  type EngineAddress,
  type HostTether,
} from './docker-host-tether.js';
import { toCreateOptions } from './docker-request.js';
import { recheckSources } from './mount-gate.js';
import { collectCgroupUsage } from './cgroup-usage.js';
import type {
  FrozenContainers,
  BuildOptions,
  ContainerRuntime,
  CreatedContainer,
  CreatedGuard,
  EngineFacts,
  ImageFacts,
  ImageSummary,
  GuardSpec,
  LabelledObject,
  NetworkFacts,
  ProgressListener,
  RunResourceUsage,
} from './runtime.js';
import { EngineError } from '../errors.js';
import { inspectImage, listImages, removeImage } from './docker-images.js';

export { toCreateOptions } from './docker-request.js';

/** The engine sends null where the typings promise a value (labels, tags, volume lists). */
function orEmpty<T>(value: T | null | undefined, empty: T): T {
  return value ?? empty;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** dockerode takes `abortSignal` in options; absent stays absent (exactOptionalPropertyTypes). */
// Required, not imported: an ESM import of node:http builds its module facade, which reads
// every export and so loads Node's bundled undici (about 35 ms of CPU at every start of
// cfh); dockerode requires it the same way.
const { request: httpRequest } = createRequire(import.meta.url)('node:http') as typeof Http;

function abortable(signal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return signal === undefined ? {} : { abortSignal: signal };
}

/**
 * Creates a container whole: the request is never aborted mid-way, since the engine may
 * make the container whatever the client does, and cfh would not know its id to remove it
 * (AH-LIFE-3). A create is short; when the caller's signal aborted meanwhile, the container
 * just made is removed and the abort thrown.
 */
async function createWhole(
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
  /** Whether containers get the run's cgroup parent (false once the engine refused one). */
  #accounting = true;

  constructor(options: DockerRuntimeOptions = {}) {
    const address = engineAddress(options.dockerHost);
    this.#docker = new Docker(address);
    this.#tether = hostTether(address);
  }

  async ping(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    try {
      await this.#docker.ping();
    } catch (error) {
      throw engineError(error, 'ping');
    }
  }

  async facts(signal?: AbortSignal): Promise<EngineFacts> {
    signal?.throwIfAborted();
    try {
      const [info, version] = await Promise.all([
        this.#docker.info() as Promise<Record<string, unknown>>,
        this.#docker.version(),
      ]);
      const registered =
        (info.Runtimes as
          Record<string, { path?: string; runtimeArgs?: string[] | null }> | undefined) ?? {};
      const runtimes = Object.keys(registered).sort();
      const runtimeArgs = Object.fromEntries(
        runtimes.map((r) => [r, registered[r]?.runtimeArgs ?? []]),
      );
      const runtimePaths = Object.fromEntries(runtimes.map((r) => [r, registered[r]?.path ?? '']));
      return {
        serverVersion: str(info.ServerVersion) ?? version.Version,
        apiVersion: version.ApiVersion,
        runtimes,
        runtimeArgs,
        runtimePaths,
        defaultRuntime: str(info.DefaultRuntime) ?? 'runc',
        memoryLimit: info.MemoryLimit === true,
        pidsLimit: info.PidsLimit === true,
        cpuCfsQuota: info.CpuCfsQuota === true,
        securityOptions: (info.SecurityOptions as string[] | undefined) ?? [],
        cgroupVersion: str(info.CgroupVersion) ?? '',
      };
    } catch (error) {
      throw engineError(error, 'engine info');
    }
  }

  /**
   * Server and API version from the headers of `/_ping` (about 1 ms) rather than from
   * `/version` (about 20 ms on engine 20.10, which asks containerd and runc): this sits on
   * every run's cold path. Falls back to `/version` where the headers are absent.
   */
  async createIsolatedNetwork(
    name: string,
    labels: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): Promise<NetworkFacts> {
    signal?.throwIfAborted();
    try {
      const network = await this.#docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        Internal: true,
        CheckDuplicate: true,
        Labels: { ...labels },
        Options: { 'com.docker.network.bridge.enable_icc': 'false' },
      });
      const info = (await network.inspect()) as {
        Id: string;
        IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] };
      };
      const config = info.IPAM?.Config?.[0];
      if (config?.Gateway === undefined || config.Subnet === undefined) {
        await network.remove().catch(() => undefined);
        throw new EngineError('network_without_gateway', `network ${name} has no gateway address`);
      }
      return { id: info.Id, name, gateway: config.Gateway, subnet: config.Subnet };
    } catch (error) {
      throw engineError(error, `create network ${name}`);
    }
  }

  async createGuard(spec: GuardSpec, signal?: AbortSignal): Promise<CreatedGuard> {
    signal?.throwIfAborted();
    try {
      const container = await createWhole(
        this.#docker,
        this.#tether,
        {
          name: spec.name,
          Image: spec.image,
          // Holds the namespace; its process installs the rules, then serves on its stdin,
          // which stays open while cfh holds the attach (and after: StdinOnce false).
          Cmd: [...spec.command],
          OpenStdin: true,
          StdinOnce: false,
          AttachStdin: true,
          AttachStdout: true,
          AttachStderr: true,
          Tty: false,
          User: '0:0',
          Labels: { ...spec.labels },
          NetworkDisabled: false,
          HostConfig: {
            NetworkMode: spec.network,
            Sysctls: { ...spec.sysctls },
            // Only what installing netfilter rules needs; the workload never gets these.
            CapDrop: ['ALL'],
            CapAdd: ['NET_ADMIN', 'NET_RAW'],
            SecurityOpt: ['no-new-privileges:true'],
            ReadonlyRootfs: true,
            Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=1m', '/run': 'rw,nosuid,nodev,size=1m' },
            Init: true,
            Memory: 64 * 1024 * 1024,
            PidsLimit: 32,
            LogConfig: { Type: 'none', Config: {} },
            RestartPolicy: { Name: 'no' },
          },
        },
        signal,
      );
      return new DockerGuard(container);
    } catch (error) {
      throw engineError(error, `create guard ${spec.name}`);
    }
  }

  async version(signal?: AbortSignal): Promise<{ serverVersion: string; apiVersion: string }> {
    signal?.throwIfAborted();
    try {
      const headers = await this.#pingHeaders(signal);
      const serverHeader = headers.server;
      const server =
        typeof serverHeader === 'string' ? /^Docker\/(\S+)/.exec(serverHeader)?.[1] : undefined;
      const api = headers['api-version'];
      if (server !== undefined && typeof api === 'string')
        return { serverVersion: server, apiVersion: api };
      const v = await this.#docker.version();
      return { serverVersion: v.Version, apiVersion: v.ApiVersion };
    } catch (error) {
      throw engineError(error, 'engine version');
    }
  }

  #pingHeaders(signal?: AbortSignal): Promise<IncomingHttpHeaders> {
    const modem = this.#docker.modem as {
      socketPath?: string;
      host?: string;
      port?: number;
      protocol?: string;
    };
    if (modem.protocol === 'https') return Promise.resolve({});
    return new Promise((resolve, reject) => {
      const target =
        modem.socketPath !== undefined
          ? { socketPath: modem.socketPath }
          : { host: modem.host, port: modem.port };
      const req = httpRequest(
        { ...target, path: '/_ping', method: 'GET', ...(signal === undefined ? {} : { signal }) },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) resolve(res.headers);
            else
              reject(
                Object.assign(new Error(`ping: HTTP ${String(res.statusCode)}`), {
                  statusCode: res.statusCode,
                }),
              );
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
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

  async createContainer(spec: ContainerSpec, signal?: AbortSignal): Promise<CreatedContainer> {
    // The object cfh checked, or no container (mount-gate.ts).
    recheckSources(spec);
    try {
      const container = await this.#create(spec, signal);
      return new DockerCreatedContainer(container, spec);
    } catch (error) {
      // A source replaced since the check makes the engine refuse (a missing bind source):
      // that is a containment failure, and says so.
      recheckSources(spec);
      throw engineError(error, `create container ${spec.name}`);
    }
  }

  /**
   * With the run's cgroup parent (cgroup-usage.ts). An engine on the systemd cgroup driver
   * takes only `*.slice` parents and refuses ours: then, and for the rest of this process,
   * containers are created without it and the run's usage says it was not accounted.
   */
  async #create(spec: ContainerSpec, signal: AbortSignal | undefined): Promise<Docker.Container> {
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

  collectUsage(usageGroup: string, signal?: AbortSignal): Promise<RunResourceUsage> {
    signal?.throwIfAborted();
    if (!this.#accounting)
      return Promise.resolve({
        unavailable: 'the engine uses the systemd cgroup driver, which refuses cfh-usage parents',
      });
    return collectCgroupUsage(usageGroup);
  }

  async listLabelled(label: string, signal?: AbortSignal): Promise<LabelledObject[]> {
    const filters = { label: [label] };
    try {
      const [containers, networks, volumes] = await Promise.all([
        this.#docker.listContainers({ all: true, filters, ...abortable(signal) }),
        this.#docker.listNetworks({ filters, ...abortable(signal) }),
        this.#docker.listVolumes({ filters, ...abortable(signal) }),
      ]);
      return [
        ...containers.map((c) => ({
          kind: 'container' as const,
          id: c.Id,
          name: (c.Names[0] ?? c.Id).replace(/^\//, ''),
          labels: c.Labels,
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

  async freezeLabelled(
    label: string,
    value: string,
    signal?: AbortSignal,
  ): Promise<FrozenContainers> {
    const docker = this.#docker;
    const paused: string[] = [];
    const thaw = async (): Promise<void> => {
      const failed: unknown[] = [];
      for (const id of paused.splice(0)) {
        try {
          await docker.getContainer(id).unpause();
        } catch (error) {
          // Gone, or stopped meanwhile: nothing is left paused.
          if (!isStatus(error, 404) && !isStatus(error, 409)) failed.push(error);
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
          // Stopped or removed since the list: it runs nothing.
          if (!isStatus(error, 404) && !isStatus(error, 409)) throw error;
        }
      }
    } catch (error) {
      await thaw().catch(() => undefined);
      throw engineError(error, "pause the run's containers");
    }
    const ids = [...paused];
    return { ids, [Symbol.asyncDispose]: thaw };
  }

  async removeObject(object: LabelledObject, signal?: AbortSignal): Promise<void> {
    try {
      if (object.kind === 'container') {
        await this.#docker
          .getContainer(object.id)
          .remove({ force: true, v: true, ...abortable(signal) });
        releaseHeld(object.id);
      } else if (object.kind === 'network') {
        await this.#docker.getNetwork(object.id).remove({ ...abortable(signal) });
      } else {
        await this.#docker.getVolume(object.id).remove({ ...abortable(signal) });
      }
    } catch (error) {
      if (isStatus(error, 404)) {
        releaseHeld(object.id);
        return;
      }
      throw engineError(error, `remove ${object.kind} ${object.name}`);
    }
  }

  async importImage(
    rootfs: Readable,
    ref: { repo: string; tag: string },
    changes: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    try {
      const stream = await this.#docker.importImage(rootfs, {
        repo: ref.repo,
        tag: ref.tag,
        changes: [...changes],
        ...abortable(signal),
      } as unknown as object);
      await this.#follow(stream, () => undefined);
    } catch (error) {
      throw engineError(error, `import image ${ref.repo}:${ref.tag}`);
    }
  }

  async pullImage(ref: string, onProgress: ProgressListener, signal?: AbortSignal): Promise<void> {
    try {
      const stream = await this.#docker.pull(ref, {
        ...abortable(signal),
      });
      await this.#follow(stream, onProgress);
    } catch (error) {
      throw engineError(error, `pull ${ref}`);
    }
  }

  async buildImage(
    context: Readable,
    options: BuildOptions,
    onProgress: ProgressListener,
    signal?: AbortSignal,
  ): Promise<void> {
    try {
      const stream = await this.#docker.buildImage(context, {
        t: options.tag,
        rm: true,
        forcerm: true,
        // Never from a registry: a FROM names an image the engine holds.
        pull: false,
        networkmode: options.network,
        ...(options.dockerfile === undefined ? {} : { dockerfile: options.dockerfile }),
        ...(options.buildArgs === undefined ? {} : { buildargs: { ...options.buildArgs } }),
        ...(options.labels === undefined ? {} : { labels: { ...options.labels } }),
        ...abortable(signal),
      } as Docker.ImageBuildOptions);
      await this.#follow(stream, onProgress);
    } catch (error) {
      throw engineError(error, `build ${options.tag}`);
    }
  }

  #follow(stream: NodeJS.ReadableStream, onProgress: ProgressListener): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#docker.modem.followProgress(
        stream,
        (err: Error | null) => {
          if (err) reject(err);
          else resolve();
        },
        (event: {
          stream?: string;
          status?: string;
          progress?: string;
          error?: string;
          errorDetail?: { message?: string };
        }) => {
          if (event.error !== undefined || event.errorDetail !== undefined) {
            reject(
              new EngineError(
                'engine_stream_error',
                event.errorDetail?.message ?? event.error ?? 'engine stream error',
              ),
            );
            return;
          }
          const line = (
            event.stream ?? [event.status, event.progress].filter(Boolean).join(' ')
          ).trim();
          if (line !== '') onProgress(line);
        },
      );
    });
  }
}
