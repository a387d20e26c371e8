// A sandbox's network: an internal bridge with no route out, and the egress guard that holds
// the sandbox's namespace and its netfilter rules (network/ owns the rules, this the objects).
import type Docker from 'dockerode';
import { z } from 'zod';
import { EngineError } from '../../errors.js';
import type { CreatedGuard, GuardSpec, NetworkFacts } from '../runtime.js';
import { createWhole } from './create.js';
import { engineError } from './errors.js';
import { DockerGuard } from './guard.js';
import type { HostTether } from './host-tether.js';

const NetworkAnswer = z.looseObject({
  Id: z.string(),
  IPAM: z
    .looseObject({
      Config: z
        .array(z.looseObject({ Gateway: z.string().optional(), Subnet: z.string().optional() }))
        .nullish(),
    })
    .nullish(),
});

/** An internal bridge network (no route out, no traffic between its members). */
export async function createIsolatedNetwork(
  docker: Docker,
  name: string,
  labels: Readonly<Record<string, string>>,
  signal?: AbortSignal,
): Promise<NetworkFacts> {
  signal?.throwIfAborted();
  try {
    const network = await docker.createNetwork({
      Name: name,
      Driver: 'bridge',
      Internal: true,
      CheckDuplicate: true,
      Labels: { ...labels },
      Options: { 'com.docker.network.bridge.enable_icc': 'false' },
    });
    const info = NetworkAnswer.parse(await network.inspect());
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

/** The guard's container: only what installing netfilter rules needs, never the workload. */
function guardCreateOptions(spec: GuardSpec): Docker.ContainerCreateOptions {
  return {
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
  };
}

export async function createGuard(
  docker: Docker,
  tether: HostTether,
  spec: GuardSpec,
  signal?: AbortSignal,
): Promise<CreatedGuard> {
  signal?.throwIfAborted();
  try {
    const container = await createWhole(docker, tether, guardCreateOptions(spec), signal);
    return new DockerGuard(container);
  } catch (error) {
    throw engineError(error, `create guard ${spec.name}`);
  }
}
