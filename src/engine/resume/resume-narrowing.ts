// What "narrows" means for each authority-bearing field of a resumed run (AH-ART-4): the
// configuration the old run recorded against the one the resume would run with. Pure: the
// caller extracts both sides (resume-authority.ts); every field is compared here, and a
// field that is neither equal nor narrower is a violation naming it. Nothing is narrower
// by default: a field not listed as orderable must be equal.
import { canonicalJson } from '../../evidence/canonical-json.js';
import { hasEgress, NETWORK_MODES, POSTURES, type NetworkMode } from '../../config/postures.js';
import { cfcStrength, type CfcMode } from '../../config/cfc-schema.js';
import { WORKSPACE_REACH, type WorkspaceMode } from '../../config/profile-schema.js';

export interface MountGrant {
  readonly target: string;
  readonly source: string;
  readonly mode: 'ro' | 'rw';
}

/** The model route: adapter, model and endpoint; for a scripted stand-in, its adapter only. */
export interface ModelRoute {
  readonly adapter: string;
  readonly model: string | null;
  readonly endpoint: string | null;
  /** Where the credential comes from (`env:ANTHROPIC_API_KEY`), or null (scripted). */
  readonly keySource: string | null;
}

export interface AuthorityConfig {
  readonly tools: readonly string[];
  /** Host tools by name; their programs and credentials are covered by the profile digest. */
  readonly hostTools: readonly string[];
  /** Policy rules, each as canonical JSON. */
  readonly policy: readonly { readonly decision: string; readonly json: string }[];
  /** Every bind mount but the workspace. */
  readonly mounts: readonly MountGrant[];
  readonly workspace: { readonly hostPath: string; readonly mode: WorkspaceMode };
  readonly network: {
    readonly mode: NetworkMode;
    readonly allow: readonly string[];
    readonly deny: readonly string[];
    readonly caBundle: string | null;
  };
  /** Bytes, CPUs, processes; null: no limit. */
  readonly limits: {
    readonly memoryBytes: number | null;
    readonly cpus: number | null;
    readonly pids: number | null;
  };
  /** Budget field → limit; null or absent: unlimited. */
  readonly budgets: Readonly<Record<string, number | null>>;
  readonly toolTimeoutSeconds: number | null;
  readonly toolLifetime: 'per-run' | 'per-call';
  readonly runtime: string;
  readonly image: string;
  readonly user: string;
  readonly cfcMode: CfcMode;
  /** The CFC labels and clearances (mounts, destinations, model), as canonical JSON. */
  readonly cfcLabels: string;
  readonly model: ModelRoute;
  /** The OS user whose credentials and engine the run used (the credential owner). */
  readonly ownerUid: number | null;
  readonly mode: 'run' | 'plan';
  readonly failOnBlocked: boolean;
  /** `--env` names: values are not evidence, so a run that had any cannot be restored. */
  readonly commandEnv: readonly string[];
}

export interface Violation {
  /** The field, as an operator names it (`network.mode`, `mounts[/data]`, `budgets.maxToolCalls`). */
  readonly field: string;
  readonly why: string;
}

/** Each posture's reach, from its record (config/postures.ts). */
const NETWORK_RANK: Readonly<Record<string, number>> = Object.fromEntries(
  NETWORK_MODES.map((m) => [m, POSTURES[m].reach]),
);
/** runsc (gVisor) holds the workload more tightly than runc. */
const RUNTIME_RANK: Readonly<Record<string, number>> = { runsc: 0, runc: 1 };

const same = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);
const shown = (v: unknown): string => (v === null ? 'none' : JSON.stringify(v));

/** A limit: null is unlimited, so any number narrows it and null never narrows a number. */
function limitViolation(field: string, was: number | null, now: number | null): Violation[] {
  if (now === was) return [];
  if (now === null) return [{ field, why: `unlimited where the run had ${was}` }];
  if (was !== null && now > was) return [{ field, why: `${now} is more than ${was}` }];
  return [];
}

function ranked<K extends string>(
  field: string,
  rank: Readonly<Record<string, number>>,
  was: K,
  now: K,
): Violation[] {
  const w = rank[was];
  const n = rank[now];
  if (was === now) return [];
  if (w === undefined || n === undefined || n > w)
    return [{ field, why: `'${now}' is broader than '${was}'` }];
  return [];
}

function equal(field: string, was: unknown, now: unknown, what = 'changed'): Violation[] {
  return same(was, now)
    ? []
    : [{ field, why: `${what}: ${shown(now)} where the run had ${shown(was)}` }];
}

function subset(field: string, was: readonly string[], now: readonly string[]): Violation[] {
  const extra = now.filter((x) => !was.includes(x));
  return extra.length === 0 ? [] : [{ field, why: `adds ${extra.join(', ')}` }];
}

function mountViolations(was: readonly MountGrant[], now: readonly MountGrant[]): Violation[] {
  const out: Violation[] = [];
  for (const m of now) {
    const field = `mounts[${m.target}]`;
    const old = was.find((o) => o.target === m.target);
    if (old === undefined) out.push({ field, why: `a mount the run did not have (${m.source})` });
    else if (old.source !== m.source)
      out.push({ field, why: `source ${m.source} where the run mounted ${old.source}` });
    else if (old.mode === 'ro' && m.mode === 'rw')
      out.push({ field, why: 'read-write where the run had it read-only' });
  }
  return out;
}

function policyViolations(
  was: AuthorityConfig['policy'],
  now: AuthorityConfig['policy'],
): Violation[] {
  const out: Violation[] = [];
  // Deny wins over ask over allow whatever the order: keeping every rule and adding only
  // deny or ask rules can only refuse or ask more.
  for (const r of was)
    if (!now.some((n) => n.json === r.json))
      out.push({ field: 'policy', why: `drops the rule ${r.json}` });
  for (const r of now)
    if (!was.some((o) => o.json === r.json) && r.decision === 'allow')
      out.push({ field: 'policy', why: `adds an allow rule ${r.json}` });
  return out;
}

function networkViolations(
  was: AuthorityConfig['network'],
  now: AuthorityConfig['network'],
): Violation[] {
  const out = ranked('network.mode', NETWORK_RANK, was.mode, now.mode);
  // With no network at all, the lists say nothing.
  if (hasEgress(now.mode)) {
    out.push(...subset('network.allow', was.allow, now.allow));
    const dropped = was.deny.filter((d) => !now.deny.includes(d));
    if (dropped.length > 0) out.push({ field: 'network.deny', why: `drops ${dropped.join(', ')}` });
    out.push(...equal('network.caBundle', was.caBundle, now.caBundle));
  }
  return out;
}

function budgetViolations(
  was: AuthorityConfig['budgets'],
  now: AuthorityConfig['budgets'],
): Violation[] {
  const fields = [...new Set([...Object.keys(was), ...Object.keys(now)])].sort();
  return fields.flatMap((f) => limitViolation(`budgets.${f}`, was[f] ?? null, now[f] ?? null));
}

/**
 * Every way `now` is not the same as or narrower than `was`, in field order; empty: the
 * resume may run with `now`.
 */
export function narrowingViolations(was: AuthorityConfig, now: AuthorityConfig): Violation[] {
  const cfc: Violation[] =
    // A run without CFC recorded no labels: what its context holds is unknown, so no
    // enforcing mode can be honest about it.
    was.cfcMode === 'disabled' && now.cfcMode !== 'disabled'
      ? [
          {
            field: 'cfc.mode',
            why: `the run recorded no labels (cfc disabled); its context cannot be held to '${now.cfcMode}'`,
          },
        ]
      : [
          ...(cfcStrength(now.cfcMode) < cfcStrength(was.cfcMode)
            ? [{ field: 'cfc.mode', why: `'${now.cfcMode}' is weaker than '${was.cfcMode}'` }]
            : []),
          ...equal('cfc.labels', was.cfcLabels, now.cfcLabels, 'labels or clearances changed'),
        ];
  return [
    ...subset('tools', was.tools, now.tools),
    ...equal('hostTools', was.hostTools, now.hostTools),
    ...policyViolations(was.policy, now.policy),
    ...mountViolations(was.mounts, now.mounts),
    ...equal('workspace', was.workspace.hostPath, now.workspace.hostPath),
    ...ranked('workspace.mode', WORKSPACE_REACH, was.workspace.mode, now.workspace.mode),
    ...networkViolations(was.network, now.network),
    ...limitViolation('limits.memory', was.limits.memoryBytes, now.limits.memoryBytes),
    ...limitViolation('limits.cpus', was.limits.cpus, now.limits.cpus),
    ...limitViolation('limits.pids', was.limits.pids, now.limits.pids),
    ...budgetViolations(was.budgets, now.budgets),
    ...limitViolation('toolTimeoutSeconds', was.toolTimeoutSeconds, now.toolTimeoutSeconds),
    // A container per call keeps less between calls than one per run.
    ...ranked('toolLifetime', { 'per-call': 0, 'per-run': 1 }, was.toolLifetime, now.toolLifetime),
    ...ranked('runtime', RUNTIME_RANK, was.runtime, now.runtime),
    ...equal('image', was.image, now.image),
    ...equal('user', was.user, now.user),
    ...cfc,
    ...modelViolations(was.model, now.model),
    ...equal('credentialOwner', was.ownerUid, now.ownerUid, 'another OS user'),
    ...ranked('mode', { plan: 0, run: 1 }, was.mode, now.mode),
    ...(was.failOnBlocked && !now.failOnBlocked
      ? [{ field: 'failOnBlocked', why: 'off where the run had it on' }]
      : []),
    ...(was.commandEnv.length > 0 || now.commandEnv.length > 0
      ? [
          {
            field: 'env',
            why: `--env values are not kept in the evidence (${[...was.commandEnv, ...now.commandEnv].join(', ')}); a run that had them cannot be restored`,
          },
        ]
      : []),
  ];
}

/**
 * The route: the adapter always; for a real provider also the model, the endpoint and the
 * credential's source. A scripted stand-in may replay another script (no credential, no
 * provider: `--script FILE` says what the "model" answers next).
 */
function modelViolations(was: ModelRoute, now: ModelRoute): Violation[] {
  const out = equal('model.adapter', was.adapter, now.adapter);
  if (out.length > 0 || now.adapter === 'scripted') return out;
  return [
    ...equal('model.model', was.model, now.model),
    ...equal('model.endpoint', was.endpoint, now.endpoint),
    ...equal('model.keySource', was.keySource, now.keySource),
  ];
}
