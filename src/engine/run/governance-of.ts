// What the evidence keeps of each proposed action, whatever became of it: its governance
// record (the extension's "Schema"), and the answer of a call the run's stop left
// unanswered (tool_call_aborted, an aborted observation, a decision by the stop).
import { BudgetStopName, type GovernanceRecord } from '../../evidence/governance-record.js';
import type { Ruling } from '../../mediator/mediator.js';
import { mutates, type CheckedCall } from '../../mediator/policy.js';
import { errorObservation, type Observation } from '../../tools/observation.js';
import { callIdOf, check, type ToolCallDeps, type ToolUse } from '../agent/tool-call-deps.js';

/**
 * The calls of a turn the run's stop left unanswered: each gets its `tool_call_aborted`
 * event, an `aborted` observation and its governance record; one the mediator never saw is
 * decided `deny` by the stop first (one decision per proposal). A call cut off while it ran
 * may have committed its side effect: its record says so (AH-TOOL-5; AH-LIFE-6).
 */
export async function abortUnanswered(
  uses: readonly ToolUse[],
  firstCall: number,
  deps: ToolCallDeps,
  settled: ReadonlyMap<string, Observation>,
  decided: ReadonlyMap<string, Ruling>,
  reason: string,
): Promise<Map<string, Observation>> {
  const answers = new Map<string, Observation>();
  for (const [i, use] of uses.entries()) {
    if (settled.has(use.id)) continue;
    const callId = callIdOf(firstCall + i);
    await deps.recorder.event('tool_call_aborted', {
      callId,
      toolUseId: use.id,
      tool: use.name,
      reason,
    });
    const observation = errorObservation('aborted', `not run: the run stopped (${reason})`);
    const checked = check(use, deps);
    const ruling =
      decided.get(use.id) ??
      (await deps.mediator.refuseForStop({ callId, toolUseId: use.id, checked }, reason));
    const ran = ruling.kind === 'authorized';
    const record = governanceOf(callId, checked, ruling, observation, deps, ran);
    const budget = BudgetStopName.safeParse(/^budget_exceeded:(.+)$/.exec(reason)?.[1]);
    await deps.recorder.governance(
      budget.success ? { ...record, budget_stop: { budget: budget.data } } : record,
    );
    answers.set(use.id, observation);
  }
  return answers;
}

/** The per-action record of the governance extension ("Schema"). */
export function governanceOf(
  callId: string,
  checked: CheckedCall,
  ruling: Ruling,
  observation: Observation,
  deps: ToolCallDeps,
  executed: boolean,
): GovernanceRecord {
  const tool = checked.kind === 'unknown' ? undefined : checked.tool;
  const d = ruling.decision;
  return {
    schema: 'cfh.governance/1',
    call_id: callId,
    timestamp: new Date().toISOString(),
    mode: deps.mode,
    tool: {
      name: d.tool_name,
      risk_class: d.risk_class,
      side_effect_class: d.side_effect_class,
      resource_scope: d.resource_scope,
      executor: tool?.executor ?? null,
    },
    decision: {
      value: d.decision,
      policy_rule: d.policy_rule,
      reason: d.reason,
      decided_by: d.approver === null ? 'policy' : 'human',
      approver: d.approver,
      args_digest: d.args_digest,
    },
    // A call that ran and can change something lasting committed its side effect (inside
    // the sandbox's rw mounts, in the draft, or through the host channel).
    side_effect_committed:
      executed && tool !== undefined && mutates(tool, deps.mediator.policy.facts),
    idempotency_key: ruling.kind === 'authorized' ? (ruling.call.idempotencyKey ?? null) : null,
    observation_status: observation.status,
    budget: deps.budgets.snapshot(),
  };
}
