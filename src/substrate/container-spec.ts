// The engine-neutral description of one sandbox container. Derived from a profile by
// src/sandbox, turned into an engine request only by src/substrate.
import type { MountMode } from '../config/profile-schema.js';

export interface SpecMount {
  /** Host path, already realpath-resolved and checked. */
  readonly source: string;
  readonly target: string;
  readonly mode: MountMode;
  /**
   * Device and inode of the object cfh checked (decimal). Every container of the run
   * mounts exactly this object or is refused: the source is re-checked before each create,
   * and under runc the start gate compares what the engine mounted (AH-CONT-1).
   */
  readonly identity?: MountIdentity | undefined;
}

export interface MountIdentity {
  readonly dev: string;
  readonly ino: string;
}

/** A container's seccomp filter, as derived by src/seccomp from its profile. */
export interface SeccompFilter {
  /** Where the filter came from, for the evidence: `derived:<base data schema>`. */
  readonly source: string;
  /** sha256 of `json`, the exact bytes the engine receives. */
  readonly sha256: string;
  readonly json: string;
  /** What the profile granted on top of the base. */
  readonly grants: {
    readonly allowPtrace: boolean;
    readonly allowIoUring: boolean;
    readonly allowUserNamespaces: boolean;
    readonly allow32BitAbis: boolean;
    readonly allow: readonly string[];
    /** The ABIs the filter covers (`x86_64`, with the grant also `i386`, `x32`); a syscall
     * through any other kills the calling thread (SIGSYS). */
    readonly abis: readonly string[];
    /** `*-loopback-inet`: AF_INET/AF_INET6 TCP and UDP, in a namespace that has only `lo`. */
    readonly socketFamilies:
      'unix-netlink-loopback-inet' | 'netlink-loopback-inet' | 'all-but-unix' | 'all';
  };
}

/** How the runtime applies the filter (recorded; AH-DIAG-2). */
export type SeccompEnforcement = 'kernel-seccomp' | 'gvisor-oci-seccomp' | 'not-applied-gvisor';

export interface ContainerSpec {
  readonly name: string;
  readonly image: string;
  readonly runtime: 'runc' | 'runsc';
  /** The runtime name registered with the engine. */
  readonly engineRuntime: string;
  readonly user: string;
  readonly workingDir: string;
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly mounts: readonly SpecMount[];
  readonly tmpfs: Readonly<Record<string, string>>;
  readonly readOnlyRootfs: true;
  readonly capDrop: readonly ['ALL'];
  readonly capAdd: readonly [];
  readonly noNewPrivileges: true;
  readonly init: true;
  readonly privileged: false;
  /** `none`: only lo. `join`: share the network namespace of the egress guard container. */
  readonly networkMode: 'none' | { readonly join: string };
  readonly seccomp: SeccompFilter;
  /**
   * How every container of the run is held to the mounts cfh checked: `gate` (runc: the
   * start gate compares device and inode inside the container before the workload runs)
   * or `recheck` (runsc, whose sandbox shows virtual inodes: the sources are re-checked
   * before each create, and planning refused any source another user could replace).
   */
  readonly mountCheck: 'gate' | 'recheck';
  readonly limits: {
    readonly memoryBytes: number;
    readonly memorySwapBytes: number;
    readonly nanoCpus: number;
    readonly pidsLimit: number;
  };
  readonly labels: Readonly<Record<string, string>>;
  /**
   * The workload's stdin: `null` (absent: /dev/null, or under the gate its word only, then
   * end of file) or `forwarded` (cfh streams its own stdin in once the workload runs; its
   * end closes the workload's stdin).
   */
  readonly stdin?: 'null' | 'forwarded' | undefined;
  /** A pseudo-terminal for the workload: stdout and stderr are its one stream. */
  readonly tty?: boolean | undefined;
  /**
   * The run whose resource accounting this container joins (its cgroup parent): every
   * container of one run shares it, so the run's usage can be read after they are gone.
   */
  readonly usageGroup?: string | undefined;
}

/** What the evidence shows of a spec: everything but env values and the filter body. */
export function describeSpec(spec: ContainerSpec): Record<string, unknown> {
  const { env, seccomp, ...rest } = spec;
  return {
    ...rest,
    envNames: Object.keys(env).sort(),
    seccomp: { source: seccomp.source, sha256: seccomp.sha256, grants: seccomp.grants },
  };
}
