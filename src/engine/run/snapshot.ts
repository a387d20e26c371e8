// snapshot.json: the run-start configuration, written before the container exists
// (AH-INV-1, AH-INV-2, AH-CONT-2, AH-CONT-4, AH-DIAG-2).
import { createHash } from 'node:crypto';
import os from 'node:os';
import { describeSpec } from '../../substrate/container-spec.js';
import type { PreflightFacts } from './preflight.js';
import type { RunPlan } from './run-plan.js';
import { CFC_OBSERVE_DETAIL, snapshotCfc } from '../cfc/cfc-plan.js';
import type { DraftRecord } from '../draft/draft-workspace.js';
import type { OwnerIdentity } from '../../sandbox/owner.js';
import { caBundleRecord } from '../../sandbox/ca-bundle.js';
import { CFH_VERSION } from '../../version.js';
import { isGvisorBinary } from '../../evidence/schema/snapshot.js';

export const SNAPSHOT_SCHEMA = 'cfh.snapshot/1';

/** Why a run's assurance is reduced (AH-DIAG-2), each a code and an operator's sentence. */
export interface AssuranceReason {
  readonly code:
    | 'seccomp-not-applied'
    | 'seccomp-widened'
    | 'root-user'
    | 'host-tools'
    | 'runtime-not-gvisor'
    | 'cfc-observe';
  readonly detail: string;
}

/** What the level rests on: the isolation the engine was found to apply. */
export interface AssuranceBasis {
  readonly code: 'container' | 'gvisor';
  readonly detail: string;
}

/**
 * `reduced` < `standard` < `strong`. `standard`: runc's kernel namespaces with the profile's
 * seccomp filter in the kernel, every capability dropped, no-new-privileges, a read-only
 * root and the start gate. `strong`: all that holds and the workload runs on gVisor, whose
 * user-space kernel serves its system calls, so a host-kernel bug is one layer further away.
 * Any reason makes it `reduced`, whatever the runtime.
 */
export interface Assurance {
  readonly level: 'standard' | 'reduced' | 'strong';
  /** The reasons' details, in order (kept for readers of `cfh.snapshot/1` before `reasons`). */
  readonly notes: readonly string[];
  readonly reasons: readonly AssuranceReason[];
  readonly basis: readonly AssuranceBasis[];
}

/**
 * Every way this run is held less tightly than the standard sandbox, said in the snapshot
 * and the report alike (AH-DIAG-2), and the isolation it rests on. The level is decided by
 * what preflight found the engine applies (the binary registered for each runtime name the
 * run uses), not by the runtime the profile asked for. There is no fallback to list: a
 * runtime asked for and not registered is refused (`runtime_unavailable`, 125), the model
 * gateway never moves to another route (AH-INV-5), and no observe-only mode exists.
 */
export function assuranceOf(plan: RunPlan, facts: PreflightFacts): Assurance {
  const reasons: AssuranceReason[] = [];
  const binaries = Object.entries(facts.runtimeBinaries ?? {});
  const notGvisor = binaries.filter(([, binary]) => !isGvisorBinary(binary));
  const gvisor = plan.spec.runtime === 'runsc' && binaries.length > 0 && notGvisor.length === 0;
  if (plan.spec.runtime === 'runsc' && !gvisor) {
    reasons.push({
      code: 'runtime-not-gvisor',
      detail: `runtime: runsc was asked, but the engine runs ${notGvisor.map(([n, b]) => `'${n}' as ${b === '' ? 'an unknown binary' : b}`).join(', ') || 'an unknown binary'}, not gVisor; the containers have no start gate (planned for runsc)`,
    });
  }
  if (facts.seccompEnforcement === 'not-applied-gvisor') {
    reasons.push({
      code: 'seccomp-not-applied',
      detail:
        "seccomp: the profile's filter is not installed (runsc without --oci-seccomp); the workload meets gVisor's own syscall surface instead",
    });
  }
  const g = plan.spec.seccomp.grants;
  const widened = [
    ...(g.allowPtrace ? ['allowPtrace'] : []),
    ...(g.allowIoUring ? ['allowIoUring'] : []),
    ...(g.allowUserNamespaces ? ['allowUserNamespaces'] : []),
    ...(g.allow32BitAbis ? ['allow32BitAbis'] : []),
    ...(g.allow.length > 0 ? [`allow: ${g.allow.join(', ')}`] : []),
  ];
  if (widened.length > 0)
    reasons.push({
      code: 'seccomp-widened',
      detail: `seccomp: the profile widens the filter (${widened.join('; ')})`,
    });
  // Root inside gains no capability and no syscall: every capability is still dropped,
  // no-new-privileges holds and the seccomp filter is the same; it owns root's files.
  if (/^(0|root)(:|$)/.test(plan.sandboxUser.user))
    reasons.push({
      code: 'root-user',
      detail: `user: the sandbox runs as root (${plan.sandboxUser.user}) ${plan.sandboxUser.reason === 'flag' ? 'as asked explicitly with --user' : "at the profile's request"}; capabilities still all dropped, no-new-privileges, the same seccomp filter`,
    });
  const hostTools = plan.profile.hostTools.map((t) => t.name);
  if (hostTools.length > 0)
    reasons.push({
      code: 'host-tools',
      detail: `host tools run on the host, outside the sandbox, with their declared authority (AH-TOOL-7): ${hostTools.join(', ')}`,
    });
  // AH-CFC-15: observe is never enforcement; said as reduced assurance, not left implicit.
  if (plan.cfc.mode === 'observe')
    reasons.push({ code: 'cfc-observe', detail: CFC_OBSERVE_DETAIL });
  const basis: AssuranceBasis[] = gvisor
    ? [
        {
          code: 'gvisor',
          detail: `gVisor (${binaries.map(([n, b]) => `${n}: ${b}`).join(', ')}; seccomp ${facts.seccompEnforcement}): the workload's system calls are served by gVisor's user-space kernel, not the host's`,
        },
      ]
    : [
        {
          code: 'container',
          detail: `${plan.spec.runtime === 'runsc' ? 'the registered runtime' : 'runc'}: kernel namespaces, the seccomp filter in the host kernel, no capabilities, no-new-privileges, read-only root`,
        },
      ];
  return {
    level: reasons.length > 0 ? 'reduced' : gvisor ? 'strong' : 'standard',
    notes: reasons.map((r) => r.detail),
    reasons,
    basis,
  };
}

export function buildSnapshot(
  plan: RunPlan,
  facts: PreflightFacts,
  owner: OwnerIdentity,
  draft?: DraftRecord,
): Record<string, unknown> {
  const userInfo = safeUserInfo();
  return {
    schema: SNAPSHOT_SCHEMA,
    cfhVersion: CFH_VERSION,
    runId: plan.runId,
    createdAt: new Date().toISOString(),
    kind: 'sandbox-command',
    caller: {
      host: owner.host,
      pid: owner.pid,
      // With the pid, tells a live cfh from a dead one across pid reuse (`runs list`).
      start: owner.start,
      uid: process.getuid?.(),
      gid: process.getgid?.(),
      user: userInfo,
    },
    // No model takes part in `sandbox run -- CMD` (AH-INV-2: stated, not omitted).
    model: null,
    // AH-CFC-15: every run records its CFC mode and plan; an agent run adds its capture.
    cfc: snapshotCfc(plan.cfc, plan.profile.cfc.mode, null),
    profile: {
      name: plan.profile.name,
      sources: plan.profileSources,
      digest: plan.profileDigest,
      overrides: plan.overrides,
      // Env values are the profile's literals, but may be sensitive: digests only (AH-INV-2).
      resolved: {
        ...plan.profile,
        env: digestValues(plan.profile.env),
        // A host tool's literal env values likewise; credentials are references already.
        hostTools: plan.profile.hostTools.map((t) => ({
          ...t,
          env: Object.fromEntries(
            Object.entries(t.env).map(([k, v]) => [
              k,
              'value' in v ? { value: digestValues({ v: v.value }).v } : v,
            ]),
          ),
        })),
      },
    },
    image: { ref: plan.spec.image, id: facts.image.id },
    engine: { serverVersion: facts.engine.serverVersion, apiVersion: facts.engine.apiVersion },
    runtime: {
      requested: plan.spec.runtime,
      engineRuntime: plan.spec.engineRuntime,
      ...(facts.runtimeArgs === undefined ? {} : { runtimeArgs: facts.runtimeArgs }),
      ...(facts.runtimeBinaries === undefined ? {} : { binaries: facts.runtimeBinaries }),
    },
    sandboxUser: plan.sandboxUser,
    workspace: {
      hostPath: plan.workspace,
      target: plan.spec.workingDir,
      mode: plan.profile.workspace.mode,
      // Draft: where the copy is and the digest of the host files it started from, so a
      // later apply can tell what changed on the host since (governance extension).
      ...(draft === undefined ? {} : { draft }),
    },
    // Class 9: which host-obeyed paths the containers got read-only (src/host-obeyed.ts);
    // each is in containerSpec.mounts too, with its identity.
    hostObeyed: {
      mode: plan.hostObeyed.mode,
      readOnly: plan.hostObeyed.mounts.map((m) => m.target),
      guarded: plan.hostObeyed.guarded,
    },
    workingDir: plan.spec.workingDir,
    command: plan.spec.command,
    // `-i`/`-t`: whether the command read cfh's stdin, and on a pseudo-terminal.
    io: { stdin: plan.spec.stdin ?? 'null', tty: plan.spec.tty === true },
    // `--env`/`--env-file`: names, where each came from, keyed digests; never a value.
    commandEnv: plan.commandEnv,
    // AH-CONT-4: the posture, its lists, and who enforces it.
    network: {
      ...plan.profile.network,
      // The bundle by digest and fingerprints (its certificates are in the run directory).
      ...(plan.caBundle === undefined ? {} : { caBundle: caBundleRecord(plan.caBundle) }),
      enforcement:
        plan.egress === undefined
          ? // AH-CONT-4: `lo` is up and the only interface; inet sockets reach it alone.
            { kind: 'no-interface', loopback: true }
          : {
              kind: 'egress-gateway',
              gateway: {
                kind: 'in-process',
                pid: owner.pid,
                host: owner.host,
                cfhVersion: CFH_VERSION,
              },
              // The guard runs cfh's own sandbox image, whatever the workload's is.
              guard: {
                name: plan.egress.guard,
                image: plan.image.guard?.ref ?? plan.spec.image,
                imageId: (facts.guardImage ?? facts.image).id,
              },
              network: { name: plan.egress.network, internal: true, interContainer: false },
            },
    },
    limits: { ...plan.spec.limits, wallTimeMs: plan.wallTimeMs, outputBytes: plan.outputBytes },
    containerSpec: withEnforcement(describeSpec(plan.spec), facts.seccompEnforcement),
    // AH-CONT-1: how every container is held to the checked mounts, and what planning found.
    mountChecks: {
      method: plan.spec.mountCheck,
      swappable: plan.mountChecks.swappable,
      engineSockets: plan.mountChecks.engineSockets,
    },
    seccomp: {
      file: 'seccomp.json',
      sha256: plan.spec.seccomp.sha256,
      source: plan.spec.seccomp.source,
      grants: plan.spec.seccomp.grants,
      enforcement: facts.seccompEnforcement,
    },
    assurance: assuranceOf(plan, facts),
    tools: [],
    childProfiles: [],
  };
}

function withEnforcement(
  described: Record<string, unknown>,
  enforcement: PreflightFacts['seccompEnforcement'],
): Record<string, unknown> {
  const seccomp = described.seccomp as Record<string, unknown>;
  return { ...described, seccomp: { ...seccomp, enforcement } };
}

function digestValues(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).map(([k, v]) => [
      k,
      `sha256:${createHash('sha256').update(v).digest('hex')}`,
    ]),
  );
}

function safeUserInfo(): string | undefined {
  try {
    return os.userInfo().username;
  } catch {
    return undefined;
  }
}
