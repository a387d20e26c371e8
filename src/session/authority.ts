// What a session's authority is made of, recorded at open (snapshot `session.authority`) and
// compared field by field when a session is restored (AH-INT-4): the workspace (path, mode
// and the directory's identity), the profile (name and digest), the policy, the model
// route, the mounts, the network posture and the CFC configuration. Any difference fails
// closed, naming the fields: no change of metadata attaches a session to another authority.
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import { canonicalJson } from '../evidence/canonical-json.js';
import { snapshotCfc } from '../engine/cfc-plan.js';
import type { RunPlan } from '../engine/run-plan.js';
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
    model: { adapter: gateway.adapter, route: gateway.route },
    // Files of the run directory (hosts, CA bundle) are the run's own, named apart from its id.
    mounts: plan.spec.mounts.map((m) => ({
      source: m.source.startsWith(`${runDir}/`)
        ? `<run-dir>/${m.source.slice(runDir.length + 1)}`
        : m.source,
      target: m.target,
      mode: m.mode,
    })),
    network: digestOf({ posture: plan.profile.network, egress: plan.egress ?? null }),
    cfc: digestOf(snapshotCfc(plan.cfc, plan.profile.cfc.mode, null)),
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
    'restore it with the profile, workspace, mounts, model and CFC mode it was opened with',
  );
}
