// The egress part of a run whose posture is `allowlist` or `open`: opens the
// network, guard and gateway, sends the gateway's events into the run's log, and records
// the gateway's identity (egress_ready) once the guard's rules are in force, before the
// workload starts.
import { errorMessage, HarnessInvariantError } from '../../errors.js';
import type { RunDirectory } from '../../evidence/run-directory.js';
import type { Logger } from '../../log.js';
import { EGRESS_EVIDENCE_BOUND, EgressEvidence } from '../../network/egress-evidence.js';
import { openEgress, type EgressNames, type OpenEgress } from '../../sandbox/egress-sandbox.js';
import type { ContainerRuntime } from '../../substrate/runtime.js';
import type { RunPlan } from './run-plan.js';
import { hasEgress } from '../../config/postures.js';

/** What the egress part needs of its run (the run session gives it). */
export interface EgressContext {
  readonly plan: RunPlan;
  readonly dir: RunDirectory;
  readonly log: Logger;
  readonly deps: {
    readonly runtime: ContainerRuntime;
    readonly egressResolver?: string | undefined;
  };
}

export async function openRunEgress(
  context: EgressContext,
  names: EgressNames,
  signal: AbortSignal,
): Promise<OpenEgress> {
  const { plan, dir, log, deps } = context;
  const mode = plan.profile.network.mode;
  // run-plan.ts plans an egress posture for these two modes only.
  if (!hasEgress(mode))
    throw new HarnessInvariantError(
      'egress_without_posture',
      'egress opened for a disabled network',
    );
  const failed = (err: unknown): void => {
    log.error({ err: errorMessage(err) }, 'egress event not recorded');
  };
  // What the sandbox makes the gateway say is bounded before it reaches the log.
  const evidence = new EgressEvidence({
    egress: (e) => {
      dir.events.append('egress', { ...e }).catch(failed);
    },
    summary: (s) => {
      dir.events.append('egress_summarised', { ...s, outcomes: [...s.outcomes] }).catch(failed);
    },
  });
  const opened = await openEgress({
    runtime: deps.runtime,
    names,
    image: plan.image.guard?.ref ?? plan.spec.image,
    posture: plan.profile.network,
    labels: plan.spec.labels,
    upstreamResolver: deps.egressResolver,
    onEvent: (e) => {
      evidence.record(e);
    },
    logger: log,
    signal,
  });
  // Closed: the gateway says nothing more, so what the bound still holds is written.
  const close = async (): Promise<void> => {
    await opened.close();
    evidence.close();
  };
  const ep = opened.gateway.endpoints;
  // Recorded once the rules are in force: before the workload starts (it may exist already).
  const ready = opened.ready.then(async () => {
    await dir.events.append(
      'egress_ready',
      {
        mode,
        networkId: opened.network.id,
        network: opened.network.name,
        subnet: opened.network.subnet,
        guardId: opened.guardId,
        gateway: {
          kind: 'in-process',
          pid: process.pid,
          address: ep.address,
          dnsPort: ep.dns,
          interceptPorts: Object.fromEntries(ep.byPort),
          pinned: [...ep.pinned],
        },
        evidenceBound: { ...EGRESS_EVIDENCE_BOUND },
      },
      true,
    );
  });
  ready.catch(() => undefined);
  return { ...opened, ready, close, [Symbol.asyncDispose]: close };
}
