// Profile + request → ContainerSpec. Pure: the same inputs give the same spec, and the
// spec is what the substrate asks of the engine and what the snapshot records.
import type { Profile } from '../config/profile-schema.js';
import { parseSize } from '../config/size.js';
import { deriveSeccomp } from '../seccomp/derive.js';
import type { ContainerSpec, SpecMount } from '../substrate/container-spec.js';
import { WORKSPACE_TARGET } from './mount-policy.js';

/** Names that cfh sets in every container; a profile may override their values. */
export const BASE_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/tmp',
  LANG: 'C.UTF-8',
};

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
  /** Set when the posture is `allowlist` or `open`: the workload joins the guard's namespace. */
  readonly egress?: { readonly guard: string; readonly resolvConf: string } | undefined;
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
  return {
    name: inputs.containerName,
    image: inputs.imageRef,
    runtime: profile.runtime,
    engineRuntime: engineRuntimeName(profile.runtime, inputs.egress !== undefined),
    user: inputs.user,
    workingDir: WORKSPACE_TARGET,
    command: [...inputs.command],
    env: { ...BASE_ENV, ...profile.env },
    mounts:
      inputs.egress === undefined
        ? inputs.mounts
        : [
            ...inputs.mounts,
            { source: inputs.egress.resolvConf, target: '/etc/resolv.conf', mode: 'ro' as const },
          ],
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
    ...(inputs.usageGroup === undefined ? {} : { usageGroup: inputs.usageGroup }),
  };
}
