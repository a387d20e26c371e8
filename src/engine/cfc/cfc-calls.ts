// A proposal's CFC part, before it is checked and decided (AH-CFC-18): the value handles in
// the model's input are resolved, and the handles' labels are the call's explicit inputs; a
// handle this run does not hold makes the call invalid (nothing runs). With the influence
// the turn was proposed under, that is what the mediator's flow gate judges (flow-gate.ts).
//
// Nothing a resolved value is made of goes back to the model side (AH-REF-4): a call that
// used handles is checked, digested and decided as the model sent it (the handle form:
// tools/model-form.ts), so every status and text the model gets of it is the same whatever the
// values are. Where the resolved call would be judged otherwise (its schema, a policy
// rule, the flow), it does not run and gets the opaque answer of one that ran (`unfit`).
import type { Label } from '../../cfc/label.js';
import { explicitLabel, mentionsHandle, type HandleUse } from '../../cfc/handles.js';
import { flowGateOf, type ProposalFlow } from '../../mediator/flow-gate.js';
import type { CheckedCall } from '../../mediator/policy.js';
import { checkModelForm } from '../../tools/model-form.js';
import { checkAgainst, type ToolCallDeps, type ToolUse } from '../agent/tool-call-deps.js';

/** What the CFC part of a check needs of the run's deps. */
export type CfcCheckDeps = Pick<
  ToolCallDeps,
  'cfc' | 'registry' | 'runners' | 'recorder' | 'mediator'
>;

export interface CfcChecked {
  readonly checked: CheckedCall;
  readonly flow?: ProposalFlow | undefined;
  /** A call that used handles: its model form, which policy and the flow decide. */
  readonly policyArgs?: unknown;
  /** A call that used handles and may not run once resolved: why (held, never shown). */
  readonly unfit?: string | undefined;
}

/**
 * Why a call that used handles may not run once resolved, whatever its model form says:
 * keys that resolve alike, the schema on the resolved values, or a policy or flow decision
 * the resolved values would change. Undefined: the resolved call is what the model's form
 * was decided as. The reason is held behind the opaque answer (labelled), never shown.
 */
function unfitReason(
  deps: CfcCheckDeps,
  tool: NonNullable<ReturnType<CfcCheckDeps['registry']['get']>>,
  modelArgs: unknown,
  resolved: CheckedCall,
  flow: ProposalFlow | undefined,
): string | undefined {
  if (resolved.kind !== 'valid')
    return resolved.kind === 'invalid'
      ? `invalid arguments once resolved: ${resolved.issues}`
      : undefined;
  const asSent = deps.mediator.policy.decide({ kind: 'valid', tool, args: modelArgs });
  const asRun = deps.mediator.policy.decide(resolved);
  if (asSent.decision !== asRun.decision || asSent.rule !== asRun.rule)
    return `policy decides ${asRun.decision} (rule ${asRun.rule}) on the resolved arguments: ${asRun.reason}`;
  if (flow === undefined) return undefined;
  const flowSent = flow.gate.judge(tool, modelArgs, flow.influence, flow.explicit);
  const flowRun = flow.gate.judge(tool, resolved.args, flow.influence, flow.explicit);
  if (flowSent.verdict !== flowRun.verdict || flowSent.rule !== flowRun.rule)
    return `the flow decides ${flowRun.verdict} (rule ${flowRun.rule}) on the resolved arguments: ${flowRun.reason}`;
  return undefined;
}

/** The proposal checked (handles resolved first when CFC is on) and its flow inputs. */
export async function checkWithCfc(
  use: ToolUse,
  callId: string,
  deps: CfcCheckDeps,
  influence: Label | undefined,
): Promise<CfcChecked> {
  // The surface's tool, as check() (tool-call-deps.ts) finds it: on it and runnable.
  const found = deps.registry.get(use.name);
  const tool =
    found !== undefined && deps.runners[found.executor] !== undefined ? found : undefined;
  const cfc = deps.cfc;
  if (cfc === undefined || cfc.mode === 'disabled' || influence === undefined)
    return { checked: checkAgainst(tool, use.name, use.input) };
  const resolution = cfc.handles.resolve(use.input);
  const crossing =
    resolution.kind === 'unknown' ? resolution.handles : resolution.used.map((u) => u.handle);
  if (tool?.refusesHandles === true && crossing.length > 0)
    return {
      checked: {
        kind: 'invalid',
        tool,
        issues: `value handle ${crossing.join(', ')}: handles do not cross into a child run (say what the child needs in words)`,
      },
    };
  if (resolution.kind === 'unknown') {
    if (tool === undefined) return { checked: { kind: 'unknown', name: use.name } };
    const which = resolution.handles.join(', ');
    return {
      checked: {
        kind: 'invalid',
        tool,
        issues: `unknown value handle ${which} (this run holds no such handle; pass only a handle a result gave you)`,
      },
    };
  }
  if (resolution.used.length === 0)
    return withFlow(cfc, checkAgainst(tool, use.name, use.input), influence, []);
  if (tool === undefined) return { checked: { kind: 'unknown', name: use.name } };
  // Answered from the model's form (tools/model-form.ts): what it is told is the same whatever
  // the values are; the resolved call runs only where it is what that form was decided as.
  // The model's form (AH-CFC-18, AH-REF-4): issues at strings carrying a handle depend on
  // the value and are deferred to the resolved check, whose finding the model never hears.
  const model = checkModelForm(tool.input, use.input, mentionsHandle);
  if (model.kind === 'invalid') return { checked: { kind: 'invalid', tool, issues: model.issues } };
  for (const u of resolution.used) {
    await deps.recorder.event(
      'cfc_handle',
      {
        handle: u.handle,
        action: 'resolved',
        callId,
        label: { confidentiality: [...u.label.confidentiality], integrity: [...u.label.integrity] },
        integrityCounts: u.integrityCounts,
      },
      true,
    );
  }
  const base = withFlow(cfc, { kind: 'valid', tool, args: model.args }, influence, resolution.used);
  const resolved =
    resolution.collisions.length > 0
      ? ({
          kind: 'invalid',
          tool,
          issues: `${resolution.collisions.join(', ')} resolve to a key given twice`,
        } as const)
      : checkAgainst(tool, use.name, resolution.value);
  const unfit = unfitReason(deps, tool, model.args, resolved, base.flow);
  // The mediator decides the model's form (policyArgs); the executor gets the resolved one.
  const checked: CheckedCall =
    resolved.kind === 'valid' ? resolved : { kind: 'valid', tool, args: model.args };
  return { ...base, checked, policyArgs: model.args, ...(unfit === undefined ? {} : { unfit }) };
}

function withFlow(
  cfc: NonNullable<CfcCheckDeps['cfc']>,
  checked: CheckedCall,
  influence: Label,
  used: readonly HandleUse[],
): CfcChecked {
  const gate = flowGateOf(cfc);
  if (gate === undefined) return { checked };
  return {
    checked,
    flow: {
      gate,
      influence,
      explicit: used.map((u) => explicitLabel(u, influence)),
      handles: used.map((u) => u.handle),
    },
  };
}
