// report.json's `cfc` (ReportCfc, AH-CFC-14/15): the run's CFC mode as its snapshot says,
// and what the CFC machinery decided, counted from the events the run recorded, never from
// what a component says it did. A pure function over the event list (summarizeCfc), and a
// tally the run session feeds from EventLog.subscribe, so the report is the log's own count.
import { z } from 'zod';
import { cfcEvents } from './schema/events-cfc.js';
import { ReportCfc } from './schema/report.js';
import { SnapshotCfc } from './schema/snapshot.js';

export type ReportCfcValue = z.infer<typeof ReportCfc>;
export type CfcMode = ReportCfcValue['mode'];

const ModeOnly = z.looseObject({ mode: SnapshotCfc.shape.mode });

/** The two modes that enforce; observe is diagnostic, never enforcement (AH-CFC-15). */
export function isEnforcedMode(mode: CfcMode): boolean {
  return mode === 'enforce-explicit' || mode === 'enforce-strict';
}

/**
 * The mode a snapshot records: its `cfc.mode`, or `disabled` for a snapshot without one
 * (no CFC configuration reached it: nothing was labelled, nothing is claimed).
 */
export function cfcModeOfSnapshot(snapshot: unknown): CfcMode {
  if (typeof snapshot !== 'object' || snapshot === null || !('cfc' in snapshot)) return 'disabled';
  const parsed = ModeOnly.safeParse(snapshot.cfc);
  return parsed.success ? parsed.data.mode : 'disabled';
}

export interface CfcEventLike {
  readonly type: string;
  readonly data: unknown;
}

/** ReportCfc from the events of a run; an event whose data does not parse is not counted. */
export function summarizeCfc(mode: CfcMode, events: Iterable<CfcEventLike>): ReportCfcValue {
  const flows = { allowed: 0, denied: 0, wouldDeny: 0, endorsed: 0 };
  // An endorsement is counted once per call, whether recorded as the endorsement event or
  // (as the schema allows) as a flow verdict `endorsed`.
  const endorsedCalls = new Set<string>();
  let handles = 0;
  let opaque = 0;
  let declassified = 0;
  let carried = 0;
  for (const e of events) {
    if (e.type === 'cfc_flow') {
      const f = cfcEvents.cfc_flow.safeParse(e.data);
      if (!f.success) continue;
      if (f.data.verdict === 'allow') flows.allowed += 1;
      else if (f.data.verdict === 'deny') flows.denied += 1;
      else if (f.data.verdict === 'would_deny') flows.wouldDeny += 1;
      else endorsedCalls.add(f.data.callId);
    } else if (e.type === 'cfc_endorsement') {
      const x = cfcEvents.cfc_endorsement.safeParse(e.data);
      if (x.success) endorsedCalls.add(x.data.callId);
    } else if (e.type === 'cfc_handle') {
      const h = cfcEvents.cfc_handle.safeParse(e.data);
      if (h.success && h.data.action === 'minted') handles += 1;
    } else if (e.type === 'cfc_label') {
      const l = cfcEvents.cfc_label.safeParse(e.data);
      if (l.success && l.data.disposition === 'opaque') opaque += 1;
    } else if (e.type === 'cfc_declassified') {
      if (cfcEvents.cfc_declassified.safeParse(e.data).success) declassified += 1;
    } else if (e.type === 'cfc_carried') {
      if (cfcEvents.cfc_carried.safeParse(e.data).success) carried += 1;
    }
  }
  flows.endorsed = endorsedCalls.size;
  return ReportCfc.parse({
    mode,
    enforced: isEnforcedMode(mode),
    flows,
    handles,
    opaque,
    declassified,
    carried,
  });
}

const COUNTED: ReadonlySet<string> = new Set([
  'cfc_flow',
  'cfc_endorsement',
  'cfc_handle',
  'cfc_label',
  'cfc_declassified',
  'cfc_carried',
]);

/** Keeps the CFC events of a run as they are appended (EventLog.subscribe), for its report. */
export class CfcTally {
  readonly #events: CfcEventLike[] = [];

  readonly listener = (_line: string, record: { type: string; data: unknown }): void => {
    if (COUNTED.has(record.type)) this.#events.push({ type: record.type, data: record.data });
  };

  summary(mode: CfcMode): ReportCfcValue {
    return summarizeCfc(mode, this.#events);
  }
}
