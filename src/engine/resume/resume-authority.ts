// The authority-bearing configuration of a run, read the same way from both sides of a
// resume (AH-ART-4): from the old run's snapshot (what it ran with) and from the plan the
// resume made (what it would run with); resume-narrowing.ts compares the two.
import { canonicalJson } from '../../evidence/canonical-json.js';
import type { Snapshot } from '../../evidence/schema/snapshot.js';
import type { Profile } from '../../config/profile-schema.js';
import { parseSize } from '../../config/size.js';
import { WORKSPACE_TARGET } from '../../sandbox/mount-policy.js';
import { CA_BUNDLE_TARGET } from '../../sandbox/ca-bundle.js';
import type { RunPlan } from '../run/run-plan.js';
import type { AuthorityConfig, ModelRoute, MountGrant } from './resume-narrowing.js';
import type { SnapshotCfc } from '../../evidence/schema/snapshot.js';

/** Mounts cfh makes for itself (resolver, hosts, CA bundle): compared by their own fields. */
const OWN_TARGETS = new Set([WORKSPACE_TARGET, '/etc/resolv.conf', '/etc/hosts', CA_BUNDLE_TARGET]);

export function grantsOf(
  mounts: readonly { source: string; target: string; mode: 'ro' | 'rw' }[],
): MountGrant[] {
  return mounts
    .filter((m) => !OWN_TARGETS.has(m.target))
    .map((m) => ({ target: m.target, source: m.source, mode: m.mode }));
}

export function routeOf(route: Readonly<Record<string, string>>, adapter: string): ModelRoute {
  return {
    adapter,
    model: route.model ?? null,
    endpoint: route.baseURL ?? null,
    keySource: adapter === 'scripted' ? null : (route.credential ?? null),
  };
}

/** The CFC labels and clearances, without what names a run (the capture id). */
function cfcLabelsOf(cfc: SnapshotCfc | undefined): string {
  if (cfc === undefined) return canonicalJson(null);
  return canonicalJson({
    modelClearance: cfc.modelClearance,
    // A label earlier runs' writes raised only narrows: the configuration's is compared.
    mounts: cfc.mounts.map((m) => ({
      target: m.target,
      label: m.configured?.label ?? m.label,
      clearance: m.configured?.clearance ?? m.clearance,
    })),
    destinations: cfc.destinations,
    sinks: cfc.sinks,
  });
}

function fromProfile(
  profile: Profile,
): Pick<
  AuthorityConfig,
  'tools' | 'hostTools' | 'policy' | 'network' | 'limits' | 'budgets' | 'toolTimeoutSeconds'
> & { toolLifetime: AuthorityConfig['toolLifetime']; failOnBlocked: boolean } {
  return {
    tools: [...profile.tools],
    hostTools: profile.hostTools.map((t) => t.name),
    policy: profile.policy.map((r) => ({ decision: r.decision, json: canonicalJson(r) })),
    network: {
      mode: profile.network.mode,
      allow: [...profile.network.allow],
      deny: [...profile.network.deny],
      caBundle: profile.network.caBundle ?? null,
    },
    limits: {
      memoryBytes: parseSize('limits.memory', profile.limits.memory),
      cpus: profile.limits.cpus,
      pids: profile.limits.pids,
    },
    budgets: Object.fromEntries(
      Object.entries(profile.budgets).map(([k, v]) => [k, typeof v === 'number' ? v : null]),
    ),
    toolTimeoutSeconds: profile.toolTimeoutSeconds ?? null,
    toolLifetime: profile.toolLifetime,
    failOnBlocked: profile.failOnBlocked,
  };
}

/** What the old run ran with, from its snapshot and the profile its snapshot resolved. */
export function authorityOfSnapshot(snapshot: Snapshot, profile: Profile): AuthorityConfig {
  return {
    ...fromProfile(profile),
    mounts: grantsOf(snapshot.containerSpec.mounts),
    workspace: { hostPath: snapshot.workspace.hostPath, mode: snapshot.workspace.mode },
    runtime: snapshot.runtime.requested,
    image: snapshot.image.ref,
    user: snapshot.sandboxUser.user,
    cfcMode: snapshot.cfc?.mode ?? 'disabled',
    cfcLabels: cfcLabelsOf(snapshot.cfc),
    model: routeOf(snapshot.model?.route ?? {}, snapshot.model?.adapter ?? 'none'),
    ownerUid: snapshot.caller.uid ?? null,
    mode: snapshot.mode ?? 'run',
    commandEnv: Object.keys(snapshot.commandEnv ?? {}),
  };
}

/** What the resume would run with. */
export function authorityOfPlan(
  plan: RunPlan,
  cfc: SnapshotCfc,
  model: ModelRoute,
  mode: 'run' | 'plan',
): AuthorityConfig {
  return {
    ...fromProfile(plan.profile),
    mounts: grantsOf(plan.spec.mounts),
    workspace: {
      hostPath: plan.workspace,
      mode: plan.profile.workspace.mode,
    },
    runtime: plan.spec.runtime,
    image: plan.spec.image,
    user: plan.sandboxUser.user,
    cfcMode: plan.cfc.mode,
    cfcLabels: cfcLabelsOf(cfc),
    model,
    ownerUid: process.getuid?.() ?? null,
    mode,
    commandEnv: Object.keys(plan.commandEnv),
  };
}
