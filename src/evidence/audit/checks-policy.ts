// Every permission decision decided again (governance extension, "Permission decision
// object"; AH-TOOL-4, AHGE-LOOP-3, AH-CFC-1): the recorded call (its tool, whether it was on
// the surface and valid, the arguments the model sent), the run's policy (the profile's
// `policy:` rules as snapshot.json records them) and facts (snapshot `mediation`), through
// the mediator's own Policy and its flow gate (mediator/flow-gate.ts gatedDecision). A
// decision rewritten to `allow`, or a flow's question dropped from it, fails here.
import { z } from 'zod';
import { PolicyRule } from '../../config/policy-schema.js';
import { gatedDecision } from '../../mediator/flow-gate.js';
import { argsDigest } from '../../mediator/mediator.js';
import { Policy, type CheckedCall, type PolicyTool, type RunFacts } from '../../mediator/policy.js';
import { compilePolicy, type CompiledRule } from '../../mediator/policy-rule.js';
import type { MediationTool, SnapshotMediation } from '../schema/snapshot.js';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { callRecords, decidedArgs, mediationOf, type CallRecord } from './decision-inputs.js';
import { partOf } from './parts.js';
import { rejectionProblem } from './rejections.js';
import { unreadable, type TypedEvent } from './run-evidence.js';

const ResolvedPolicy = z.looseObject({ policy: z.array(PolicyRule).default([]) });

type Decision = TypedEvent<'permission_decision'>;

/** The call as the mediator checked it, or why it cannot be told from the evidence. */
function checkedOf(
  runDir: string,
  call: CallRecord,
  name: string,
  tool: MediationTool | undefined,
  rules: readonly CompiledRule[],
): { checked: CheckedCall<PolicyTool> } | { problem: string } | { skipped: string } {
  if (call.rejected === 'unknown_tool')
    return tool === undefined
      ? { checked: { kind: 'unknown', name } }
      : { problem: `rejected as unknown, yet ${name} is on the run's recorded surface` };
  if (tool === undefined) return { problem: `${name} is not on the run's recorded surface` };
  if (call.rejected === 'invalid_arguments') {
    // Rejected as invalid only if its arguments are: the schema is asked again.
    const problem = rejectionProblem(runDir, call, tool);
    return problem === undefined ? { checked: { kind: 'invalid', tool, issues: '' } } : { problem };
  }
  const args = decidedArgs(call, name);
  // A sandbox tool's input is decided as the model sent it unless a handle was resolved in it.
  if (
    args !== undefined &&
    !args.exact &&
    tool.executor === 'sandbox' &&
    call.resolved.length === 0
  )
    return { problem: "the transcript's arguments are not the ones decided (args digest)" };
  // Policy reads the arguments only through a rule's `args`: without them, a call whose
  // arguments the evidence does not hold exactly is decided all the same.
  const exact = args?.exact === true;
  if (!exact && rules.some((r) => Object.keys(r.rule.match.args ?? {}).length > 0))
    return { skipped: `${call.callId}: its arguments are not in the evidence exactly` };
  return { checked: { kind: 'valid', tool, args: args?.sent } };
}

/** Where the record of one decision differs from the decision made again. */
function compare(
  d: Decision,
  call: CallRecord,
  expected: ReturnType<typeof gatedDecision>,
  tool: MediationTool | undefined,
  checked: CheckedCall<PolicyTool>,
): string[] {
  const r = d.data;
  const out: string[] = [];
  if (r.decision !== expected.decision || r.policy_rule !== expected.rule)
    out.push(
      `${r.decision} under ${r.policy_rule}, decided again ${expected.decision} under ${expected.rule}`,
    );
  else if (r.reason !== expected.reason)
    out.push(`reason '${r.reason}', decided again '${expected.reason}'`);
  const classes = [r.risk_class, r.side_effect_class, r.resource_scope];
  const want =
    checked.kind === 'unknown' || tool === undefined
      ? [null, null, null]
      : [tool.riskClass, tool.sideEffectClass, tool.resourceScope];
  if (classes.join('\0') !== want.join('\0'))
    out.push(`classes [${classes.join(', ')}], the tool's are [${want.join(', ')}]`);
  if (checked.kind !== 'valid' && r.args_digest !== argsDigest(r.tool_name, undefined))
    out.push('digests arguments, yet no valid arguments were decided');
  if (r.approver !== null) out.push('names an approver, yet it is recorded before anyone is asked');
  if (call.requested !== undefined && call.requested.data.tool !== r.tool_name)
    out.push(`decides ${r.tool_name}, ${call.requested.data.tool} was proposed`);
  return out;
}

/** The run's Policy as the snapshot records it, or why it cannot be made. */
function policyOf(
  snapshot: unknown,
  facts: RunFacts,
): { policy: Policy; rules: CompiledRule[] } | { problem: string } {
  const profile = partOf(snapshot, 'profile', z.looseObject({ resolved: ResolvedPolicy }));
  if (!profile.ok) return { problem: 'snapshot.json profile.resolved.policy: cannot be read' };
  try {
    const rules = compilePolicy(profile.value.resolved.policy);
    return { policy: new Policy(rules, facts), rules };
  } catch (error) {
    return {
      problem: `snapshot.json profile.resolved.policy: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

/** The facts as policy reads them (mountChannel absent, not null, when none was found). */
function mediationFacts(f: SnapshotMediation['facts']): RunFacts {
  return { ...f, mountChannel: f.mountChannel ?? undefined };
}

export const policyDerivedCheck: Check = {
  id: 'policy.rederived',
  title:
    "each permission decision decided again from the call, the run's policy and facts, and its flow",
  clauses: ['AH-TOOL-4', 'AHGE-LOOP-3', 'AH-CFC-1'],
  run({ run }) {
    const calls = [...callRecords(run).values()].filter((c) => c.decisions.length > 0);
    if (calls.length === 0 && unreadable(run, 'permission_decision') === 0)
      return notApplicable('no permission decision recorded');
    if (
      unreadable(
        run,
        'permission_decision',
        'tool_requested',
        'tool_rejected',
        'cfc_flow',
        'cfc_handle',
      ) > 0
    )
      return inconclusive('some events the decisions need cannot be read');
    const mediation = mediationOf(run);
    if (mediation === undefined || 'problem' in mediation)
      return fail('what the decisions were made with is not in the evidence', [
        `snapshot.json mediation: ${mediation === undefined ? 'missing' : mediation.problem}`,
      ]);
    const made = policyOf(run.snapshot.value, mediationFacts(mediation.record.facts));
    if ('problem' in made) return fail("the run's policy cannot be made again", [made.problem]);
    const where: string[] = [];
    const skipped: string[] = [];
    for (const call of calls) {
      const [d, ...more] = call.decisions;
      if (d === undefined) continue;
      for (const m of more) where.push(`${at(m)}: a second decision for ${call.callId}`);
      // A proposal the run's stop left undecided (mediator.ts refuseForStop): denied, never run.
      if (d.data.policy_rule.startsWith('stop:')) {
        if (d.data.decision !== 'deny' || call.executed)
          where.push(
            `${at(d)}: ${call.callId} stopped under ${d.data.policy_rule}, yet ${d.data.decision}${call.executed ? ' and run' : ''}`,
          );
        continue;
      }
      const tool = mediation.tools.get(d.data.tool_name);
      const c = checkedOf(run.dir, call, d.data.tool_name, tool, made.rules);
      if ('skipped' in c) {
        skipped.push(c.skipped);
        continue;
      }
      if ('problem' in c) {
        where.push(`${at(d)}: ${call.callId}: ${c.problem}`);
        continue;
      }
      const flow = c.checked.kind === 'valid' ? call.flows[0]?.data : undefined;
      const expected = gatedDecision(made.policy.decide(c.checked), flow);
      for (const p of compare(d, call, expected, tool, c.checked))
        where.push(`${at(d)}: ${call.callId} ${p}`);
    }
    const note = skipped.length === 0 ? '' : `; not decided again: ${skipped.join(', ')}`;
    return where.length === 0
      ? pass(`${calls.length - skipped.length} decision(s) decided again, each as recorded${note}`)
      : fail('a permission decision is not what the call, policy and flow give', where);
  },
};
