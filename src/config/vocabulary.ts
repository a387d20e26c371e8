// The governance extension's vocabulary (its "Tool registry contract" and "Permission
// decision object"): the closed sets of values a tool contract, a policy rule and a
// decision may use. Data only, so profiles, tools, the mediator and the evidence share
// one spelling.
import { z } from 'zod';

/** The extension's 15 risk classes. */
export const RiskClass = z.enum([
  'read_only',
  'search_only',
  'compute_only',
  'draft_only',
  'write_local',
  'write_internal',
  'write_external',
  'communication',
  'financial',
  'identity_access',
  'security_sensitive',
  'process_execution',
  'network_open_world',
  'destructive',
  'privileged_admin',
]);
export type RiskClass = z.infer<typeof RiskClass>;

/** The extension's 8 side-effect classes. */
export const SideEffectClass = z.enum([
  'none',
  'local_artifact',
  'internal_state_change',
  'external_commitment',
  'financial_transfer',
  'identity_or_access_change',
  'destructive_change',
  'process_or_network_execution',
]);
export type SideEffectClass = z.infer<typeof SideEffectClass>;

export const ResourceScope = z.enum(['user', 'session', 'project', 'organization', 'external']);
export type ResourceScope = z.infer<typeof ResourceScope>;

/** What the tool's own contract asks of the mediator (one tier of its policy). */
export const PermissionPolicy = z.enum([
  'allow',
  'deny',
  'approval_required',
  'stronger_auth',
  'sandbox',
  'draft_only',
]);
export type PermissionPolicy = z.infer<typeof PermissionPolicy>;

export const RetryPolicy = z.enum(['safe_retry', 'no_auto_retry', 'idempotent_only']);

/**
 * Risk classes whose calls are never replayed automatically, whatever the tool's
 * retryPolicy (AH-LIFE-5): a replay after a timeout may act a second time outside the run
 * (a message sent twice, a record changed twice). A profile that declares a replaying
 * retryPolicy for one is refused; the engine holds the same line for any tool.
 */
export const NEVER_REPLAYED: ReadonlySet<RiskClass> = new Set<RiskClass>([
  'communication',
  'write_external',
  'write_internal',
  'destructive',
  'financial',
  'identity_access',
  'security_sensitive',
  'privileged_admin',
]);
export type RetryPolicy = z.infer<typeof RetryPolicy>;

/**
 * What the evidence keeps of a call. AH-TOOL-3 sets the floor: identity, a bounded input
 * summary, outcome, timing and disposition are always recorded. `full_structured_event`
 * adds the raw outputs under outputs/; `metadata_only` and `none` keep their digests and
 * sizes only (`none` cannot go below the floor, so it reads as `metadata_only`).
 */
export const AuditPolicy = z.enum(['none', 'metadata_only', 'full_structured_event']);
export type AuditPolicy = z.infer<typeof AuditPolicy>;

export const DecisionValue = z.enum([
  'allow',
  'deny',
  'ask_user',
  'approval_required',
  'require_stronger_auth',
  'run_in_sandbox',
  'run_as_draft_only',
]);
export type DecisionValue = z.infer<typeof DecisionValue>;
