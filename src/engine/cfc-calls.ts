// A proposal's CFC part, before it is checked and decided (AH-CFC-18): the value handles in
// the model's input are resolved first, so the schema, the approval and the executor all see
// the value, and the handles' labels are the call's explicit inputs; a handle this run does
// not hold makes the call invalid (nothing runs). With the influence the turn was proposed
// under, that is what the mediator's flow gate judges (flow-gate.ts).
//
// Nothing a resolved value is made of goes back to the model side (AH-REF-4): the call is
// digested as the model sent it (the handle form), and every text cfh writes about it (why
// it is invalid, why it was refused) has each value replaced by its handle (`rehandle`).
import type { Label } from '../cfc/label.js';
import { explicitLabel, type HandleUse } from '../cfc/handles.js';
import { flowGateOf, type ProposalFlow } from '../mediator/flow-gate.js';
import type { CheckedCall } from '../mediator/policy.js';
import { Scrubber } from '../tools/host/scrub.js';
import { checkAgainst, type ToolCallDeps, type ToolUse } from './tool-call-deps.js';

/** What the CFC part of a check needs of the run's deps. */
export type CfcCheckDeps = Pick<ToolCallDeps, 'cfc' | 'registry' | 'runners' | 'recorder'>;

export interface CfcChecked {
  readonly checked: CheckedCall;
  readonly flow?: ProposalFlow | undefined;
  /** Text about the call with every resolved value as its handle; identity without handles. */
  readonly rehandle: (text: string) => string;
}

const same = (text: string): string => text;

/** Every spelling of each used value, in any text, replaced by its handle. */
function rehandler(used: readonly HandleUse[]): (text: string) => string {
  if (used.length === 0) return same;
  const scrubber = new Scrubber(
    used.map((u) => ({ name: u.handle, value: u.value, replacement: u.handle, fragments: false })),
  );
  return (text) => scrubber.text(text);
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
    return { checked: checkAgainst(tool, use.name, use.input), rehandle: same };
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
      rehandle: same,
    };
  if (resolution.kind === 'unknown') {
    if (tool === undefined) return { checked: { kind: 'unknown', name: use.name }, rehandle: same };
    const which = resolution.handles.join(', ');
    return {
      checked: {
        kind: 'invalid',
        tool,
        issues: `unknown value handle ${which} (this run holds no such handle; pass only a handle a result gave you)`,
      },
      rehandle: same,
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
        integrityCounts: u.integrityCounts,
      },
      true,
    );
  }
  const rehandle = rehandler(resolution.used);
  const resolved = checkAgainst(
    tool,
    use.name,
    resolution.used.length === 0 ? use.input : resolution.value,
  );
  // A schema's message may quote what it was given: the model hears the handle.
  const checked: CheckedCall =
    resolved.kind === 'invalid' ? { ...resolved, issues: rehandle(resolved.issues) } : resolved;
  const gate = flowGateOf(cfc);
  if (gate === undefined) return { checked, rehandle };
  return {
    checked,
    rehandle,
    flow: {
      gate,
      influence,
      explicit: resolution.used.map((u) => explicitLabel(u, influence)),
      handles: resolution.used.map((u) => u.handle),
    },
  };
}
