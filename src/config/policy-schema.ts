// The `policy:` rules of a profile, as data (docs/operators.md, "Policy"). How they are
// matched and evaluated is the mediator's (src/mediator/policy-rule.ts, policy.ts).
import { z } from 'zod';
import { DecisionValue, RiskClass, SideEffectClass } from './vocabulary.js';

const RULE_ID = /^[a-z0-9][a-z0-9._:-]{0,63}$/;

export const PolicyRule = z.strictObject({
  id: z
    .string()
    .regex(RULE_ID, 'lower-case letters, digits, . _ : -')
    .refine((id) => !id.startsWith('default:') && id !== 'planning_mode', {
      error: "ids 'default:*' and 'planning_mode' are cfh's own",
    }),
  match: z
    .strictObject({
      tool: z.string().min(1).max(200).optional(),
      riskClass: RiskClass.optional(),
      sideEffectClass: SideEffectClass.optional(),
      mode: z.enum(['run', 'plan']).optional(),
      args: z.record(z.string().min(1).max(200), z.string().max(1000)).optional(),
    })
    .default({}),
  decision: DecisionValue,
  reason: z.string().min(1).max(500),
});
export type PolicyRule = z.infer<typeof PolicyRule>;
