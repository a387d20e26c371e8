// A sandbox network with an egress posture (`allowlist` or `open`): an internal
// bridge network of its own, a guard container holding the network namespace and its
// netfilter rules, and the egress gateway in cfh's process on the host side of that
// network. The workload joins the guard's namespace: created while the guard starts,
// started only once the guard's rules are in place (`ready`). Torn down in reverse; a
// failed set-up removes what it created and rethrows.
import { promises as dns } from 'node:dns';
import { CfhError, EngineError, errorMessage, HarnessInvariantError } from '../errors.js';
import type { Logger } from '../log.js';
import { parseDestinations, type Destination } from '../network/destination.js';
import { EgressGateway, type EgressEvent, type Resolve } from '../network/egress-gateway.js';
import { EgressPolicy } from '../network/egress-policy.js';
import { hasEgress } from '../config/postures.js';
import { guardCommand } from '../network/guard-rules.js';
import { hostAddresses } from '../network/host-addresses.js';
import {
  CONNTRACK_READER,
  conntrackLookup,
  type OriginalDestinationLookup,
} from '../network/original-destination.js';
import type { NetworkPosture } from '../config/profile-schema.js';
import type { ContainerRuntime, NetworkFacts } from '../substrate/runtime.js';
import { createEgressConfig, egressConfigDir, LABEL_EGRESS_CONFIG } from './egress-config.js';
import { removeTree } from '../remove-tree.js';
import { startGuard } from './guard-start.js';

export interface EgressNames {
  readonly network: string;
  readonly guard: string;
  /** Host directory holding the sandbox's resolv.conf (mounted read-only): egress-config.ts. */
  readonly configDir: string;
}

export function egressNames(runId: string): EgressNames {
  return {
    network: `cfh-net-${runId}`,
    guard: `cfh-guard-${runId}`,
    configDir: egressConfigDir(runId),
  };
}

/**
 * Created with the guard, where /proc/sys is read-only: loopback-sourced packets may be
 * routed out of the namespace (and their replies back in). The guard's rules DNAT
 * everything sent to the engine's embedded resolver (127.0.0.11) to the gateway, which
 * the kernel refuses for a loopback source without it (EINVAL on UDP, a silent drop on
 * TCP, measured under runc and runsc-host alike); the rules then masquerade such packets
 * to the guard's own address. Inbound, the namespace's only peer is the host (an internal
 * network of its own, inter-container traffic off), which is trusted.
 */
export const GUARD_SYSCTLS: Readonly<Record<string, string>> = {
  'net.ipv4.conf.all.route_localnet': '1',
};

/** Ports intercepted by name when no entry names one: HTTP and HTTPS. */
const DEFAULT_PORTS = [80, 443];

export function interceptPorts(allow: readonly Destination[]): number[] {
  const ports = new Set(DEFAULT_PORTS);
  for (const d of allow) if (d.kind !== 'cidr' && d.port !== undefined) ports.add(d.port);
  return [...ports].sort((a, b) => a - b);
}

export function pinnedAddresses(
  allow: readonly Destination[],
): { address: string; port: number }[] {
  return allow
    .filter(
      (d): d is Extract<Destination, { kind: 'cidr' }> =>
        d.kind === 'cidr' && d.port !== undefined && d.prefix === (d.family === 4 ? 32 : 128),
    )
    .map((d) => ({ address: d.address, port: d.port ?? 0 }));
}

export function resolverFor(upstream: string | undefined): Resolve {
  if (upstream === undefined) {
    return async (name) =>
      (await dns.lookup(name, { all: true, order: 'verbatim' })).map((a) => a.address);
  }
  const resolver = new dns.Resolver({ timeout: 2000, tries: 2 });
  resolver.setServers([upstream]);
  return async (name) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
    return [
      ...(v4.status === 'fulfilled' ? v4.value : []),
      ...(v6.status === 'fulfilled' ? v6.value : []),
    ];
  };
}

export interface OpenEgress extends AsyncDisposable {
  readonly network: NetworkFacts;
  readonly guardId: string;
  readonly gateway: EgressGateway;
  /**
   * Settles once the guard runs with its rules committed (or could not): nothing may start
   * in its namespace before it resolves. The guard exists already, so a container that
   * joins its namespace can be created meanwhile.
   */
  readonly ready: Promise<void>;
  /** How long each set-up step took, in order (bench/posture-setup.ts reads it). */
  readonly setupMs: Readonly<Record<string, number>>;
  close(): Promise<void>;
}

export async function openEgress(options: {
  readonly runtime: ContainerRuntime;
  readonly names: EgressNames;
  readonly image: string;
  readonly posture: NetworkPosture;
  readonly labels: Readonly<Record<string, string>>;
  readonly upstreamResolver: string | undefined;
  readonly onEvent: (event: EgressEvent) => void;
  readonly logger: Logger;
  readonly signal?: AbortSignal | undefined;
}): Promise<OpenEgress> {
  const { runtime, names, posture } = options;
  const mode = posture.mode;
  // Planning makes egress names only for a posture with egress (run-plan.ts).
  if (!hasEgress(mode))
    throw new HarnessInvariantError(
      'egress_without_posture',
      `egress opened for a ${mode} network`,
    );
  const undo: (() => Promise<void>)[] = [];
  const setupMs: Record<string, number> = {};
  let mark = performance.now();
  const step = (name: string): void => {
    const now = performance.now();
    setupMs[name] = Math.round((now - mark) * 10) / 10;
    mark = now;
  };
  const unwind = async (): Promise<void> => {
    for (const step of undo.reverse()) {
      await step().catch((e: unknown) => {
        options.logger.error({ err: errorMessage(e) }, 'egress teardown step failed');
      });
    }
    undo.length = 0;
  };
  try {
    const allow = parseDestinations('network.allow', posture.allow);
    const deny = parseDestinations('network.deny', posture.deny);
    // Labelled with the config directory so `cfh reap` finds it after a crash.
    const labels = { ...options.labels, [LABEL_EGRESS_CONFIG]: names.configDir };
    const network = await runtime.createIsolatedNetwork(names.network, labels, options.signal);
    step('network');
    undo.push(() =>
      runtime.removeObject({
        kind: 'network',
        id: network.id,
        name: network.name,
        labels,
      }),
    );
    const policy = new EgressPolicy({
      mode,
      allow,
      deny,
      hostAddresses: hostAddresses([network.gateway]),
    });
    // Filled in once the guard runs its conntrack reader (the gateway starts first: the
    // guard's rules need its ports).
    const lookup: { current?: OriginalDestinationLookup } = {};
    const gateway = await EgressGateway.start({
      policy,
      bindAddress: network.gateway,
      interceptPorts: interceptPorts(allow),
      pinned: pinnedAddresses(allow),
      resolve: resolverFor(options.upstreamResolver),
      onEvent: options.onEvent,
      originalDestination: (address, port, localPort) =>
        lookup.current?.(address, port, localPort) ?? Promise.resolve(undefined),
    });
    undo.push(() => gateway.close());
    step('gateway');
    await createEgressConfig(names.configDir, network.gateway);
    undo.push(() => removeTree(names.configDir));
    step('config');
    const guard = await runtime.createGuard(
      {
        name: names.guard,
        image: options.image,
        network: names.network,
        labels,
        sysctls: GUARD_SYSCTLS,
        command: guardCommand(gateway.endpoints, CONNTRACK_READER),
      },
      options.signal,
    );
    undo.push(() => guard.remove());
    step('guard-create');
    // The guard starts and installs its rules while the caller creates the workload; the
    // workload starts only after `ready` (fail closed: nothing runs in the namespace before).
    const conntrack: { close?: () => void } = {};
    undo.push(() => {
      conntrack.close?.();
      return Promise.resolve();
    });
    const ready = startGuard(guard, options.signal).then((proc) => {
      const reader = conntrackLookup(proc);
      conntrack.close = () => {
        reader.close();
      };
      lookup.current = reader.lookup;
      step('guard-start+rules');
    });
    // Awaited by the caller; a caller that fails before then must not leave it unhandled.
    ready.catch(() => undefined);
    const steps = [...undo];
    undo.length = 0;
    let closed = false;
    const close = async (): Promise<void> => {
      if (closed) return;
      closed = true;
      undo.push(...steps);
      await unwind();
    };
    return {
      network,
      guardId: guard.id,
      gateway,
      ready,
      setupMs,
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    await unwind();
    // A cancelled set-up is the run's cancellation (130/143), never a failed start (125):
    // the abort passes through untyped, as engineError passes it (substrate/docker/errors.ts).
    if (error instanceof CfhError || options.signal?.aborted === true) throw error;
    throw new EngineError('egress_setup_failed', `egress set-up failed: ${errorMessage(error)}`, {
      cause: error,
    });
  }
}
