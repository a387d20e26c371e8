// The flow gate of the mediator (CFC integration profile, AH-CFC-9/11/18): the flow
// decision of a valid proposal, made outside the model from the labels cfh assigned
// (cfc/flow.ts), and what is recorded of it. The engine injects it with the proposal (a
// FlowGate over the run's CfcRuntime, plus the influence the turn was proposed under and the
// labels of the handles the call used), so the mediator needs nothing of the engine.
import type { CfcMode } from '../config/cfc-schema.js';
import { judgeFlow, type FlowVerdict } from '../cfc/flow.js';
import type { Label } from '../cfc/label.js';
import type { CfcRuntime } from '../cfc/runtime.js';
import type { EventInput } from '../evidence/schema/registry.js';
import type { ToolDefinition } from '../tools/contract.js';
import { ASKING, type Approver, type DecisionValue } from './decision.js';

/** Judges one call's flow; `mode` is never `disabled` (a disabled run has no gate). */
export interface FlowGate {
  readonly mode: Exclude<CfcMode, 'disabled'>;
  /** The capture record whose authority the context still carries (AH-CFC-9), or null. */
  authority(): string | null;
  judge(
    tool: ToolDefinition,
    args: unknown,
    influence: Label,
    explicit: readonly Label[],
  ): FlowVerdict;
}

/** What a proposal carries for the flow decision when CFC is on. */
export interface ProposalFlow {
  readonly gate: FlowGate;
  /** The model context's label when the turn's calls were proposed (one per turn). */
  readonly influence: Label;
  /** The labels of the handles the call used (AH-CFC-18): its explicit inputs. */
  readonly explicit: readonly Label[];
  readonly handles: readonly string[];
}

const gates = new WeakMap<CfcRuntime, FlowGate | undefined>();

/** The gate of a run's CFC state (one per runtime); none under `disabled`. */
export function flowGateOf(runtime: CfcRuntime): FlowGate | undefined {
  if (gates.has(runtime)) return gates.get(runtime);
  const mode = runtime.mode;
  const gate: FlowGate | undefined =
    mode === 'disabled'
      ? undefined
      : {
          mode,
          authority: () => runtime.authority(),
          judge: (tool, args, influence, explicit) =>
            judgeFlow({
              plan: runtime.plan,
              workspaceTarget: runtime.workspaceTarget,
              tool: {
                name: tool.name,
                riskClass: tool.riskClass,
                executor: tool.executor,
                cfc: tool.cfc,
              },
              args,
              influence,
              explicit,
              // What entered the per-run workload container before is in exec's reads (AH-CFC-10).
              container: tool.name === 'exec' ? runtime.containerLabel() : undefined,
            }),
        };
  gates.set(runtime, gate);
  return gate;
}

/** The `cfc_flow` event of a verdict. */
export function flowEvent(
  callId: string,
  tool: string,
  flow: ProposalFlow,
  v: FlowVerdict,
): EventInput<'cfc_flow'> {
  return {
    callId,
    tool,
    mode: flow.gate.mode,
    verdict: v.verdict,
    rule: v.rule,
    reason: v.reason,
    influence: labelRecord(v.influence),
    explicit: v.explicit === null ? null : labelRecord(v.explicit),
    label: labelRecord(v.label),
    sinks: v.sinks.map((s) => ({
      sink: s.sink,
      clearance: [...s.clearance],
      requires: [...s.requires],
    })),
    violations: v.violations.map((x) => ({
      sink: x.sink,
      uncleared: [...x.uncleared],
      missing: [...x.missing],
    })),
    authority: flow.gate.authority(),
    handles: [...flow.handles],
  };
}

/**
 * What a person's grant of a refused flow endorses (design.md 6/10: only a person): confidentiality a sink was
 * not cleared for is declassified, integrity a sink required is endorsed; a read of an
 * unlabelled source declassifies `unlabelled`. One event per kind.
 */
export function endorsements(
  callId: string,
  v: FlowVerdict,
  approver: Approver,
  argsDigest: string,
): EventInput<'cfc_endorsement'>[] {
  const c = new Set<string>();
  const i = new Set<string>();
  for (const x of v.violations) {
    for (const a of x.uncleared) c.add(a);
    for (const a of x.missing) i.add(a);
  }
  if (v.rule === 'cfc:unlabelled') c.add('unlabelled');
  const out: EventInput<'cfc_endorsement'>[] = [];
  if (c.size > 0)
    out.push({
      callId,
      kind: 'declassify',
      confidentiality: [...c].sort(),
      integrity: [],
      approver,
      argsDigest,
    });
  if (i.size > 0)
    out.push({
      callId,
      kind: 'endorse',
      confidentiality: [],
      integrity: [...i].sort(),
      approver,
      argsDigest,
    });
  return out;
}

function labelRecord(l: Label): { confidentiality: string[]; integrity: string[] } {
  return { confidentiality: [...l.confidentiality], integrity: [...l.integrity] };
}

/** What a decision records: the value, the rule it is under, and why. */
export interface RecordedDecision {
  readonly decision: DecisionValue;
  readonly rule: string;
  readonly reason: string;
}

/**
 * The decision a valid call gets from policy's verdict and its flow (AH-CFC-9/11): policy's,
 * unless the flow was denied and policy did not deny, when it asks a person under the flow's
 * rule (`approval_required`, or `require_stronger_auth` where policy asked for that), saying
 * policy's own question too. `gated`: the flow's question. The mediator records this; the
 * audit re-derives it from the recorded verdicts (checks-policy.ts).
 */
export function gatedDecision(
  policy: RecordedDecision,
  flow: { readonly verdict: string; readonly rule: string; readonly reason: string } | undefined,
): RecordedDecision & { readonly gated: boolean } {
  if (flow?.verdict !== 'deny' || policy.decision === 'deny') return { ...policy, gated: false };
  return {
    // Stronger authentication policy demands is not weakened by the flow's question.
    decision: policy.decision === 'require_stronger_auth' ? policy.decision : 'approval_required',
    rule: flow.rule,
    reason: ASKING.has(policy.decision)
      ? `${flow.reason}; policy also asks (rule ${policy.rule}: ${policy.reason})`
      : flow.reason,
    gated: true,
  };
}
