// The ContainerRuntime interface: everything cfh asks of an engine. One implementation
// (substrate/docker/adapter.ts); the rest of cfh never sees dockerode.
import type { Readable } from 'node:stream';
import type { ContainerSpec } from './container-spec.js';

export interface EngineFacts {
  readonly serverVersion: string;
  readonly apiVersion: string;
  readonly runtimes: readonly string[];
  /** The arguments each registered runtime is started with (runsc's decide its assurance). */
  readonly runtimeArgs: Readonly<Record<string, readonly string[]>>;
  /** The binary each registered runtime name runs (`runc`, `/usr/bin/runsc`): the name alone
   * proves nothing, so the assurance level rests on this. */
  readonly runtimePaths: Readonly<Record<string, string>>;
  readonly defaultRuntime: string;
  readonly memoryLimit: boolean;
  readonly pidsLimit: boolean;
  readonly cpuCfsQuota: boolean;
  readonly securityOptions: readonly string[];
  readonly cgroupVersion: string;
}

/**
 * A container's (or a run's) counters from its cgroup, each absent when the kernel does not
 * keep it. Memory and pids are high-water marks over the container's life; CPU is user plus
 * system time. Under runsc they are the gVisor sandbox's host processes (Sentry and Gofer).
 */
export interface ResourceCounters {
  readonly memoryPeakBytes?: number;
  readonly cpuTotalMs?: number;
  readonly cpuUserMs?: number;
  readonly cpuSystemMs?: number;
  readonly pidsPeak?: number;
}

export type RunResourceUsage =
  | {
      readonly source: 'cgroup-v1' | 'cgroup-v2';
      /** The run's cgroup: every sandbox container of the run (the egress guard is not one). */
      readonly total: ResourceCounters;
      readonly containers: readonly (ResourceCounters & { readonly name: string })[];
      /** Whether the run's cgroup directories were removed after reading. */
      readonly removed: boolean;
      readonly readMs: number;
      readonly removeMs: number;
    }
  | { readonly unavailable: string };

export interface ImageSummary {
  readonly id: string;
  readonly tags: readonly string[];
  readonly createdAt: string;
  readonly sizeBytes: number;
  readonly labels: Readonly<Record<string, string>>;
}

export interface ImageFacts extends ImageSummary {
  /** What the image's own config would add to a container (checked before a run). */
  readonly config: {
    readonly volumes: readonly string[];
    readonly entrypoint: readonly string[];
    readonly healthcheck: readonly string[];
    readonly onBuild: readonly string[];
  };
}

export interface BuildOptions {
  readonly tag: string;
  /** The Dockerfile's name inside the context. */
  readonly dockerfile?: string | undefined;
  readonly buildArgs?: Readonly<Record<string, string>> | undefined;
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** `none`: RUN steps have no network (a Dockerfile image); `default`: the pulled-base path. */
  readonly network: 'none' | 'default';
}

export interface ContainerExit {
  readonly exitCode: number;
  readonly oomKilled: boolean;
  /** Engine error text for a container that could not run, if any. */
  readonly error: string;
}

export interface AttachedOutput {
  readonly stdout: Readable;
  readonly stderr: Readable;
}

export interface AttachOptions {
  /**
   * Streamed into the workload's stdin once it runs (past the gate, when there is one);
   * its end closes that stdin. Only for a spec with `stdin: 'forwarded'`.
   */
  readonly stdin?: NodeJS.ReadableStream | undefined;
}

export interface TerminalSize {
  readonly rows: number;
  readonly columns: number;
}

export interface StartOptions {
  /**
   * A TTY container's first size. Under the gate it is set before the workload runs, so
   * the workload's first look at its terminal sees it; without one, right after the start.
   */
  readonly terminalSize?: TerminalSize | undefined;
}

export interface StartedContainer extends AsyncDisposable {
  readonly id: string;
  readonly name: string;
  /** Resolves when the container's process ends. */
  wait(signal?: AbortSignal): Promise<ContainerExit>;
  kill(signal?: string): Promise<void>;
  /** Whether the container is still running (false when it is gone). */
  running(signal?: AbortSignal): Promise<boolean>;
  /** Runs argv in the running container as its user; output bounded per stream. */
  exec(argv: readonly string[], options: ExecOptions): Promise<ExecResult>;
  /** A TTY container's terminal size (the engine's resize); a gone container is not an error. */
  resize(size: TerminalSize, signal?: AbortSignal): Promise<void>;
  /** Idempotent: removing a removed container is not an error. */
  remove(): Promise<void>;
}

export interface ExecOptions {
  /** The process's working directory (Docker exec `WorkingDir`): every exec names its own. */
  readonly workingDir: string;
  readonly stdin?: Buffer | undefined;
  readonly maxOutputBytes: number;
  readonly signal?: AbortSignal | undefined;
  /**
   * The exec's own environment, in place of what the container would add to it (a gated
   * container's spec env): it is laid over the container's.
   */
  readonly env?: Readonly<Record<string, string>> | undefined;
  /**
   * Keeps the exec's stdin open after `stdin`, as cfh's channel to the process: when
   * `signal` aborts, `word` is written to it and the exec is waited for up to `graceMs`
   * more, so the process can end what it started and say so (tools/call-supervisor.ts).
   * Without it an abort lets go of the exec at once.
   */
  readonly stopWord?: { readonly word: Buffer; readonly graceMs: number } | undefined;
}

export interface ExecResult {
  readonly exitCode: number;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
}

export interface CreatedContainer extends AsyncDisposable {
  readonly id: string;
  readonly name: string;
  /** Must be called before start so no output is lost. */
  attach(signal?: AbortSignal, options?: AttachOptions): Promise<AttachedOutput>;
  start(signal?: AbortSignal, options?: StartOptions): Promise<StartedContainer>;
  remove(): Promise<void>;
}

export interface LabelledObject {
  readonly kind: 'container' | 'network' | 'volume';
  readonly id: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

export type ProgressListener = (line: string) => void;

export interface NetworkFacts {
  readonly id: string;
  readonly name: string;
  /** The host's address on the network's bridge. */
  readonly gateway: string;
  readonly subnet: string;
}

/** The egress guard: holds a sandbox's network namespace and its netfilter rules. */
export interface GuardSpec {
  readonly name: string;
  readonly image: string;
  readonly network: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Namespaced sysctls set at creation (/proc/sys is read-only inside). */
  readonly sysctls: Readonly<Record<string, string>>;
  /** The guard's own process (as its root, with NET_ADMIN), its stdin and stdout attached. */
  readonly command: readonly string[];
}

/** A process in the guard with its stdin and stdout attached (stderr is drained). */
export interface GuardProcess {
  readonly stdin: NodeJS.WritableStream;
  readonly stdout: Readable;
  close(): void;
}

/** Created, not started: a container may join its namespace now, and start once it runs. */
export interface CreatedGuard extends AsyncDisposable {
  readonly id: string;
  /** Attaches to the guard's own process, then starts the guard. */
  start(signal?: AbortSignal): Promise<GuardProcess>;
  remove(): Promise<void>;
}

/** Containers held paused; disposing the handle lets them run again. */
export interface FrozenContainers extends AsyncDisposable {
  readonly ids: readonly string[];
}

export interface ContainerRuntime {
  ping(signal?: AbortSignal): Promise<void>;
  /** An internal bridge network (no route out, no traffic between its members). */
  createIsolatedNetwork(
    name: string,
    labels: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): Promise<NetworkFacts>;
  createGuard(spec: GuardSpec, signal?: AbortSignal): Promise<CreatedGuard>;
  facts(signal?: AbortSignal): Promise<EngineFacts>;
  /** The cheap subset of facts: server and API version (no `docker info`). */
  version(signal?: AbortSignal): Promise<{ serverVersion: string; apiVersion: string }>;
  inspectImage(ref: string, signal?: AbortSignal): Promise<ImageFacts | undefined>;
  /** Every image carrying `label` (any value), newest first. */
  listImages(label: string, signal?: AbortSignal): Promise<ImageSummary[]>;
  /** Not forced: an image a container uses is refused (`image_in_use`). */
  removeImage(ref: string, signal?: AbortSignal): Promise<void>;
  createContainer(spec: ContainerSpec, signal?: AbortSignal): Promise<CreatedContainer>;
  /**
   * What the containers created with `usageGroup` used, read once every one is removed; the
   * group's accounting is released. Never throws: what cannot be read says why.
   */
  collectUsage(usageGroup: string, signal?: AbortSignal): Promise<RunResourceUsage>;
  /** Every container, network and volume carrying `label` (any value). */
  listLabelled(label: string, signal?: AbortSignal): Promise<LabelledObject[]>;
  removeObject(object: LabelledObject, signal?: AbortSignal): Promise<void>;
  /**
   * Every running container carrying `label=value`, paused (the cgroup freezer: no process
   * in it runs) until the returned handle is disposed. A container that stops meanwhile is
   * skipped: it runs nothing either.
   */
  freezeLabelled(label: string, value: string, signal?: AbortSignal): Promise<FrozenContainers>;
  importImage(
    rootfs: Readable,
    ref: { repo: string; tag: string },
    changes: readonly string[],
    signal?: AbortSignal,
  ): Promise<void>;
  pullImage(ref: string, onProgress: ProgressListener, signal?: AbortSignal): Promise<void>;
  buildImage(
    context: Readable,
    options: BuildOptions,
    onProgress: ProgressListener,
    signal?: AbortSignal,
  ): Promise<void>;
}
