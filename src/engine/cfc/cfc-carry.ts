// The engine's side of a carried model context (cfc/carried.ts): what a continuing run takes
// from the run it continues (the context's label and the values its handles name, read back
// as that run's chain recorded them), where a run keeps the values it holds
// (cfc-handles/, before a handle is handed out), and what it records of a carried context
// before its first model request (`cfc_carried`, `cfc_handle inherited`).
import { randomBytes } from 'node:crypto';
import {
  contextLabelAtEnd,
  type CarriedContext,
  type CarriedKind,
  type RecordedSources,
} from '../../cfc/carried.js';
import type { HeldValue } from '../../cfc/handles.js';
import { label } from '../../cfc/label.js';
import type { CfcRuntime } from '../../cfc/runtime.js';
import type { EventRecord } from '../../evidence/event-log.js';
import { readHeldValues } from '../../evidence/held-values.js';
import { heldValueFile, type HeldValueRecord } from '../../evidence/schema/held-value.js';
import { SnapshotCfc, SnapshotMediation } from '../../evidence/schema/snapshot.js';
import type { RunDetail } from '../../evidence/runs-index.js';
import type { EventInput, EventType } from '../../evidence/schema/registry.js';

interface EventAppender {
  append<T extends EventType>(type: T, data: EventInput<T>, durable?: boolean): Promise<unknown>;
}

/** What a continuing run needs of the run it continues. */
export interface ContinuedRun extends RecordedSources {
  readonly runId: string;
  readonly dir: string;
  readonly events: readonly EventRecord[];
}

/** A run read back (runs-index.ts) as a continuing run needs it; its snapshot's CFC part parsed. */
export function continuedRun(run: RunDetail): ContinuedRun {
  return { runId: run.runId, dir: run.dir, events: run.events, ...recordedSources(run.snapshot) };
}

/** What a snapshot records of a run's sources (cfc/carried.ts); a part unreadable: undefined. */
export function recordedSources(
  snapshot: Readonly<Record<string, unknown>> | undefined,
): RecordedSources {
  const cfc = SnapshotCfc.safeParse(snapshot?.cfc);
  const mediation = SnapshotMediation.safeParse(snapshot?.mediation);
  return {
    cfc: cfc.success ? cfc.data : undefined,
    mediation: mediation.success ? mediation.data : undefined,
  };
}

/**
 * The context a run continues (resume, restore) or executes (an approved plan): its label
 * at its end and, where the new run continues the conversation itself, the values its
 * handles name. Throws (HeldValuesUnreadable) when a recorded value cannot be read back.
 */
export async function carriedFromRun(
  run: ContinuedRun,
  kind: Exclude<CarriedKind, 'delegation'>,
): Promise<CarriedContext> {
  const { label: l, basis } = contextLabelAtEnd(run.events, run);
  // A plan is the old model's text, not its conversation: no handle of it is in the plan's
  // context (a handle it names stays inert).
  const values = kind === 'plan' ? [] : (await readHeldValues(run)).map(heldOf);
  return { kind, fromRunId: run.runId, label: l, basis, values };
}

function heldOf(r: HeldValueRecord): HeldValue {
  return {
    handle: r.handle,
    runId: r.runId,
    callId: r.callId,
    label: label(r.label),
    integrityCounts: r.integrityCounts,
    value: r.value,
  };
}

/** Keeps each held value in the run directory (one file, a nonce: schema/held-value.ts). */
export function heldValueKeeper(dir: {
  writeFile(file: string, raw: string): Promise<string>;
}): (held: HeldValue) => Promise<void> {
  return async (held) => {
    const record: HeldValueRecord = {
      schema: 'cfh.held-value/1',
      handle: held.handle,
      runId: held.runId,
      callId: held.callId,
      label: {
        confidentiality: [...held.label.confidentiality],
        integrity: [...held.label.integrity],
      },
      integrityCounts: held.integrityCounts,
      value: held.value,
      nonce: randomBytes(16).toString('hex'),
    };
    await dir.writeFile(heldValueFile(held.handle), `${JSON.stringify(record)}\n`);
  };
}

/**
 * Before the first model request: each carried context recorded with its label, and the
 * values its handles name held again (recorded one by one), so the model's old handles
 * resolve to the same referents (AH-REF-3) and nothing else does.
 */
export async function startCarried(cfc: CfcRuntime, events: EventAppender): Promise<void> {
  const recorder = { event: events.append.bind(events) };
  for (const c of cfc.carried) {
    const values = c.values ?? [];
    await cfc.handles.inherit(values);
    for (const v of values)
      await recorder.event(
        'cfc_handle',
        {
          handle: v.handle,
          action: 'inherited',
          callId: v.callId,
          label: {
            confidentiality: [...v.label.confidentiality],
            integrity: [...v.label.integrity],
          },
          integrityCounts: v.integrityCounts,
          fromRunId: v.runId,
        },
        true,
      );
    await recorder.event(
      'cfc_carried',
      {
        kind: c.kind,
        fromRunId: c.fromRunId,
        ...(c.fromCallId === undefined ? {} : { fromCallId: c.fromCallId }),
        label: { confidentiality: [...c.label.confidentiality], integrity: [...c.label.integrity] },
        basis: c.basis,
        handles: values.length,
        ...(c.slot === undefined ? {} : { slot: { flag: c.slot.flag, file: c.slot.file } }),
      },
      true,
    );
  }
}
