// The label of a finished call's observation, by provenance only (AH-CFC-1/2: never from
// what the output says), and what the model gets of it (AH-CFC-6/7/18):
//   read_file, list_dir, grep → the mount the path resolves into (grep also every mount
//     below its start path, which -r walks into); a path in no mount is the image's own
//     files (source `image`: exposed, not joined);
//   exec → the influence, every mount of the workload container, every destination data can
//     come in from (open: integrity [network]), and what entered a per-run container before;
//   a host tool → its resultLabel;
//   write_file, edit_file, and cfh's own text (a timeout) → the influence: joining changes
//     nothing.
// A source with no label is `unlabelled`. An observation whose confidentiality the model
// is not cleared for is replaced by a handle (opaque); under enforce-explicit an unlabelled
// one is opaque too; under observe it is shown and the gap recorded.
import path from 'node:path/posix';
import { UNLABELLED_ATOM } from '../config/cfc-schema.js';
import { describeLabel, joinAll, label, uncleared, type Label } from '../cfc/label.js';
import {
  mountOf,
  mountsUnder,
  workloadReadable,
  type CfcPlan,
  type MountLabel,
} from '../cfc/label-map.js';
import type { CfcRuntime } from '../cfc/runtime.js';
import type { LabelRecord } from '../evidence/schema/events-cfc.js';
import type { Observation } from '../tools/observation.js';
import type { ToolDefinition } from '../tools/contract.js';
import type { ToolCallDeps } from './tool-call-deps.js';

const UNLABELLED: Label = label({ confidentiality: [UNLABELLED_ATOM] });
const READS_PATH = new Set(['read_file', 'list_dir', 'grep']);

export interface ObservationLabel {
  /** Where the label came from: `mount /secrets`, `image`, `exec`, `host tool x`, `cfh`. */
  readonly source: string;
  readonly label: Label;
  /** Sources with no label the observation carries (then `label` holds `unlabelled`). */
  readonly unlabelled: readonly string[];
  /** False: not joined into the context (the image's own files). */
  readonly joins: boolean;
}

export interface ObservationFacts {
  readonly plan: CfcPlan;
  readonly workspaceTarget: string;
  readonly influence: Label;
  /** exec in a per-run container: what entered it before this call. */
  readonly container?: Label | undefined;
  /** A host-side result whose runner knows what it is made of (a child run's end). */
  readonly known?: Label | undefined;
}

function mountLabel(m: MountLabel): { label: Label; unlabelled: string[] } {
  return m.label === undefined
    ? { label: UNLABELLED, unlabelled: [`mount ${m.target}`] }
    : { label: m.label, unlabelled: [] };
}

function pathOf(args: unknown): string | undefined {
  if (typeof args !== 'object' || args === null || !('path' in args)) return undefined;
  return typeof args.path === 'string' ? args.path : undefined;
}

/** The label an executed call's observation carries, by where its content came from. */
export function observationLabel(
  tool: ToolDefinition,
  args: unknown,
  observation: Observation,
  facts: ObservationFacts,
): ObservationLabel {
  const { plan, influence } = facts;
  const own = { label: influence, unlabelled: [], joins: true };
  // cfh's own words (the call ran out of time or was stopped): nothing of a source.
  if (observation.status === 'timeout' || observation.status === 'aborted')
    return { source: 'cfh', ...own };
  if (tool.executor === 'host') {
    const result = tool.cfc?.result;
    const source = `host tool ${tool.name}`;
    // A child's return is its own model's output under the child's context label at its
    // end (AH-CFC-13), whatever the tool declares.
    // The task it was given carried this call's influence, so that joins too.
    if (facts.known !== undefined)
      return { source, label: joinAll(influence, [facts.known]), unlabelled: [], joins: true };
    return result === undefined
      ? { source, label: UNLABELLED, unlabelled: [source], joins: true }
      : { source, label: result, unlabelled: [], joins: true };
  }
  if (tool.name === 'exec') {
    const readable = workloadReadable(plan);
    const parts = [...readable.labels];
    if (readable.unlabelled.length > 0) parts.push(UNLABELLED);
    if (facts.container !== undefined) parts.push(facts.container);
    return {
      source: 'exec',
      label: joinAll(influence, parts),
      unlabelled: readable.unlabelled,
      joins: true,
    };
  }
  if (READS_PATH.has(tool.name)) {
    const p = pathOf(args) ?? '.';
    const abs = path.normalize(p.startsWith('/') ? p : path.join(facts.workspaceTarget, p));
    const at = mountOf(plan, abs, facts.workspaceTarget);
    const mounts =
      tool.name === 'grep'
        ? mountsUnder(plan, abs, facts.workspaceTarget)
        : at === undefined
          ? []
          : [at];
    // /proc, /sys and /dev are the kernel's view of the file-tool container, which holds
    // other calls' helpers and their inputs: never a labelled source, so opaque under
    // enforcement.
    if (mounts.length === 0 && /^\/(proc|sys|dev)(\/|$)/.test(abs))
      return { source: `kernel ${abs}`, label: UNLABELLED, unlabelled: [abs], joins: true };
    if (mounts.length === 0)
      return { source: 'image', label: label(), unlabelled: [], joins: false };
    const labels = mounts.map(mountLabel);
    const first = labels[0] as { label: Label };
    return {
      source: mounts.map((m) => `mount ${m.target}`).join(', '),
      label: joinAll(
        first.label,
        labels.slice(1).map((l) => l.label),
      ),
      unlabelled: labels.flatMap((l) => l.unlabelled),
      joins: true,
    };
  }
  // write_file, edit_file: cfh's text and the model's path, but whether it worked says
  // something of the file (edit_file's "occurs 0 times" reads it): the mount's label joins.
  const p = pathOf(args);
  const m = p === undefined ? undefined : mountOf(plan, p, facts.workspaceTarget);
  if (m === undefined) return { source: 'cfh', ...own };
  const ml = mountLabel(m);
  return {
    source: `mount ${m.target}`,
    label: joinAll(influence, [ml.label]),
    unlabelled: ml.unlabelled,
    joins: true,
  };
}

export function labelRecord(l: Label): LabelRecord {
  return { confidentiality: [...l.confidentiality], integrity: [...l.integrity] };
}

export interface Disposition {
  readonly kind: 'exposed' | 'opaque';
  /** What the model gets. */
  readonly observation: Observation;
  /** The label to join into the context after the turn (exposed and joining only). */
  readonly expose?: Label | undefined;
  readonly handle?: {
    readonly handle: string;
    readonly valueSha256: string;
    readonly chars: number;
  };
  readonly reason?: string | undefined;
}

/** The content a handle holds: the file's text for read_file, else the items, one a line. */
function contentOf(observation: Observation): string {
  return observation.items.length === 0 ? observation.summary : observation.items.join('\n');
}

/**
 * Exposed or opaque (AH-CFC-6/18, design 4): confidentiality the model is not cleared for
 * makes it opaque in every mode but observe, where the would-be handle is only recorded;
 * an unlabelled source makes it opaque under enforce-explicit (enforce-strict refused it at
 * planning), and under observe the gap is recorded.
 */
export function dispose(
  cfc: CfcRuntime,
  observation: Observation,
  labelled: ObservationLabel,
): Disposition {
  const refused = uncleared(labelled.label, cfc.plan.modelClearance).filter(
    (a) => a !== UNLABELLED_ATOM,
  );
  const gap = labelled.unlabelled.length > 0;
  const expose = labelled.joins ? labelled.label : undefined;
  if (!cfc.enforcing) {
    const notes = [
      ...(refused.length > 0
        ? [
            `observe: exposed, though its confidentiality [${refused.join(', ')}] is not in modelClearance (enforcement would hold it as a handle)`,
          ]
        : []),
      ...(gap
        ? [
            `observe: ${labelled.unlabelled.join(', ')} has no label (enforce-explicit would hold it as a handle, enforce-strict refuses the run)`,
          ]
        : []),
    ];
    return {
      kind: 'exposed',
      observation,
      expose,
      reason: notes.length === 0 ? undefined : notes.join('; '),
    };
  }
  if (refused.length === 0 && !gap) return { kind: 'exposed', observation, expose };
  const content = contentOf(observation);
  const minted = cfc.handles.mint(content, labelled.label);
  const why =
    refused.length > 0
      ? `its confidentiality [${refused.join(', ')}] is not in modelClearance`
      : `${labelled.unlabelled.join(', ')} has no label (enforce-explicit)`;
  const status = observation.status === 'success' ? '' : ` (status ${observation.status})`;
  return {
    kind: 'opaque',
    observation: {
      status: observation.status,
      summary: `the result${status} is labelled ${describeLabel(labelled.label)}, which may not enter the model context; it is held as ${minted.handle} (pass the handle to a tool cleared for it)`,
      items: [minted.handle],
      evidence_refs: observation.evidence_refs,
      next_valid_actions: [],
    },
    handle: { handle: minted.handle, valueSha256: minted.valueSha256, chars: minted.chars },
    reason: why,
  };
}

/**
 * What the model gets of an executed call, recorded: `cfc_handle {minted}` for an opaque
 * one, then `cfc_label`, both before the result reaches the model (AH-CFC-16). After an exec
 * in a per-run container what it read and carried stays in that container (design 7).
 * Without CFC (deps.cfc undefined: disabled) the observation is returned as it is.
 */
export async function labelExecuted(
  deps: ToolCallDeps,
  callId: string,
  tool: ToolDefinition,
  args: unknown,
  observation: Observation,
  explicit: readonly Label[] = [],
  known?: Label,
): Promise<{ observation: Observation; expose?: Label | undefined }> {
  const cfc = deps.cfc;
  if (cfc === undefined || cfc.mode === 'disabled') return { observation };
  const perRun = deps.toolLifetime !== 'per-call';
  // What the call used explicitly (resolved handles) shaped its result too: an exec that
  // echoes a handle, a grep whose pattern is one (AH-CFC-10).
  const influence = explicit.length === 0 ? cfc.context() : joinAll(cfc.context(), explicit);
  const labelled = observationLabel(tool, args, observation, {
    plan: cfc.plan,
    workspaceTarget: cfc.workspaceTarget,
    influence,
    container: tool.name === 'exec' && perRun ? cfc.containerLabel() : undefined,
    known,
  });
  if (tool.name === 'exec' && perRun) cfc.noteContainer(labelled.label);
  const d = dispose(cfc, observation, labelled);
  const record = labelRecord(labelled.label);
  if (d.handle !== undefined)
    await deps.recorder.event(
      'cfc_handle',
      { ...d.handle, action: 'minted', callId, label: record },
      true,
    );
  await deps.recorder.event(
    'cfc_label',
    {
      callId,
      source: labelled.source,
      label: record,
      disposition: d.kind,
      ...(d.handle === undefined ? {} : { handle: d.handle.handle }),
      ...(d.reason === undefined
        ? labelled.joins
          ? {}
          : { reason: "the image's own files: recorded, not joined" }
        : { reason: d.reason }),
    },
    true,
  );
  return { observation: d.observation, expose: d.expose };
}

/** A call that did not run (unknown, invalid, refused): nothing of it joins (AH-CFC-7). */
export async function labelRefused(
  deps: ToolCallDeps,
  callId: string,
  status: string,
): Promise<void> {
  const cfc = deps.cfc;
  if (cfc === undefined || cfc.mode === 'disabled') return;
  await deps.recorder.event(
    'cfc_label',
    {
      callId,
      source: 'cfh',
      label: labelRecord(cfc.context()),
      disposition: 'denied',
      reason: `not run (${status}): the model gets cfh's refusal only, not joined`,
    },
    true,
  );
}
