// What a session's authority is made of, recorded at open (snapshot `session.authority`) and
// compared field by field when a session is restored (AH-INT-4): the workspace (path, mode
// and the directory's identity), the profile (name and digest), the policy, the model
// route and its credential (a keyed digest: another key on the same route is another
// owner), the mounts (each source's identity too: another directory at the same path is
// another mount), the network posture and the CFC configuration. Any difference fails
// closed, naming the fields: no change of metadata attaches a session to another authority.
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import { canonicalJson } from '../evidence/canonical-json.js';
import { snapshotCfc } from '../engine/cfc/cfc-plan.js';
import type { SnapshotCfc } from '../evidence/schema/snapshot.js';
import type { RunPlan } from '../engine/run/run-plan.js';
import type { ModelGateway } from '../model/gateway.js';
import { SessionError } from './session-error.js';

export type SessionAuthority = Readonly<Record<string, unknown>>;

/** The fields compared, in the order a mismatch names them. */
export const AUTHORITY_FIELDS = [
  'workspace',
  'profile',
  'policy',
  'model',
  'mounts',
  'network',
  'cfc',
  'mode',
  'approvals',
] as const;

function digestOf(value: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(value)).digest('hex')}`;
}

/** The workspace directory's identity: the same path holding another directory differs. */
function workspaceIdentity(dir: string): string {
  try {
    const st = statSync(dir);
    return `${st.dev}:${st.ino}`;
  } catch {
    return 'missing';
  }
}

export function authorityOf(
  plan: RunPlan,
  gateway: ModelGateway,
  mode: 'run' | 'plan',
  preApprovedRules: readonly string[],
  /** The model credential's keyed digest (tools/host/credentials.ts), null when there is none. */
  credential: string | null,
): SessionAuthority {
  const runDir = path.join(plan.artifactRoot, plan.runId);
  return {
    workspace: {
      hostPath: plan.workspace,
      mode: plan.workspaceMode,
      identity: workspaceIdentity(plan.workspace),
    },
    profile: { name: plan.profile.name, digest: plan.profileDigest, overrides: plan.overrides },
    policy: digestOf(plan.profile.policy),
    model: { adapter: gateway.adapter, route: gateway.route, credential },
    // Files of the run directory (hosts, CA bundle) are the run's own, named apart from its id
    // and made anew by each run; every other source by the object planning checked.
    mounts: plan.spec.mounts.map((m) => {
      const own = m.source.startsWith(`${runDir}/`);
      return {
        source: own ? `<run-dir>/${m.source.slice(runDir.length + 1)}` : m.source,
        target: m.target,
        mode: m.mode,
        identity: own || m.identity === undefined ? null : `${m.identity.dev}:${m.identity.ino}`,
      };
    }),
    network: digestOf({ posture: plan.profile.network, egress: plan.egress ?? null }),
    cfc: digestOf(configuredCfc(snapshotCfc(plan.cfc, plan.profile.cfc.mode, null))),
    mode,
    // Rules approved for the whole session are authority too.
    approvals: [...preApprovedRules].sort(),
  };
}

/** The fields whose recorded and present values differ. */
export function authorityMismatch(recorded: SessionAuthority, present: SessionAuthority): string[] {
  return AUTHORITY_FIELDS.filter(
    (f) => canonicalJson(recorded[f] ?? null) !== canonicalJson(present[f] ?? null),
  );
}

export function checkAuthority(
  sessionId: string,
  recorded: SessionAuthority,
  present: SessionAuthority,
): void {
  const fields = authorityMismatch(recorded, present);
  if (fields.length === 0) return;
  throw new SessionError(
    'session_restore_mismatch',
    `session ${sessionId} was opened with another ${fields.join(', ')}; not restored`,
    { sessionId, fields },
    'restore it with the profile, workspace, mounts, model and credential, network, CFC mode and approvals it was opened with',
  );
}

/**
 * The CFC plan as the configuration alone gives it: a label what earlier runs wrote raised
 * (and the withholding it led to) only narrows what the session may do, and a session's own
 * writes raise it between a run and its restore (cfc/written-labels.ts).
 */
function configuredCfc(cfc: SnapshotCfc): unknown {
  return {
    ...cfc,
    mounts: cfc.mounts.map((m) => ({
      target: m.target,
      writable: m.writable,
      label: m.configured?.label ?? m.label,
      clearance: m.configured?.clearance ?? m.clearance,
    })),
  };
}
