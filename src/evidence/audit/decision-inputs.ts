// What the mediator decided each call with, read back from a run's evidence so the audit can
// decide it again with the same functions (checks-cfc-derive.ts, checks-policy.ts): the CFC
// plan as snapshot.cfc records it, the tools' contracts as snapshot `mediation` and the MCP
// listings record them, and per call its proposal, the arguments the model sent (the
// transcript's tool_use, tied to the decision by its digest), the handles it used, its flow
// decision and its permission decision.
import { z } from 'zod';
import { SinkRequirement } from '../../config/cfc-schema.js';
import { label, type Label } from '../../cfc/label.js';
import { integrityCounts, type CfcPlan } from '../../cfc/label-map.js';
import type { HostToolLabels } from '../../cfc/host-tool-labels.js';
import { argsDigest } from '../../mediator/mediator.js';
import type { LabelRecord } from '../schema/events-cfc.js';
import {
  MediationTool,
  SnapshotMediation,
  type HostToolLabelsRecord,
  type SnapshotCfc,
} from '../schema/snapshot.js';
import { partOf, recordOf } from './parts.js';
import { eventsOf, type RunEvidence, type TypedEvent } from './run-evidence.js';
import { NetworkMode } from '../../config/postures.js';

/** A recorded label as the label algebra holds it (sorted, unique, frozen). */
export const labelOf = (r: LabelRecord): Label => label(r);

export const sameRecord = (a: LabelRecord | null, b: LabelRecord | null): boolean =>
  a === null || b === null
    ? a === b
    : a.confidentiality.join('\0') === b.confidentiality.join('\0') &&
      a.integrity.join('\0') === b.integrity.join('\0');

/** `a` at least as restrictive as `b`: as secret or more, as trusted or less. */
export const noWeaker = (a: LabelRecord, b: LabelRecord): boolean =>
  b.confidentiality.every((x) => a.confidentiality.includes(x)) &&
  a.integrity.every((x) => b.integrity.includes(x));

const NetworkPart = z.looseObject({ mode: NetworkMode });

/**
 * The run's CFC plan as planning made it (cfc/label-map.ts planCfc), from snapshot.cfc and
 * the profile's network mode (the field planCfc reads as `network`), with the workspace
 * target: the plan's first mount (planCfc puts the workspace first).
 */
export function planOf(
  run: RunEvidence,
  cfc: SnapshotCfc,
): { plan: CfcPlan; workspaceTarget: string } | { problem: string } {
  const network = partOf(run.snapshot.value, 'network', NetworkPart);
  if (!network.ok) return { problem: 'snapshot.json network.mode cannot be read' };
  const sinks = z.record(z.string(), SinkRequirement).safeParse(cfc.sinks);
  if (!sinks.success) return { problem: 'snapshot.json cfc.sinks is not a sink table' };
  const workspace = cfc.mounts[0];
  if (workspace === undefined) return { problem: 'snapshot.json cfc.mounts is empty' };
  return {
    workspaceTarget: workspace.target,
    plan: {
      mode: cfc.mode,
      modeSource: cfc.modeSource,
      modelClearance: cfc.modelClearance,
      mounts: cfc.mounts.map((m, i) => ({
        target: m.target,
        writable: m.writable,
        label: m.label === null ? undefined : labelOf(m.label),
        integrityCounts: integrityCounts(i, m.label === null ? undefined : labelOf(m.label)),
        clearance: m.clearance,
        labelSource: m.labelSource ?? 'profile',
        inWorkload: m.inWorkload,
        ...(m.withheldBecause === undefined ? {} : { withheldBecause: m.withheldBecause }),
      })),
      network: network.value.mode,
      destinations: cfc.destinations.map((d) => ({ ...d, label: labelOf(d.label) })),
      sinks: sinks.data,
      unlabelled: cfc.unlabelled,
      env: (cfc.env ?? []).map((e) => ({
        name: e.name,
        label: e.label === null ? undefined : labelOf(e.label),
        labelSource: e.labelSource,
        inWorkload: e.inWorkload,
        ...(e.withheldBecause === undefined ? {} : { withheldBecause: e.withheldBecause }),
      })),
    },
  };
}

export function hostLabelsOf(r: HostToolLabelsRecord): HostToolLabels {
  return { ...r, result: r.result === null ? undefined : labelOf(r.result) };
}

/** An MCP tool as its listing recorded it (events-host.ts keeps the record open). */
const ListedTool = z.looseObject({
  name: z.string(),
  riskClass: MediationTool.shape.riskClass,
  sideEffectClass: MediationTool.shape.sideEffectClass,
  resourceScope: MediationTool.shape.resourceScope,
  permissionPolicy: MediationTool.shape.permissionPolicy,
});

export interface Mediation {
  readonly record: SnapshotMediation;
  /** Every tool the run could decide, by name: its contract and labels. */
  readonly tools: ReadonlyMap<string, MediationTool>;
}

/**
 * snapshot `mediation` with the MCP tools the run listed: a tool the snapshot does not name
 * is one an entry exposing `*` listed, contracted as its host_tools_listed record says and
 * labelled as its entry's unnamed tools. Undefined: a run recorded before `mediation`.
 */
export function mediationOf(run: RunEvidence): Mediation | { problem: string } | undefined {
  if (recordOf(run.snapshot.value)?.mediation === undefined) return undefined;
  const part = partOf(run.snapshot.value, 'mediation', SnapshotMediation);
  if (!part.ok) return { problem: 'snapshot.json mediation cannot be read' };
  const tools = new Map(part.value.tools.map((t) => [t.name, t]));
  for (const listing of eventsOf(run, 'host_tools_listed')) {
    const labels = part.value.unnamedMcpLabels[listing.data.tool];
    for (const raw of listing.data.exposed) {
      const t = ListedTool.safeParse(raw);
      if (!t.success || tools.has(t.data.name) || labels === undefined) continue;
      tools.set(t.data.name, {
        name: t.data.name,
        executor: 'host',
        riskClass: t.data.riskClass,
        sideEffectClass: t.data.sideEffectClass,
        resourceScope: t.data.resourceScope,
        permissionPolicy: t.data.permissionPolicy,
        cfc: labels,
      });
    }
  }
  return { record: part.value, tools };
}

/** One proposed call as the evidence tells it, for deciding it again. */
export interface CallRecord {
  readonly callId: string;
  readonly requested: TypedEvent<'tool_requested'> | undefined;
  /** What the model sent (the transcript's tool_use), when the transcript holds it. */
  readonly input: { readonly value: unknown } | undefined;
  readonly rejected: 'unknown_tool' | 'invalid_arguments' | undefined;
  readonly resolved: readonly TypedEvent<'cfc_handle'>[];
  readonly flows: readonly TypedEvent<'cfc_flow'>[];
  readonly decisions: readonly TypedEvent<'permission_decision'>[];
  readonly executed: boolean;
}

/** The transcript's tool_use inputs by id, in order (an id may recur across session turns). */
function transcriptInputs(run: RunEvidence): Map<string, unknown[]> {
  const out = new Map<string, unknown[]>();
  for (const t of run.transcript ?? [])
    for (const block of t.message?.content ?? []) {
      if (block.type !== 'tool_use') continue;
      const list = out.get(block.id) ?? [];
      list.push(block.input);
      out.set(block.id, list);
    }
  return out;
}

export function callRecords(run: RunEvidence): Map<string, CallRecord> {
  const inputs = transcriptInputs(run);
  const taken = new Map<string, number>();
  const calls = new Map<string, CallRecord>();
  const view = (callId: string): CallRecord => {
    let v = calls.get(callId);
    if (v === undefined) {
      v = {
        callId,
        requested: undefined,
        input: undefined,
        rejected: undefined,
        resolved: [],
        flows: [],
        decisions: [],
        executed: false,
      };
      calls.set(callId, v);
    }
    return v;
  };
  const set = (callId: string, patch: Partial<CallRecord>): void => {
    calls.set(callId, { ...view(callId), ...patch });
  };
  for (const e of eventsOf(run, 'tool_requested')) {
    const id = e.data.toolUseId;
    const n = taken.get(id) ?? 0;
    taken.set(id, n + 1);
    const list = inputs.get(id);
    set(e.data.callId, {
      requested: e,
      input: list !== undefined && n < list.length ? { value: list[n] } : undefined,
    });
  }
  for (const e of eventsOf(run, 'tool_rejected')) set(e.data.callId, { rejected: e.data.reason });
  for (const e of eventsOf(run, 'cfc_handle'))
    if (e.data.action === 'resolved')
      set(e.data.callId, { resolved: [...view(e.data.callId).resolved, e] });
  for (const e of eventsOf(run, 'cfc_flow'))
    set(e.data.callId, { flows: [...view(e.data.callId).flows, e] });
  for (const e of eventsOf(run, 'permission_decision'))
    set(e.data.call_id, { decisions: [...view(e.data.call_id).decisions, e] });
  for (const e of eventsOf(run, 'tool_executed')) set(e.data.callId, { executed: true });
  return calls;
}

/**
 * The arguments a call was decided with, when the evidence holds them exactly: the model's
 * input, if no handle was resolved into it and its digest is the decision's (a host tool's
 * opaque references are resolved before the decision: its input is then not what was
 * decided). `sent`: what the model sent, whatever was resolved into it.
 */
export function decidedArgs(
  call: CallRecord,
  tool: string,
): { exact: boolean; sent: unknown } | undefined {
  if (call.input === undefined) return undefined;
  const decision = call.decisions[0];
  const exact =
    call.resolved.length === 0 &&
    decision !== undefined &&
    argsDigest(tool, call.input.value) === decision.data.args_digest;
  return { exact, sent: call.input.value };
}
