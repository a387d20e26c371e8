// The mediator: every proposed call is decided here, outside the model, and recorded
// before anything happens (governance extension, "Core rule"; AH-TOOL-3/4, AH-CFC-1/11).
// It receives the whole proposal (tool, validated arguments or why they are not, call id)
// and the run's facts; policy decides (policy.ts); a decision that asks pauses for a
// person (approvals.ts); the decision object is written as a `permission_decision` event.
// Only then does a call that may run get an AuthorizedCall: the one thing an executor
// accepts, and a thing nothing outside this module can make.
import { createHash, randomUUID } from 'node:crypto';
import { MediatorError } from '../errors.js';
import { canonicalJson } from '../evidence/canonical-json.js';
import type { ToolDefinition } from '../tools/contract.js';
import type { Approvals, ApprovalAnswer } from './approvals.js';
import { ALLOWING, ASKING, type Approver, type PermissionDecision } from './decision.js';
import type { EventInput, EventType } from '../evidence/schema/registry.js';
import type { CheckedCall, Policy } from './policy.js';
import { endorsements, flowEvent, gatedDecision, type ProposalFlow } from './flow-gate.js';
import { joinAll, type Label } from '../cfc/label.js';
import type { FlowVerdict } from '../cfc/flow.js';

export interface DecisionRecorder {
  /** One event of the registry (src/evidence/schema/registry.ts), of its type's shape. */
  event<T extends EventType>(type: T, data: EventInput<T>, durable?: boolean): Promise<void>;
}

/** Waiting for a person is not the agent's time: the wall-time budget pauses (budgets.ts). */
export interface WaitClock {
  pause(): void;
  resume(): void;
}

/** A proposal as the model made it, and what checking it against the surface found. */
export interface Proposal {
  readonly callId: string;
  readonly toolUseId: string;
  readonly checked: CheckedCall;
  /** CFC on: what the flow decision needs (flow-gate.ts); absent: no flow decision. */
  readonly flow?: ProposalFlow | undefined;
  /**
   * The input as the model sent it, where it named value handles or host-tool references:
   * the call is digested in that form, so the digest the model side sees (and an approval
   * names) says nothing of the values (AH-REF-4); the executor still gets `checked.args`.
   */
  readonly modelArgs?: unknown;
  /**
   * A call that used value handles: its arguments as the model sent them (the handle form),
   * which policy and the flow decide, so the decision the model hears is the same whatever
   * the values are (AH-CFC-18); the caller does not run a resolved call judged otherwise.
   */
  readonly policyArgs?: unknown;
}

const TOKEN: unique symbol = Symbol('cfh.authorized-call');
const issued = new WeakSet<AuthorizedCall>();

/**
 * A call the mediator let run, with the decision that let it. Its constructor needs a
 * value only this module holds, and `isAuthorized` tells a real one from a look-alike.
 */
export class AuthorizedCall {
  readonly callId: string;
  readonly tool: ToolDefinition;
  readonly args: unknown;
  readonly decision: PermissionDecision;
  /** High-risk commits carry one (and are never retried automatically). */
  readonly idempotencyKey: string | undefined;
  /**
   * CFC on: the label the call was judged under (its influence joined with what it used
   * explicitly), which whatever it hands on carries (a child's task: cfc/carried.ts).
   */
  readonly label: Label | undefined;
  /**
   * CFC on: what the flow decision judged the call's writes to carry (influence, explicit
   * inputs and what it reads first) and the sinks it reaches: what the engine records as
   * written into the host trees it may write (cfc/written-labels.ts), before it runs.
   */
  readonly judged: { readonly label: Label; readonly sinks: readonly string[] } | undefined;

  constructor(
    token: typeof TOKEN,
    callId: string,
    tool: ToolDefinition,
    args: unknown,
    decision: PermissionDecision,
    idempotencyKey: string | undefined,
    label?: Label,
    judged?: FlowVerdict,
  ) {
    if (token !== TOKEN)
      throw new MediatorError('mediation_failed', 'an AuthorizedCall comes from the mediator only');
    this.callId = callId;
    this.tool = tool;
    this.args = args;
    this.decision = decision;
    this.idempotencyKey = idempotencyKey;
    this.label = label;
    this.judged =
      judged === undefined
        ? undefined
        : { label: judged.label, sinks: judged.sinks.map((x) => x.sink) };
    issued.add(this);
  }
}

export function isAuthorized(call: unknown): call is AuthorizedCall {
  return call instanceof AuthorizedCall && issued.has(call);
}

/** Decided: either it may run, or why not and what the model is told. */
export type Ruling =
  | {
      readonly kind: 'authorized';
      readonly decision: PermissionDecision;
      readonly call: AuthorizedCall;
    }
  | {
      readonly kind: 'refused';
      readonly decision: PermissionDecision;
      /** `denied`: policy or a person said no; `approval_required`: nobody could be asked. */
      readonly status: 'denied' | 'approval_required';
      readonly reason: string;
      readonly approver: Approver | null;
    };

import { isHighRisk } from './risk.js';

export { isHighRisk };

export function argsDigest(tool: string, args: unknown): string {
  return `sha256:${createHash('sha256')
    .update(canonicalJson({ tool, args: args ?? null }))
    .digest('hex')}`;
}

export class Mediator {
  readonly policy: Policy;
  readonly #approvals: Approvals;
  readonly #recorder: DecisionRecorder;
  readonly #clock: WaitClock | undefined;
  /** Every decision recorded, by call id: one per proposal, whatever happens after it. */
  readonly #decided = new Map<string, PermissionDecision>();

  constructor(options: {
    policy: Policy;
    approvals: Approvals;
    recorder: DecisionRecorder;
    clock?: WaitClock | undefined;
  }) {
    this.policy = options.policy;
    this.#approvals = options.approvals;
    this.#recorder = options.recorder;
    this.#clock = options.clock;
  }

  /**
   * Policy and, with CFC on, the flow (AH-CFC-9/11). Both are evaluated and a call runs only
   * if both let it: a policy `deny` stands whatever the flow says; a flow `deny` (enforce
   * modes) turns the decision into `approval_required` under the flow's rule, so a person
   * may endorse or declassify it through the usual approval surfaces; a grant of it is
   * recorded (`cfc_endorsement`) and, where policy asks too, policy's own question is asked
   * after it under policy's rule, so approving a flow rule never answers a policy rule.
   * Nobody to ask: refused `approval_required`, never silently allowed. `would_deny`
   * (observe) is recorded only. The `cfc_flow` record is durable before the decision's.
   */
  async decide(proposal: Proposal, signal: AbortSignal): Promise<Ruling> {
    const { checked } = proposal;
    // What is digested, decided, approved and run is one value nothing can change after.
    if (checked.kind === 'valid') deepFreeze(checked.args);
    const decided =
      checked.kind === 'valid' && proposal.policyArgs !== undefined
        ? { ...checked, args: proposal.policyArgs }
        : checked;
    const verdict = this.policy.decide(decided);
    const flow =
      decided.kind === 'valid' && proposal.flow !== undefined
        ? proposal.flow.gate.judge(
            decided.tool,
            decided.args,
            proposal.flow.influence,
            proposal.flow.explicit,
          )
        : undefined;
    if (flow !== undefined && proposal.flow !== undefined)
      await this.#recorder.event(
        'cfc_flow',
        flowEvent(
          proposal.callId,
          checked.kind === 'valid' ? checked.tool.name : '',
          proposal.flow,
          flow,
        ),
        true,
      );
    const ruled = gatedDecision(verdict, flow);
    const gated = ruled.gated ? flow : undefined;
    const policyAsks = ASKING.has(verdict.decision);
    const decision = decisionObject(proposal, ruled.decision, ruled.rule, ruled.reason);
    // Durable before any side effect: the executor can only run what comes after this.
    await this.#recorder.event('permission_decision', { ...decision }, true);
    this.#decided.set(proposal.callId, decision);
    if (checked.kind !== 'valid' || verdict.decision === 'deny')
      return refused(decision, 'denied', verdict.reason, null);
    if (gated !== undefined) {
      const answer = await this.#ask(proposal, checked, decision, signal);
      if (answer === undefined)
        return unanswered(decision, decision.reason, decision, proposal.modelArgs !== undefined);
      if (!answer.granted)
        return refused(decision, 'denied', `not approved: ${answer.why}`, answer.approver);
      for (const e of endorsements(proposal.callId, gated, answer.approver, decision.args_digest))
        await this.#recorder.event('cfc_endorsement', e, true);
      if (!policyAsks)
        return this.#authorize(proposal, checked, { ...decision, approver: answer.approver }, flow);
    }
    if (ALLOWING.has(verdict.decision)) return this.#authorize(proposal, checked, decision, flow);
    if (!policyAsks) return refused(decision, 'denied', verdict.reason, null);
    // Policy's own question, under policy's rule (after an endorsement, a second question).
    const asked =
      gated === undefined
        ? decision
        : {
            ...decision,
            decision: verdict.decision,
            policy_rule: verdict.rule,
            reason: verdict.reason,
          };
    const answer = await this.#ask(proposal, checked, asked, signal);
    if (answer === undefined)
      return unanswered(decision, verdict.reason, asked, proposal.modelArgs !== undefined);
    if (!answer.granted)
      return refused(decision, 'denied', `not approved: ${answer.why}`, answer.approver);
    return this.#authorize(proposal, checked, { ...decision, approver: answer.approver }, flow);
  }

  /**
   * A proposal the run's stop left undecided (a budget, a cancellation, a failure): decided
   * `deny` by that stop, so the evidence holds one decision per proposal all the same.
   */
  async refuseForStop(proposal: Proposal, stop: string): Promise<Ruling> {
    const reason = `not run: the run stopped (${stop})`;
    // Decided already, and stopped while a person was asked: that decision stands alone.
    const earlier = this.#decided.get(proposal.callId);
    if (earlier !== undefined) return refused(earlier, 'denied', reason, null);
    const decision = decisionObject(proposal, 'deny', `stop:${stop}`, reason);
    await this.#recorder.event('permission_decision', { ...decision }, true);
    this.#decided.set(proposal.callId, decision);
    return refused(decision, 'denied', decision.reason, null);
  }

  #authorize(
    proposal: Proposal,
    checked: Extract<CheckedCall, { kind: 'valid' }>,
    decision: PermissionDecision,
    judged: FlowVerdict | undefined,
  ): Ruling {
    const key = isHighRisk(checked.tool) ? randomUUID() : undefined;
    const flow = proposal.flow;
    const call = new AuthorizedCall(
      TOKEN,
      proposal.callId,
      checked.tool,
      checked.args,
      decision,
      key,
      flow === undefined ? undefined : joinAll(flow.influence, flow.explicit),
      judged,
    );
    return { kind: 'authorized', decision, call };
  }

  async #ask(
    proposal: Proposal,
    checked: Extract<CheckedCall, { kind: 'valid' }>,
    decision: PermissionDecision,
    signal: AbortSignal,
  ): Promise<ApprovalAnswer | undefined> {
    const request = {
      callId: proposal.callId,
      tool: checked.tool,
      args: checked.args,
      argsDigest: decision.args_digest,
      decision: decision.decision,
      rule: decision.policy_rule,
      reason: decision.reason,
    };
    await this.#recorder.event(
      'approval_requested',
      {
        callId: proposal.callId,
        tool: checked.tool.name,
        rule: decision.policy_rule,
        decision: decision.decision,
        argsDigest: decision.args_digest,
        // Who may answer, in the order asked: the OS user at each surface; never the model.
        approvers: this.#approvals.approvers,
      },
      true,
    );
    const started = performance.now();
    const received = (
      data: Pick<EventInput<'approval_received'>, 'outcome' | 'approver' | 'scope' | 'why'>,
    ): Promise<void> =>
      this.#recorder.event(
        'approval_received',
        {
          callId: proposal.callId,
          rule: decision.policy_rule,
          argsDigest: decision.args_digest,
          ...data,
          // Not the agent's time: the wall-time budget was paused for it.
          waitedMs: Math.round(performance.now() - started),
        },
        true,
      );
    this.#clock?.pause();
    let answer: ApprovalAnswer | undefined;
    try {
      answer = await this.#approvals.answer(request, signal);
    } catch (error) {
      // Cancelled while a person was asked (SIGINT at the prompt): nothing of the call runs.
      if (signal.aborted) await received({ outcome: 'cancelled', approver: null });
      throw error;
    } finally {
      this.#clock?.resume();
    }
    await received({
      outcome: answer === undefined ? 'unavailable' : answer.granted ? 'granted' : 'refused',
      approver: answer?.approver ?? null,
      ...(answer?.granted === true ? { scope: answer.scope } : {}),
      ...(answer?.granted === false ? { why: answer.why } : {}),
    });
    return answer;
  }
}

/** The extension's decision object for a proposal (no approver yet). */
function decisionObject(
  proposal: Proposal,
  value: PermissionDecision['decision'],
  rule: string,
  reason: string,
): PermissionDecision {
  const { checked } = proposal;
  const tool = checked.kind === 'unknown' ? undefined : checked.tool;
  const name = checked.kind === 'unknown' ? checked.name : checked.tool.name;
  return {
    call_id: proposal.callId,
    tool_name: name,
    risk_class: tool?.riskClass ?? null,
    side_effect_class: tool?.sideEffectClass ?? null,
    resource_scope: tool?.resourceScope ?? null,
    decision: value,
    policy_rule: rule,
    reason,
    approver: null,
    args_digest: argsDigest(
      name,
      proposal.modelArgs ?? (checked.kind === 'valid' ? checked.args : undefined),
    ),
    timestamp: new Date().toISOString(),
  };
}

/** Freezes a validated input all the way down (it is plain JSON data). */
function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  for (const v of Object.values(value)) deepFreeze(v);
  Object.freeze(value);
}

/**
 * Nobody could be asked: refused `approval_required` naming the rule (AH-CFC-11), and the
 * operator's two ways to grant it, exactly as they are written (a CFC rule's grant is an
 * endorsement or a declassification: only a person gives it, never the model's words).
 */
function unanswered(
  decision: PermissionDecision,
  reason: string,
  asked: PermissionDecision,
  asSent: boolean,
): Ruling {
  const rule = asked.policy_rule;
  // A call naming handles or references is digested over run-salted names: the digest is
  // the operator's, in the evidence (permission_decision), and the model's text names the
  // call, so it reads the same in every run whatever the values are (AH-REF-4).
  const digest = asSent
    ? `the argsDigest of ${asked.call_id}'s permission_decision`
    : asked.args_digest;
  const entry = asSent ? digest : `'${asked.args_digest}'`;
  return refused(
    decision,
    'approval_required',
    `${reason}; no approval could be asked for (rule ${rule}, args ${digest}); the operator may grant it with --approve ${rule} (every such call of the run) or an --approvals entry {rule: ${rule}, tool: ${asked.tool_name}, argsDigest: ${entry}}`,
    null,
  );
}

function refused(
  decision: PermissionDecision,
  status: 'denied' | 'approval_required',
  reason: string,
  approver: Approver | null,
): Ruling {
  return { kind: 'refused', decision, status, reason, approver };
}
