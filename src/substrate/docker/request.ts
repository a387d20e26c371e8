// The engine request for a ContainerSpec: everything the spec says, nothing it does not.
// Exported for the spec tests and `profiles show --resolved`: what we ask is what we record.
import type Docker from 'dockerode';
import type { ContainerSpec } from '../container-spec.js';
import { gatedCommand } from '../mount-gate.js';
import { cgroupParentOf } from './cgroup-usage.js';

/** `accounting: false`: without the cgroup parent (an engine on the systemd driver). */
export function toCreateOptions(
  spec: ContainerSpec,
  accounting = true,
): Docker.ContainerCreateOptions {
  const gated = spec.mountCheck === 'gate';
  // The gate reads cfh's word on stdin; a forwarded stdin follows it (substrate/docker/container.ts).
  const stdin = gated || spec.stdin === 'forwarded';
  const cgroupParent =
    accounting && spec.usageGroup !== undefined
      ? cgroupParentOf(spec.usageGroup, spec.name)
      : undefined;
  return {
    name: spec.name,
    Image: spec.image,
    // Gated: the gate runs first, with the image's env only, and hands the workload the
    // spec's env (mount-gate.ts); it reads cfh's word on stdin.
    Cmd: gated ? gatedCommand(spec) : [...spec.command],
    // The image is only the rootfs: its ENTRYPOINT would run before the gate and the
    // command, its HEALTHCHECK would exec a command cfh never recorded (preflight refuses a
    // VOLUME, which no request field can undo).
    Entrypoint: [''],
    Healthcheck: { Test: ['NONE'] },
    Env: gated ? [] : Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
    User: spec.user,
    WorkingDir: spec.workingDir,
    Labels: { ...spec.labels },
    AttachStdin: stdin,
    AttachStdout: true,
    AttachStderr: true,
    OpenStdin: stdin,
    // The attach that wrote it closing its stdin is the workload's end of file.
    StdinOnce: stdin,
    Tty: spec.tty === true,
    NetworkDisabled: spec.networkMode === 'none',
    HostConfig: {
      Runtime: spec.engineRuntime,
      Mounts: spec.mounts.map((m) => ({
        Type: 'bind' as const,
        Source: m.source,
        Target: m.target,
        ReadOnly: m.mode === 'ro',
        // Non-recursive: mounts below a source (a bind of the engine socket, say) stay out.
        BindOptions: { Propagation: 'rprivate' as const, NonRecursive: true },
      })),
      Tmpfs: { ...spec.tmpfs },
      ReadonlyRootfs: spec.readOnlyRootfs,
      CapDrop: [...spec.capDrop],
      CapAdd: [],
      SecurityOpt: ['no-new-privileges:true', `seccomp=${spec.seccomp.json}`],
      Init: spec.init,
      Privileged: spec.privileged,
      NetworkMode: spec.networkMode === 'none' ? 'none' : `container:${spec.networkMode.join}`,
      IpcMode: 'private',
      PidMode: '',
      UsernsMode: '',
      PublishAllPorts: false,
      PortBindings: {},
      Memory: spec.limits.memoryBytes,
      MemorySwap: spec.limits.memorySwapBytes,
      NanoCpus: spec.limits.nanoCpus,
      PidsLimit: spec.limits.pidsLimit,
      OomKillDisable: false,
      AutoRemove: false,
      RestartPolicy: { Name: 'no' },
      // Output reaches cfh by attach; the engine keeps no log file a flood could fill.
      LogConfig: { Type: 'none', Config: {} },
      // The run's accounting (substrate/docker/cgroup-usage.ts): limits stay on the container's own cgroup.
      ...(cgroupParent === undefined ? {} : { CgroupParent: cgroupParent }),
    },
  };
}
