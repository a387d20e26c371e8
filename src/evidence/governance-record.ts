// governance.jsonl: one record per proposed action (governance extension, "Schema"): the
// run's mode, the tool's risk and side-effect class, the decision and who made it, whether
// a side effect was committed, the observation's status, the budget at that moment. The
// schema enforces the extension's invariants structurally, in zod for cfh's own writer and
// readers and in the JSON Schema published at docs/schema/governance-record.schema.json
// (generated from this file by `npm run schemas`; a test keeps the two equal):
//   1. the model never appears as the deciding authority;
//   2. planning mode never commits a mutation;
//   3. no side effect is committed without an authorizing decision;
//   4. denied or pending decisions never commit;
//   5. high-risk commitments require a human authority;
//   6. a budget stop names the exhausted budget.
import { z } from 'zod';
import { ResourceScope, RiskClass, SideEffectClass } from '../config/vocabulary.js';

export const ALLOWING_DECISIONS = ['allow', 'run_in_sandbox', 'run_as_draft_only'] as const;
export const ASKING_DECISIONS = ['ask_user', 'approval_required', 'require_stronger_auth'] as const;
export const HIGH_RISK_CLASSES = [
  'financial',
  'identity_access',
  'security_sensitive',
  'destructive',
  'privileged_admin',
] as const;
export const HIGH_RISK_EFFECTS = [
  'external_commitment',
  'financial_transfer',
  'identity_or_access_change',
  'destructive_change',
] as const;
const BUDGETS = [
  'max_model_turns',
  'max_tool_calls',
  'max_parallel_tool_calls',
  'max_wall_time_seconds',
  'max_input_tokens',
  'max_output_tokens',
  'max_total_cost',
] as const;

export const BudgetStopName = z.enum(BUDGETS);

const Approver = z.strictObject({
  kind: z.literal('human'),
  user: z.string().min(1),
  surface: z.enum(['tty', 'flag', 'file', 'stdio']),
});

const Base = z.strictObject({
  schema: z.literal('cfh.governance/1'),
  call_id: z.string().regex(/^call-\d{4,}$/),
  timestamp: z.iso.datetime(),
  mode: z.enum(['run', 'plan']),
  tool: z.strictObject({
    name: z.string().min(1),
    risk_class: RiskClass.nullable(),
    side_effect_class: SideEffectClass.nullable(),
    resource_scope: ResourceScope.nullable(),
    executor: z.enum(['sandbox', 'host']).nullable(),
  }),
  decision: z.strictObject({
    value: z.enum([...ALLOWING_DECISIONS, ...ASKING_DECISIONS, 'deny']),
    policy_rule: z.string().min(1),
    reason: z.string(),
    // 1. Never the model: a policy outside it, or a person.
    decided_by: z.enum(['policy', 'human']),
    approver: Approver.nullable(),
    args_digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  }),
  side_effect_committed: z.boolean(),
  idempotency_key: z.string().nullable(),
  observation_status: z.enum([
    'success',
    'error',
    'denied',
    'approval_required',
    'timeout',
    'aborted',
  ]),
  budget: z.strictObject({
    model_turns: z.number().int().nonnegative(),
    tool_calls: z.number().int().nonnegative(),
    input_tokens: z.number().int().nonnegative(),
    output_tokens: z.number().int().nonnegative(),
    estimated_cost: z.number().nonnegative().nullable(),
    elapsed_seconds: z.number().nonnegative(),
  }),
  // 6. A budget stop names the budget (the enum has no empty or unknown value).
  budget_stop: z.strictObject({ budget: BudgetStopName }).optional(),
});

type BaseRecord = z.infer<typeof Base>;

const includes = (list: readonly string[], value: string | null): boolean =>
  value !== null && list.includes(value);

/** The invariants, as zod checks them (and as the JSON Schema's `allOf` says them). */
function invariants(r: BaseRecord, ctx: z.RefinementCtx): void {
  const d = r.decision;
  const fail = (message: string): void => {
    ctx.addIssue({ code: 'custom', message });
  };
  if ((d.decided_by === 'human') !== (d.approver !== null))
    fail('decided_by is human exactly when an approver is named');
  if (!r.side_effect_committed) return;
  // 2.
  if (r.mode === 'plan') fail('planning mode never commits a mutation');
  // 3. and 4.
  const allowing = includes(ALLOWING_DECISIONS, d.value);
  const approved = includes(ASKING_DECISIONS, d.value) && d.decided_by === 'human';
  if (!allowing && !approved)
    fail('a committed side effect needs an authorizing decision (denied and pending never commit)');
  // 5.
  const high =
    includes(HIGH_RISK_CLASSES, r.tool.risk_class) ||
    includes(HIGH_RISK_EFFECTS, r.tool.side_effect_class);
  if (high && d.decided_by !== 'human') fail('a high-risk commitment requires a human authority');
}

export const GovernanceRecord = Base.superRefine(invariants);
export type GovernanceRecord = z.infer<typeof GovernanceRecord>;

/** The same invariants for JSON Schema validators (draft 2020-12 `if`/`then`). */
const JSON_INVARIANTS = [
  {
    $comment: 'decided_by is human exactly when an approver is named',
    if: { properties: { decision: { properties: { decided_by: { const: 'human' } } } } },
    then: { properties: { decision: { properties: { approver: { type: 'object' } } } } },
    else: { properties: { decision: { properties: { approver: { type: 'null' } } } } },
  },
  {
    $comment: '2. planning mode never commits a mutation',
    if: { properties: { mode: { const: 'plan' } } },
    then: { properties: { side_effect_committed: { const: false } } },
  },
  {
    $comment: '3, 4. a committed side effect needs an authorizing decision',
    if: { properties: { side_effect_committed: { const: true } } },
    then: {
      properties: {
        decision: {
          anyOf: [
            { properties: { value: { enum: [...ALLOWING_DECISIONS] } } },
            {
              properties: {
                value: { enum: [...ASKING_DECISIONS] },
                decided_by: { const: 'human' },
              },
            },
          ],
        },
      },
    },
  },
  {
    $comment: '5. a high-risk commitment requires a human authority',
    if: {
      properties: {
        side_effect_committed: { const: true },
        tool: {
          anyOf: [
            { properties: { risk_class: { enum: [...HIGH_RISK_CLASSES] } } },
            { properties: { side_effect_class: { enum: [...HIGH_RISK_EFFECTS] } } },
          ],
        },
      },
    },
    then: { properties: { decision: { properties: { decided_by: { const: 'human' } } } } },
  },
];

/** The published JSON Schema: the structure from zod, the invariants added. */
export function governanceJsonSchema(): Record<string, unknown> {
  const structure = z.toJSONSchema(Base, { target: 'draft-2020-12' }) as Record<string, unknown>;
  return {
    ...structure,
    $id: 'https://cfh.invalid/schema/governance-record.schema.json',
    title: 'cfh governance record (one per proposed action)',
    allOf: JSON_INVARIANTS,
  };
}
