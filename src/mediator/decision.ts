// The permission decision object of the governance extension ("Permission decision
// object"), as cfh records it for every proposed call before any side effect. The harness
// decides outside the model; the approver is a human or nobody, never the model (AH-TOOL-4,
// AH-CFC-1).
import { z } from 'zod';
import { ResourceScope, RiskClass, SideEffectClass } from '../config/vocabulary.js';

export { DecisionValue } from '../config/vocabulary.js';
import { DecisionValue } from '../config/vocabulary.js';

/** Decisions that pause for a person before anything happens. */
export const ASKING: ReadonlySet<DecisionValue> = new Set([
  'ask_user',
  'approval_required',
  'require_stronger_auth',
]);
/** Decisions that let the call run (each with its own condition). */
export const ALLOWING: ReadonlySet<DecisionValue> = new Set([
  'allow',
  'run_in_sandbox',
  'run_as_draft_only',
]);

export type DecisionClass = 'deny' | 'ask' | 'allow';

export function classOf(decision: DecisionValue): DecisionClass {
  if (decision === 'deny') return 'deny';
  return ASKING.has(decision) ? 'ask' : 'allow';
}

/** Who approved: the OS user at a surface cfh controls. The model is never an approver. */
export const Approver = z.strictObject({
  kind: z.literal('human'),
  user: z.string().min(1),
  surface: z.enum(['tty', 'flag', 'file', 'stdio']),
});
export type Approver = z.infer<typeof Approver>;

export const PermissionDecision = z.strictObject({
  call_id: z.string(),
  tool_name: z.string(),
  /** Null for a tool that is not on the surface (it has no contract). */
  risk_class: RiskClass.nullable(),
  side_effect_class: SideEffectClass.nullable(),
  resource_scope: ResourceScope.nullable(),
  decision: DecisionValue,
  policy_rule: z.string().min(1),
  reason: z.string(),
  approver: Approver.nullable(),
  args_digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  timestamp: z.iso.datetime(),
});
export type PermissionDecision = z.infer<typeof PermissionDecision>;
