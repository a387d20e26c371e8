// The gate a carried model context passes before the run exists (AH-CFC-5/7, AH-CFC-12):
// whatever a run continues or is handed (a resumed or restored conversation, an approved
// plan, a prompt file, a delegated task) reaches its model whole with the first request, so
// under an enforce mode a context above the model's clearance refuses the run, and observe
// lets it through to be recorded as it does every would-be denial.
import { unclearedContexts, type CarriedContext } from '../../cfc/carried.js';
import type { CfcPlan } from '../../cfc/label-map.js';
import { isEnforcing } from '../../config/cfc-schema.js';
import { ConfigError } from '../../errors.js';

/** What a context is, for a message: the operator must be able to find it. */
function described(c: CarriedContext): string {
  switch (c.kind) {
    case 'slot':
      return `${c.slot?.flag ?? 'a prompt file'} '${c.slot?.file ?? '?'}'`;
    case 'plan':
      return `the plan of run ${c.fromRunId}`;
    case 'delegation':
      return `the task delegated by run ${c.fromRunId}`;
    default:
      return `the conversation of run ${c.fromRunId} (${c.kind})`;
  }
}

export function refuseUncleared(plan: CfcPlan, carried: readonly CarriedContext[]): void {
  if (!isEnforcing(plan.mode)) return;
  const [first] = unclearedContexts(carried, plan.modelClearance);
  if (first === undefined) return;
  const atoms = first.atoms.join(', ');
  throw new ConfigError(
    'context_uncleared',
    `${described(first.context)} holds [${atoms}], which this run's model is not cleared for (cfc.modelClearance [${plan.modelClearance.join(', ')}])`,
    { field: 'cfc.modelClearance', value: first.context.kind },
    `run it under a profile whose cfc.modelClearance includes ${atoms}${first.context.kind === 'slot' ? ', or leave the file out' : ''}`,
  );
}
