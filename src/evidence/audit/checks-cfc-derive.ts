// Information flow control decided again (CFC integration profile): every recorded flow
// decision re-judged from its recorded labels, the run's recorded plan and the tool with the
// mediator's own function (cfc/flow.ts judgeFlow, AH-CFC-9/10/11), and every influence the
// log records derived again from the context it starts from and the observations exposed
// since (cfc/runtime.ts, AH-CFC-7/8). Consistency is not enough: a log rewritten so that a
// secret flow reads `allow`, or its context forgot a secret, fails here.
import { PROMPT_DIRECT } from '../../config/cfc-schema.js';
import { explicitLabel } from '../../cfc/handles.js';
import { judgeFlow, type FlowVerdict } from '../../cfc/flow.js';
import { join, joinAll, type Label } from '../../cfc/label.js';
import type { CfcPlan } from '../../cfc/label-map.js';
import { CfcRuntime } from '../../cfc/runtime.js';
import { canonicalJson } from '../canonical-json.js';
import type { LabelRecord } from '../schema/events-cfc.js';
import { PromptSlotsRecord } from '../schema/snapshot.js';
import {
  at,
  fail,
  inconclusive,
  notApplicable,
  pass,
  type AuditContext,
  type Check,
} from './check.js';
import { cfcStateOf } from './checks-cfc.js';
import {
  callRecords,
  hostLabelsOf,
  labelOf,
  mediationOf,
  noWeaker,
  planOf,
  sameRecord,
  type CallRecord,
  type Mediation,
} from './decision-inputs.js';
import { partOf, recordOf } from './parts.js';
import { eventsOf, unreadable, type RunEvidence, type TypedEvent } from './run-evidence.js';

const WRITES_PATH = new Set(['write_file', 'edit_file']);
const show = (l: LabelRecord | null): string => JSON.stringify(l);

/**
 * Whether an observation's label joined the model context (cfc-observations.ts dispose): an
 * exposed one does, but the image's own files (source `image`), which are recorded only.
 */
export function joinsContext(l: TypedEvent<'cfc_label'>): boolean {
  // `joined` is recorded since it could be false for more than the image's own files.
  return l.data.disposition === 'exposed' && (l.data.joined ?? l.data.source !== 'image');
}

/** What entered the per-run workload container before `seq`: every exec's observation label. */
function containerBefore(
  run: RunEvidence,
  calls: ReadonlyMap<string, CallRecord>,
  seq: number,
): Label | undefined {
  const entered = eventsOf(run, 'cfc_label')
    .filter(
      (l) =>
        l.seq < seq &&
        l.data.disposition !== 'denied' &&
        calls.get(l.data.callId)?.requested?.data.tool === 'exec',
    )
    .map((l) => labelOf(l.data.label));
  const [first, ...rest] = entered;
  return first === undefined ? undefined : joinAll(first, rest);
}

/** The path a write decides its sink by, as the model sent it; undefined when a handle hid it. */
function pathOf(call: CallRecord): { path: unknown } | undefined {
  const p = recordOf(call.input?.value)?.path;
  const handles = call.resolved.map((r) => r.data.handle);
  if (typeof p === 'string' && handles.some((h) => p.includes(h))) return undefined;
  return { path: p };
}

/** What a re-judged flow and its record disagree on. */
function differences(recorded: TypedEvent<'cfc_flow'>['data'], again: FlowVerdict): string[] {
  const out: string[] = [];
  if (recorded.verdict !== again.verdict)
    out.push(`verdict ${recorded.verdict}, judged ${again.verdict}`);
  if (recorded.rule !== again.rule) out.push(`rule ${recorded.rule}, judged ${again.rule}`);
  for (const key of ['label', 'explicit', 'sinks', 'violations'] as const)
    if (canonicalJson(recorded[key]) !== canonicalJson(again[key]))
      out.push(`${key} ${JSON.stringify(recorded[key])}, judged ${JSON.stringify(again[key])}`);
  if (out.length === 0 && recorded.reason !== again.reason)
    out.push(`reason '${recorded.reason}', judged '${again.reason}'`);
  return out;
}

interface FlowJudging {
  readonly run: RunEvidence;
  readonly plan: CfcPlan;
  readonly workspaceTarget: string;
  readonly mediation: Mediation;
  readonly calls: ReadonlyMap<string, CallRecord>;
  readonly perRun: boolean;
}

/** One flow judged again; its problems, or `skipped` with why it could not be. */
function rejudge(
  f: TypedEvent<'cfc_flow'>,
  j: FlowJudging,
): { problems: string[] } | { skipped: string } {
  const d = f.data;
  const call = j.calls.get(d.callId);
  const tool = j.mediation.tools.get(d.tool);
  if (call === undefined || tool === undefined)
    return {
      problems: [
        `${at(f)}: ${d.callId} judged as ${d.tool}, which the run's mediation does not record`,
      ],
    };
  const problems: string[] = [];
  if (call.requested?.data.tool !== d.tool)
    problems.push(
      `${at(f)}: ${d.callId} judged as ${d.tool}, proposed as ${call.requested?.data.tool ?? 'nothing'}`,
    );
  const used = call.resolved.filter((r) => r.seq < f.seq);
  if (canonicalJson(d.handles) !== canonicalJson(used.map((r) => r.data.handle)))
    problems.push(
      `${at(f)}: names handles ${JSON.stringify(d.handles)}, resolved ${JSON.stringify(used.map((r) => r.data.handle))}`,
    );
  let args: unknown;
  if (WRITES_PATH.has(d.tool)) {
    if (call.input === undefined) return { skipped: `${d.callId}: no transcript input` };
    const p = pathOf(call);
    if (p === undefined) return { skipped: `${d.callId}: a handle in its path` };
    args = p;
  }
  const again = judgeFlow({
    plan: j.plan,
    workspaceTarget: j.workspaceTarget,
    tool: {
      name: tool.name,
      riskClass: tool.riskClass,
      executor: tool.executor,
      cfc: tool.cfc === null ? undefined : hostLabelsOf(tool.cfc),
    },
    args,
    influence: labelOf(d.influence),
    explicit: used.map((r) =>
      explicitLabel(
        { label: labelOf(r.data.label), integrityCounts: r.data.integrityCounts },
        labelOf(d.influence),
      ),
    ),
    container: d.tool === 'exec' && j.perRun ? containerBefore(j.run, j.calls, f.seq) : undefined,
  });
  const diff = differences(d, again);
  if (diff.length > 0) problems.push(`${at(f)}: ${d.callId} (${d.tool}) ${diff.join('; ')}`);
  return { problems };
}

export const flowDerivedCheck: Check = {
  id: 'cfc.flow-rederived',
  title: "each flow decision judged again from its recorded labels, the run's plan and the tool",
  clauses: ['AH-CFC-1', 'AH-CFC-9', 'AH-CFC-11'],
  run({ run }) {
    const state = cfcStateOf(run);
    if (state.kind !== 'recorded') return notApplicable('no CFC mode recorded (cfc.mode-recorded)');
    const flows = eventsOf(run, 'cfc_flow');
    if (state.mode === 'disabled' || (flows.length === 0 && unreadable(run, 'cfc_flow') === 0))
      return notApplicable('no flow decision recorded');
    if (unreadable(run, 'cfc_flow', 'cfc_handle', 'cfc_label', 'tool_requested') > 0)
      return inconclusive('some events the flow decisions need cannot be read');
    const planned = planOf(run, state.cfc);
    if ('problem' in planned) return inconclusive(planned.problem);
    const mediation = mediationOf(run);
    if (mediation === undefined || 'problem' in mediation)
      return fail('the tools the flows were judged by are not in the evidence', [
        `snapshot.json mediation: ${mediation === undefined ? 'missing' : mediation.problem}`,
      ]);
    const lifetime = recordOf(recordOf(run.snapshot.value)?.toolContainer)?.lifetime;
    const j: FlowJudging = {
      run,
      ...planned,
      mediation,
      calls: callRecords(run),
      perRun: lifetime !== 'per-call',
    };
    const where: string[] = [];
    const skipped: string[] = [];
    for (const f of flows) {
      const r = rejudge(f, j);
      if ('skipped' in r) skipped.push(r.skipped);
      else where.push(...r.problems);
    }
    const note = skipped.length === 0 ? '' : `; not judged again: ${skipped.join(', ')}`;
    return where.length === 0
      ? pass(
          `${flows.length - skipped.length} flow decision(s) judged again, each as recorded${note}`,
        )
      : fail('a flow decision is not what its labels, plan and tool give', where);
  },
};

/**
 * The context a run's model starts from (cfc/runtime.ts): its prompt slots (the direct
 * command with its capture record, context, quoted material, an approved plan) joined with
 * every context the run recorded it carried in (`cfc_carried`: resume, restore, delegation,
 * a plan), and for a resumed run never below the context the old run ended with.
 */
function startingContext(
  ctx: AuditContext,
  plan: CfcPlan,
  workspaceTarget: string,
  promptCapture: string | null,
): Label {
  const { run } = ctx;
  const capture =
    promptCapture === null
      ? null
      : (eventsOf(run, 'prompt_captured').find((c) => c.data.captureId === promptCapture)?.data ??
        null);
  const slots = partOf(run.snapshot.value, 'promptSlots', PromptSlotsRecord);
  const fromPlan = recordOf(run.snapshot.value)?.fromPlan;
  const carried = eventsOf(run, 'cfc_carried').map((c) => ({
    kind: c.data.kind,
    fromRunId: c.data.fromRunId,
    label: labelOf(c.data.label),
    basis: c.data.basis,
  }));
  const start = new CfcRuntime(
    plan,
    workspaceTarget,
    {
      capture,
      context: slots.ok ? slots.value.context.length : 0,
      quoted: slots.ok ? slots.value.quoted.length : 0,
      fromPlan: fromPlan !== undefined && fromPlan !== null,
    },
    { runId: run.runId, keep: () => Promise.resolve(), carried },
  ).context();
  const resumed = ctx.resumed;
  const ended =
    resumed === undefined || 'unreadable' in resumed ? undefined : endingContext(resumed);
  return ended === undefined ? start : join(start, ended);
}

/** The context a run's model ended with: its last influence joined with what was exposed after. */
export function endingContext(run: RunEvidence): Label | undefined {
  const last = eventsOf(run, 'cfc_influence').at(-1);
  if (last === undefined) return undefined;
  return joinAll(
    labelOf(last.data.label),
    eventsOf(run, 'cfc_label')
      .filter((l) => l.seq > last.seq && joinsContext(l))
      .map((l) => labelOf(l.data.label)),
  );
}

const asRecord = (l: Label): LabelRecord => ({
  confidentiality: [...l.confidentiality],
  integrity: [...l.integrity],
});

export const influenceDerivedCheck: Check = {
  id: 'cfc.influence-derived',
  title:
    'each influence is the context the log implies: its start, joined with every exposure since',
  clauses: ['AH-CFC-7', 'AH-CFC-9'],
  run(ctx) {
    const { run } = ctx;
    const state = cfcStateOf(run);
    if (state.kind !== 'recorded') return notApplicable('no CFC mode recorded (cfc.mode-recorded)');
    if (state.mode === 'disabled') return notApplicable('CFC disabled: no influence is derived');
    if (unreadable(run, 'cfc_flow', 'cfc_label', 'cfc_influence', 'prompt_captured') > 0)
      return inconclusive('some CFC events cannot be read');
    const planned = planOf(run, state.cfc);
    if ('problem' in planned) return inconclusive(planned.problem);
    const capture = state.cfc.promptCapture;
    // The start is a lower bound: a run may start more restricted (a carried context), never less.
    let floor = asRecord(startingContext(ctx, planned.plan, planned.workspaceTarget, capture));
    let context: LabelRecord | undefined;
    const where: string[] = [];
    let judged = 0;
    for (const e of run.events) {
      if (e.type === 'cfc_label') {
        const l = eventsOf({ events: [e] }, 'cfc_label')[0];
        if (l === undefined || !joinsContext(l)) continue;
        const joined = asRecord(join(labelOf(context ?? floor), labelOf(l.data.label)));
        if (context === undefined) floor = joined;
        else context = joined;
        continue;
      }
      const rec =
        e.type === 'cfc_influence'
          ? eventsOf({ events: [e] }, 'cfc_influence')[0]?.data
          : e.type === 'cfc_flow'
            ? eventsOf({ events: [e] }, 'cfc_flow')[0]?.data
            : undefined;
      if (rec === undefined) continue;
      judged += 1;
      const recorded = 'turn' in rec ? rec.label : rec.influence;
      if (context === undefined) {
        if (!noWeaker(recorded, floor))
          where.push(
            `${at(e)}: influence ${show(recorded)}, weaker than the run's start ${show(floor)}`,
          );
        context = recorded;
      } else if (!sameRecord(recorded, context))
        where.push(`${at(e)}: influence ${show(recorded)}, the log implies ${show(context)}`);
      // The direct command's authority is carried exactly while prompt:direct is (AH-CFC-9).
      const authority =
        capture !== null && recorded.integrity.includes(PROMPT_DIRECT) ? capture : null;
      if (rec.authority !== authority)
        where.push(
          `${at(e)}: authority ${String(rec.authority)}, its influence gives ${String(authority)}`,
        );
    }
    return where.length === 0
      ? pass(
          `${judged} influence(s) derived from the run's start and its exposures, each as recorded`,
        )
      : fail('an influence is not the context the log implies', where);
  },
};
