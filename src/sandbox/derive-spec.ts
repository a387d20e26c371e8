// Profile + request → ContainerSpec. Pure: the same inputs give the same spec, and the
// spec is what the substrate asks of the engine and what the snapshot records.
import type { Profile } from '../config/profile-schema.js';
import { parseSize } from '../config/size.js';
import { deriveSeccomp } from '../seccomp/derive.js';
import type { ContainerSpec, SpecMount } from '../substrate/container-spec.js';
import { CA_BUNDLE_ENV, CA_BUNDLE_TARGET } from './ca-bundle.js';
import { WORKSPACE_TARGET } from './mount-policy.js';

/** Names that cfh sets in every container; a profile may override their values. */
export const BASE_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/tmp',
  LANG: 'C.UTF-8',
};

/**
 * The sandbox's /etc/hosts under `disabled`: the engine leaves the file empty with no
 * network, so `localhost` would not resolve (glibc reads files, then DNS, which there is
 * none of) and a repository's localhost-server tests would fail on the name alone. Under a
 * network posture the workload shares the guard's, which names localhost already.
 */
export const LOOPBACK_HOSTS = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n';
/** Its name in the run directory, the mount's source. */
export const HOSTS_FILE = 'hosts';

export interface SpecInputs {
  readonly profile: Profile;
  readonly imageRef: string;
  readonly user: string;
  readonly mounts: readonly SpecMount[];
  readonly command: readonly string[];
  readonly containerName: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The run id: every container of the run is accounted together (its cgroup parent). */
  readonly usageGroup?: string | undefined;
  /** Planning mode: the seccomp filter refuses unix sockets (seccomp/argument-rules.ts). */
  readonly planning?: boolean | undefined;
  /** `--env`/`--env-file` variables, over the profile's env. */
  readonly commandEnv?: Readonly<Record<string, string>> | undefined;
  /** `forwarded`: cfh's stdin is streamed in (`-i`); else the workload's stdin is empty. */
  readonly stdin?: 'null' | 'forwarded' | undefined;
  readonly tty?: boolean | undefined;
  /** Set when the posture is `allowlist` or `open`: the workload joins the guard's namespace. */
  readonly egress?: { readonly guard: string; readonly resolvConf: string } | undefined;
  /** The canonical CA bundle cfh writes (sandbox/ca-bundle.ts), mounted at the trust path. */
  readonly caBundle?: string | undefined;
  /** Without egress: where cfh writes LOOPBACK_HOSTS, mounted read-only at /etc/hosts. */
  readonly hosts?: string | undefined;
}

/**
 * runsc's own network stack fails on bridged networks with this engine: with no network it
 * runs as `runsc` (`--network=none`); with an egress posture as `runsc-host`
 * (`--network=host`, passthrough to the guard's namespace, whose netfilter rules apply).
 */
export function engineRuntimeName(runtime: Profile['runtime'], withNetwork: boolean): string {
  return runtime === 'runsc' && withNetwork ? 'runsc-host' : runtime;
}

export function deriveContainerSpec(inputs: SpecInputs): ContainerSpec {
  const { profile } = inputs;
  const memoryBytes = parseSize('limits.memory', profile.limits.memory);
  const tmpfsBytes = parseSize('limits.tmpfs', profile.limits.tmpfs);
  const own: SpecMount[] = [];
  if (inputs.egress !== undefined)
    own.push({ source: inputs.egress.resolvConf, target: '/etc/resolv.conf', mode: 'ro' });
  if (inputs.egress === undefined && inputs.hosts !== undefined)
    own.push({ source: inputs.hosts, target: '/etc/hosts', mode: 'ro' });
  if (inputs.caBundle !== undefined)
    own.push({ source: inputs.caBundle, target: CA_BUNDLE_TARGET, mode: 'ro' });
  // Clients that keep their own trust store read the bundle too; a profile's env still wins.
  const caEnv =
    inputs.caBundle === undefined
      ? {}
      : Object.fromEntries(CA_BUNDLE_ENV.map((name) => [name, CA_BUNDLE_TARGET]));
  return {
    name: inputs.containerName,
    image: inputs.imageRef,
    runtime: profile.runtime,
    engineRuntime: engineRuntimeName(profile.runtime, inputs.egress !== undefined),
    user: inputs.user,
    workingDir: WORKSPACE_TARGET,
    command: [...inputs.command],
    // The command line's over the profile's, as the profile's over cfh's base: PATH too
    // (the operator's command, in the operator's sandbox; the gate never sees it). Clients
    // that keep their own trust store read the CA bundle; a profile's env still wins.
    env: { ...BASE_ENV, ...caEnv, ...profile.env, ...inputs.commandEnv },
    mounts: own.length === 0 ? inputs.mounts : [...inputs.mounts, ...own],
    tmpfs: { '/tmp': `rw,nosuid,nodev,size=${tmpfsBytes},mode=1777` },
    readOnlyRootfs: true,
    capDrop: ['ALL'],
    capAdd: [],
    noNewPrivileges: true,
    init: true,
    privileged: false,
    networkMode: inputs.egress === undefined ? 'none' : { join: inputs.egress.guard },
    seccomp: deriveSeccomp(
      profile.seccomp,
      profile.network.mode,
      profile.runtime,
      inputs.planning === true,
    ),
    mountCheck: profile.runtime === 'runc' ? 'gate' : 'recheck',
    limits: {
      memoryBytes,
      // Equal to memory: no swap, so the memory limit is a hard limit (OOM → 137).
      memorySwapBytes: memoryBytes,
      nanoCpus: Math.round(profile.limits.cpus * 1e9),
      pidsLimit: profile.limits.pids,
    },
    labels: inputs.labels,
    stdin: inputs.stdin ?? 'null',
    tty: inputs.tty === true,
    ...(inputs.usageGroup === undefined ? {} : { usageGroup: inputs.usageGroup }),
  };
}
