// Information flow control, as the evidence tells it (CFC integration profile): the mode in
// snapshot and report alike (AH-CFC-14/15), a flow decision before policy for every call
// that ran and no denied flow run without a person's endorsement (AH-CFC-9/11), and every
// observation labelled before the model saw it, its label joined into the influence
// (AH-CFC-6/7). Handles, prompt authority and the evidence boundary: checks-cfc-values.ts.
import { summarizeCfc, isEnforcedMode, type CfcMode } from '../cfc-summary.js';
import { ReportCfc } from '../schema/report.js';
import { SnapshotAssurance, SnapshotCfc } from '../schema/snapshot.js';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { hasKey, partOf } from './parts.js';
import { eventsOf, unreadable, type RunEvidence, type TypedEvent } from './run-evidence.js';

/** The CFC event types: none of them belongs in a disabled run but the capture. */
export const CFC_DECISION_EVENTS = [
  'cfc_label',
  'cfc_influence',
  'cfc_flow',
  'cfc_endorsement',
  'cfc_handle',
] as const;

export type CfcState =
  | { readonly kind: 'absent' }
  | { readonly kind: 'unreadable' }
  | { readonly kind: 'recorded'; readonly mode: CfcMode; readonly cfc: SnapshotCfc };

/** snapshot.json's `cfc`: absent (a run before CFC, or a run that lost it), unreadable, or read. */
export function cfcStateOf(run: Pick<RunEvidence, 'snapshot'>): CfcState {
  if (!hasKey(run.snapshot.value, 'cfc')) return { kind: 'absent' };
  const part = partOf(run.snapshot.value, 'cfc', SnapshotCfc);
  return part.ok
    ? { kind: 'recorded', mode: part.value.mode, cfc: part.value }
    : { kind: 'unreadable' };
}

export const subset = (a: readonly string[], b: readonly string[]): boolean =>
  a.every((x) => b.includes(x));
export const list = (atoms: readonly string[]): string => `[${atoms.join(', ')}]`;

export const cfcModeCheck: Check = {
  id: 'cfc.mode-recorded',
  title: 'the CFC mode and any fallback in snapshot and report alike; observe never enforcement',
  clauses: ['AH-CFC-14', 'AH-CFC-15'],
  run({ run }) {
    const state = cfcStateOf(run);
    const decided = run.events.filter((e) =>
      (CFC_DECISION_EVENTS as readonly string[]).includes(e.type),
    );
    const reportHas = hasKey(run.report.value, 'cfc');
    if (state.kind === 'absent') {
      // Only a run recorded before CFC has no mode anywhere; a run that has CFC evidence
      // and no mode in its snapshot lost the one record AH-CFC-14 asks for.
      if (!reportHas && decided.length === 0 && eventsOf(run, 'prompt_captured').length === 0)
        return notApplicable('recorded before CFC: no mode in snapshot, report or events');
      return fail('CFC mode missing from snapshot.json', [
        'snapshot.json cfc: missing',
        ...(reportHas ? ['report.json cfc: present, so the run was recorded with CFC'] : []),
        ...decided.slice(0, 3).map((e) => `${at(e)}: CFC evidence without a mode`),
      ]);
    }
    if (state.kind === 'unreadable')
      return fail('snapshot.json cfc cannot be read', ['snapshot.json cfc']);
    const { mode, cfc } = state;
    const where: string[] = [];
    if (cfc.fallback !== null) {
      if (cfc.fallback.to !== mode)
        where.push(`snapshot.json cfc.fallback: to ${cfc.fallback.to}, the mode is ${mode}`);
      if (cfc.fallback.owner.trim() === '' || cfc.fallback.retireWhen.trim() === '')
        where.push('snapshot.json cfc.fallback: no owner or retirement condition (AH-CFC-15)');
    }
    const assurance = partOf(run.snapshot.value, 'assurance', SnapshotAssurance);
    if (mode === 'observe') {
      if (!assurance.ok || assurance.value.level !== 'reduced')
        where.push('snapshot.json assurance: CFC mode observe, yet assurance is not reduced');
      else if (
        assurance.value.reasons !== undefined &&
        !assurance.value.reasons.some((r) => r.code === 'cfc-observe')
      )
        where.push('snapshot.json assurance.reasons: observe names no cfc-observe reason');
    }
    if (mode === 'disabled')
      for (const e of decided.slice(0, 5)) where.push(`${at(e)}: CFC disabled, yet recorded`);
    if (eventsOf(run, 'run_finished').length > 0) {
      const rep = partOf(run.report.value, 'cfc', ReportCfc);
      if (!rep.ok) where.push('report.json cfc: missing or unreadable');
      else {
        if (rep.value.mode !== mode)
          where.push(`report.json cfc.mode: ${rep.value.mode}, the snapshot says ${mode}`);
        if (rep.value.enforced !== isEnforcedMode(mode))
          where.push(
            `report.json cfc.enforced: ${String(rep.value.enforced)} for mode ${mode} (observe is never enforcement)`,
          );
        // The report's counts are the log's own: recomputed from the events.
        const counted = summarizeCfc(mode, run.events);
        const said = JSON.stringify({ ...rep.value, mode, enforced: counted.enforced });
        if (said !== JSON.stringify(counted))
          where.push(
            `report.json cfc: ${JSON.stringify(rep.value)}, the events count ${JSON.stringify(counted)}`,
          );
      }
    }
    return where.length === 0
      ? pass(
          `CFC mode ${mode} (${isEnforcedMode(mode) ? 'enforced' : 'not enforcement'}) in snapshot and report${cfc.fallback === null ? '' : `, fallback from ${cfc.fallback.from} owned by ${cfc.fallback.owner}`}`,
        )
      : fail('CFC mode not recorded alike', where);
  },
};

/** A call's first permission decision (policy's turn comes after the flow's). */
function firstDecision(
  run: RunEvidence,
  callId: string,
): TypedEvent<'permission_decision'> | undefined {
  return eventsOf(run, 'permission_decision').find((d) => d.data.call_id === callId);
}

/**
 * The decisions of every valid proposal, by call: neither rejected (off the surface, invalid)
 * nor stopped undecided (a `stop:` decision, mediator.ts refuseForStop).
 */
function validDecisions(run: RunEvidence): Map<string, TypedEvent<'permission_decision'>[]> {
  const rejected = new Set(eventsOf(run, 'tool_rejected').map((r) => r.data.callId));
  const out = new Map<string, TypedEvent<'permission_decision'>[]>();
  for (const d of eventsOf(run, 'permission_decision')) {
    const id = d.data.call_id;
    if (rejected.has(id) || d.data.policy_rule.startsWith('stop:')) continue;
    out.set(id, [...(out.get(id) ?? []), d]);
  }
  return out;
}

export const flowGatedCheck: Check = {
  id: 'cfc.flow-gated',
  title: 'every valid call had its flow decided before policy; a denied flow ran only endorsed',
  clauses: ['AH-CFC-9', 'AH-CFC-11'],
  run({ run }) {
    const state = cfcStateOf(run);
    if (state.kind !== 'recorded') return notApplicable('no CFC mode recorded (cfc.mode-recorded)');
    if (state.mode === 'disabled') return notApplicable('CFC disabled: no flow is decided');
    if (
      unreadable(run, 'cfc_flow', 'cfc_endorsement', 'prompt_captured', 'permission_decision') > 0
    )
      return inconclusive('some CFC events cannot be read');
    const enforced = isEnforcedMode(state.mode);
    const flows = eventsOf(run, 'cfc_flow');
    const endorsements = eventsOf(run, 'cfc_endorsement');
    const captures = eventsOf(run, 'prompt_captured');
    const granted = eventsOf(run, 'approval_received').filter((a) => a.data.outcome === 'granted');
    const where: string[] = [];
    for (const f of flows) {
      const d = f.data;
      if (d.mode !== state.mode)
        where.push(`${at(f)}: decided under ${d.mode}, the run's mode is ${state.mode}`);
      if (enforced && d.verdict === 'would_deny')
        where.push(`${at(f)}: would_deny under ${state.mode}, which denies`);
      if (!enforced && d.verdict === 'deny')
        where.push(`${at(f)}: deny under observe, which only records`);
      if (
        d.authority !== null &&
        !captures.some((c) => c.data.captureId === d.authority && c.seq < f.seq)
      )
        where.push(`${at(f)}: authority ${d.authority} names no prompt_captured record before it`);
      // The influence it was judged with is the context's: cfc.influence-derived.
    }
    // Every valid proposal is judged before policy (AH-CFC-9), whether it ran or not: a
    // refused flow leaves its record too. Not a proposal the run's stop left undecided.
    for (const [callId, decisions] of validDecisions(run)) {
      const first = decisions[0];
      if (first === undefined) continue;
      if (!flows.some((f) => f.data.callId === callId && f.seq < first.seq))
        where.push(
          `${at(first)}: ${callId} (${first.data.tool_name}) was decided with no flow decision before it`,
        );
    }
    let ran = 0;
    for (const x of eventsOf(run, 'tool_executed')) {
      const callId = x.data.callId;
      ran += 1;
      const decision = firstDecision(run, callId);
      const flow = flows.find((f) => f.data.callId === callId);
      if (flow === undefined) {
        if (enforced) where.push(`${at(x)}: ${callId} ran without a flow decision`);
        continue;
      }
      if (decision !== undefined && flow.seq > decision.seq)
        where.push(`${at(flow)}: ${callId}'s flow was decided after its permission_decision`);
      if (flow.data.verdict !== 'deny') continue;
      const given = endorsements.filter(
        (e) => e.data.callId === callId && e.seq > flow.seq && e.seq < x.seq,
      );
      const uncleared = flow.data.violations.flatMap((v) => v.uncleared);
      const missing = flow.data.violations.flatMap((v) => v.missing);
      const declassified = given.flatMap((e) => e.data.confidentiality);
      const endorsed = given.flatMap((e) => e.data.integrity);
      if (given.length === 0 || !subset(uncleared, declassified) || !subset(missing, endorsed)) {
        const lack = [
          ...(missing.length > 0 ? [`integrity ${list(missing)}`] : []),
          ...(uncleared.length > 0 ? [`clearance for ${list(uncleared)}`] : []),
        ].join(' and ');
        where.push(
          `${at(x)}: ${callId} (${x.data.tool}) was allowed while its influence lacked ${lack === '' ? 'what its flow required' : lack}, and no endorsement covers it`,
        );
      }
      for (const e of given)
        if (decision !== undefined && e.data.argsDigest !== decision.data.args_digest)
          where.push(`${at(e)}: endorses other arguments than ${callId} ran with`);
    }
    for (const e of endorsements) {
      // A person's word, through an approval surface: the model never endorses (AH-CFC-1).
      if (!granted.some((a) => a.data.callId === e.data.callId && a.seq < e.seq))
        where.push(`${at(e)}: an endorsement of ${e.data.callId} no granted approval precedes`);
      if (
        !flows.some(
          (f) => f.data.callId === e.data.callId && f.data.verdict === 'deny' && f.seq < e.seq,
        )
      )
        where.push(`${at(e)}: an endorsement of ${e.data.callId}, whose flow was not denied`);
    }
    const denied = flows.filter((f) => f.data.verdict === 'deny').length;
    return where.length === 0
      ? pass(
          `${flows.length} flow decision(s) for ${ran} call(s) that ran, ${denied} denied, ${endorsements.length} endorsement(s)`,
        )
      : fail('a flow not gated', where);
  },
};

export const observationsLabelledCheck: Check = {
  id: 'cfc.observations-labelled',
  title: 'every observation labelled before the model saw it; exposed labels joined, monotone',
  clauses: ['AH-CFC-6', 'AH-CFC-7'],
  run({ run }) {
    const state = cfcStateOf(run);
    if (state.kind !== 'recorded') return notApplicable('no CFC mode recorded (cfc.mode-recorded)');
    if (state.mode === 'disabled') return notApplicable('CFC disabled: nothing is labelled');
    if (unreadable(run, 'cfc_label', 'cfc_influence', 'cfc_handle') > 0)
      return inconclusive('some CFC events cannot be read');
    const enforced = isEnforcedMode(state.mode);
    const labels = eventsOf(run, 'cfc_label');
    const influences = eventsOf(run, 'cfc_influence');
    const minted = eventsOf(run, 'cfc_handle').filter((h) => h.data.action === 'minted');
    const turns = eventsOf(run, 'model_call_started');
    const clearance = state.cfc.modelClearance;
    const where: string[] = [];
    for (const x of eventsOf(run, 'tool_executed')) {
      if (x.data.status === 'withheld') continue; // never shown: the run failed on it
      const next = turns.find((t) => t.seq > x.seq);
      const label = labels.find((l) => l.data.callId === x.data.callId);
      if (enforced && next !== undefined && (label === undefined || label.seq > next.seq))
        where.push(
          `${at(x)}: ${x.data.callId}'s observation reached the model (${at(next)}) without a label`,
        );
    }
    for (const l of labels) {
      const { disposition, label, handle } = l.data;
      if (disposition === 'exposed' && enforced) {
        const over = label.confidentiality.filter((a) => !clearance.includes(a));
        if (over.length > 0)
          where.push(`${at(l)}: exposed ${list(over)}, beyond modelClearance ${list(clearance)}`);
      }
      if (disposition === 'opaque') {
        const held = minted.find(
          (h) => h.data.handle === handle && h.data.callId === l.data.callId,
        );
        if (handle === undefined || held === undefined)
          where.push(`${at(l)}: opaque, yet no handle minted for ${l.data.callId}`);
      }
    }
    // The context's label only grows more secret and less trusted, and holds every exposed
    // label joined before it (AH-CFC-7); a model turn after an exposure sees it recorded.
    let prev: TypedEvent<'cfc_influence'> | undefined;
    for (const i of influences) {
      const now = i.data.label;
      if (
        prev !== undefined &&
        (!subset(prev.data.label.confidentiality, now.confidentiality) ||
          !subset(now.integrity, prev.data.label.integrity))
      )
        where.push(
          `${at(i)}: the influence ${JSON.stringify(now)} dropped atoms of ${JSON.stringify(prev.data.label)} (${at(prev)})`,
        );
      for (const l of labels) {
        if (l.seq > i.seq || l.data.disposition !== 'exposed') continue;
        if (
          !subset(l.data.label.confidentiality, now.confidentiality) ||
          !subset(now.integrity, l.data.label.integrity)
        )
          where.push(`${at(i)}: the influence does not join the label exposed at ${at(l)}`);
      }
      prev = i;
    }
    if (enforced)
      for (const l of labels.filter((x) => x.data.disposition === 'exposed')) {
        const next = turns.find((t) => t.seq > l.seq);
        if (next !== undefined && !influences.some((i) => i.seq > l.seq && i.seq < next.seq))
          where.push(`${at(next)}: a model turn after ${at(l)} with no influence recorded`);
      }
    const by = (d: string): number => labels.filter((l) => l.data.disposition === d).length;
    return where.length === 0
      ? pass(
          `${labels.length} observation(s) labelled (${by('exposed')} exposed, ${by('opaque')} opaque, ${by('denied')} denied), ${influences.length} influence state(s), monotone`,
        )
      : fail('an observation not labelled or not joined', where);
  },
};
