// A proposal's CFC part, before it is checked and decided (AH-CFC-18): the value handles in
// the model's input are resolved first, so the schema, the digest, the approval and the
// executor all see the value, and the handles' labels are the call's explicit inputs; a
// handle this run never minted makes the call invalid (nothing runs). With the influence
// the turn was proposed under, that is what the mediator's flow gate judges (flow-gate.ts).
import type { Label } from '../cfc/label.js';
import { flowGateOf, type ProposalFlow } from '../mediator/flow-gate.js';
import type { CheckedCall } from '../mediator/policy.js';
import { checkAgainst, type ToolCallDeps, type ToolUse } from './tool-call-deps.js';

/** What the CFC part of a check needs of the run's deps. */
export type CfcCheckDeps = Pick<ToolCallDeps, 'cfc' | 'registry' | 'runners' | 'recorder'>;

export interface CfcChecked {
  readonly checked: CheckedCall;
  readonly flow?: ProposalFlow | undefined;
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
        issues: `unknown value handle ${which} (not minted in this run; pass only a handle a result gave you)`,
      },
    };
  }
  for (const u of resolution.used) {
    await deps.recorder.event(
      'cfc_handle',
      {
        handle: u.handle,
        action: 'resolved',
        callId,
        label: { confidentiality: [...u.label.confidentiality], integrity: [...u.label.integrity] },
        valueSha256: u.valueSha256,
        chars: u.chars,
      },
      true,
    );
  }
  const checked = checkAgainst(
    tool,
    use.name,
    resolution.used.length === 0 ? use.input : resolution.value,
  );
  const gate = flowGateOf(cfc);
  if (gate === undefined) return { checked };
  return {
    checked,
    flow: {
      gate,
      influence,
      explicit: resolution.used.map((u) => u.label),
      handles: resolution.used.map((u) => u.handle),
    },
  };
}
