// The label of a finished call's observation, by provenance only (AH-CFC-1/2: never from
// what the output says, nor from how the call ended), and what the model gets of it
// (AH-CFC-6/7/18). Every observation carries the labels of the handles its call used
// (AH-CFC-10, AH-REF-4: an exec that echoes one, a grep whose pattern or path is one, the
// error a file tool gives for one), joined with where its content came from:
//   read_file, list_dir, grep → the mount the path resolves into (grep also every mount
//     below its start path, which -r walks into); a path in no mount is the image's own
//     files (source `image`: recorded, not joined);
//   write_file, edit_file → the mount the path resolves into (whether it worked says
//     something of the file);
//   exec → the call's influence, every mount of the workload container, every destination
//     data can come in from (open: integrity [network]), what entered a per-run container;
//   a host tool → the call's influence (its inputs) joined with its resultLabel; a
//     declassifier's resultLabel alone (recorded); a child run's end label for `delegate`.
// The same holds whatever the status (a timeout, an error): how a call ended is never a way
// around its label. A source with no label is `unlabelled`. An observation whose
// confidentiality the model is not cleared for is replaced by a handle (opaque), built from
// the handle and its label alone; under enforce-explicit an unlabelled one is opaque too;
// under observe it is shown and the gap recorded.
import path from 'node:path/posix';
import { UNLABELLED_ATOM } from '../../config/cfc-schema.js';
import { describeLabel, joinAll, label, uncleared, type Label } from '../../cfc/label.js';
import {
  mountOf,
  mountsUnder,
  workloadReadable,
  type CfcPlan,
  type MountLabel,
} from '../../cfc/label-map.js';
import type { CfcRuntime } from '../../cfc/runtime.js';
import type { LabelRecord } from '../../evidence/schema/events-cfc.js';
import type { Observation } from '../../tools/observation.js';
import type { ToolDefinition } from '../../tools/contract.js';
import type { ToolCallDeps } from '../agent/tool-call-deps.js';

const UNLABELLED: Label = label({ confidentiality: [UNLABELLED_ATOM] });
const READS_PATH = new Set(['read_file', 'list_dir', 'grep']);

export interface ObservationLabel {
  /** Where the label came from: `mount /secrets`, `image`, `exec`, `host tool x`. */
  readonly source: string;
  readonly label: Label;
  /** Sources with no label the observation carries (then `label` holds `unlabelled`). */
  readonly unlabelled: readonly string[];
  /** False: not joined into the context (the image's own files). */
  readonly joins: boolean;
  /** False: read only from operator mounts whose integrity does not count in a handle. */
  readonly integrityCounts: boolean;
  /** A declassifier's result: what its inputs carried that its result does not. */
  readonly declassified?: Label | undefined;
}

export interface ObservationFacts {
  readonly plan: CfcPlan;
  readonly workspaceTarget: string;
  /** The context the call was proposed in. */
  readonly influence: Label;
  /** The labels of the handles the call used (what it carried into a call explicitly). */
  readonly explicit?: readonly Label[] | undefined;
  /** exec in a per-run container: what entered it before this call. */
  readonly container?: Label | undefined;
  /** A host-side result whose runner knows what it is made of (a child run's end). */
  readonly known?: Label | undefined;
}

/** Where an observation's content came from: its label before the influence joins. */
interface Provenance {
  readonly source: string;
  readonly parts: readonly Label[];
  readonly unlabelled: readonly string[];
  readonly joins?: boolean;
  readonly integrityCounts?: boolean;
  /** Shaped by the whole context (exec's command, a host tool's input), not only its path. */
  readonly influenced?: boolean;
  /** A declassifier: its result label alone, its inputs not joined. */
  readonly alone?: boolean;
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

function fromMounts(mounts: readonly MountLabel[]): Provenance {
  const labels = mounts.map(mountLabel);
  return {
    source: mounts.map((m) => `mount ${m.target}`).join(', '),
    parts: labels.map((l) => l.label),
    unlabelled: labels.flatMap((l) => l.unlabelled),
    integrityCounts: mounts.some((m) => m.integrityCounts),
  };
}

function hostProvenance(tool: ToolDefinition, facts: ObservationFacts): Provenance {
  const source = `host tool ${tool.name}`;
  // A child's return is its own model's output under the child's context label at its end
  // (AH-CFC-13); the task it was given carried this call's influence, which joins too.
  if (facts.known !== undefined)
    return { source, parts: [facts.known], unlabelled: [], influenced: true };
  const result = tool.cfc?.result;
  if (result === undefined)
    return { source, parts: [UNLABELLED], unlabelled: [source], influenced: true };
  return {
    source,
    parts: [result],
    unlabelled: [],
    influenced: true,
    alone: tool.cfc?.declassifies === true,
  };
}

function readProvenance(tool: ToolDefinition, args: unknown, facts: ObservationFacts): Provenance {
  const { plan } = facts;
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
    return { source: `kernel ${abs}`, parts: [UNLABELLED], unlabelled: [abs] };
  if (mounts.length === 0)
    return plan.image === undefined
      ? { source: 'image', parts: [], unlabelled: [], joins: false }
      : { source: 'image', parts: [plan.image], unlabelled: [] };
  return fromMounts(mounts);
}

function provenanceOf(tool: ToolDefinition, args: unknown, facts: ObservationFacts): Provenance {
  if (tool.executor === 'host') return hostProvenance(tool, facts);
  if (tool.name === 'exec') {
    const readable = workloadReadable(facts.plan);
    const parts = [...readable.labels];
    if (readable.unlabelled.length > 0) parts.push(UNLABELLED);
    if (facts.container !== undefined) parts.push(facts.container);
    return { source: 'exec', parts, unlabelled: readable.unlabelled, influenced: true };
  }
  if (READS_PATH.has(tool.name)) return readProvenance(tool, args, facts);
  // write_file, edit_file: whether it worked says something of the file (edit_file's
  // "occurs 0 times" reads it): the mount's label joins.
  const p = pathOf(args);
  const m = p === undefined ? undefined : mountOf(facts.plan, p, facts.workspaceTarget);
  if (m === undefined) return { source: 'cfh', parts: [], unlabelled: [] };
  return fromMounts([m]);
}

/** The label an executed call's observation carries, by where its content came from. */
export function observationLabel(
  tool: ToolDefinition,
  args: unknown,
  facts: ObservationFacts,
): ObservationLabel {
  const p = provenanceOf(tool, args, facts);
  const explicit = facts.explicit ?? [];
  const inputs = p.influenced === true ? [facts.influence, ...explicit] : explicit;
  const base = {
    source: p.source,
    unlabelled: p.unlabelled,
    joins: p.joins ?? true,
    integrityCounts: p.integrityCounts ?? true,
  };
  const own = p.parts.length === 0 ? undefined : joinAll(p.parts[0] as Label, p.parts.slice(1));
  if (p.alone === true && own !== undefined)
    return { ...base, label: own, declassified: joinAll(facts.influence, explicit) };
  const parts = [...inputs, ...p.parts];
  // Nothing of a source (a write outside every mount): cfh's words under the influence.
  const first = parts[0];
  return {
    ...base,
    label: first === undefined ? facts.influence : joinAll(first, parts.slice(1)),
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
  readonly handle?: string | undefined;
  readonly reason?: string | undefined;
}

/** The content a handle holds: the file's text for read_file, else the items, one a line. */
function contentOf(observation: Observation): string {
  const body = observation.items.length === 0 ? observation.summary : observation.items.join('\n');
  // How it ended is part of what is held (a cleared tool may need it), never shown.
  return observation.status === 'success' ? body : `[${observation.status}] ${body}`;
}

/**
 * What the model gets in place of a result it may not see (AH-CFC-6/18): built from the
 * handle and the label alone, so its status, fields and text are the same whatever the call
 * did (succeeded, failed, printed nothing, timed out): an opaque result answers no question.
 */
export function opaqueObservation(handle: string, l: Label): Observation {
  return {
    status: 'success',
    summary: `the result is labelled ${describeLabel(l)}, which may not enter the model context; it is held as ${handle} (pass the handle to a tool cleared for it)`,
    items: [handle],
    evidence_refs: [],
    next_valid_actions: [],
  };
}

/**
 * Exposed or opaque (AH-CFC-6/18, design 4): confidentiality the model is not cleared for
 * makes it opaque in every mode but observe, where the would-be handle is only recorded;
 * an unlabelled source makes it opaque under enforce-explicit (enforce-strict refused it at
 * planning), and under observe the gap is recorded. An opaque result is held first.
 */
export async function dispose(
  cfc: CfcRuntime,
  callId: string,
  observation: Observation,
  labelled: ObservationLabel,
): Promise<Disposition> {
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
  const held = await cfc.handles.mint(
    callId,
    contentOf(observation),
    labelled.label,
    labelled.integrityCounts,
  );
  const why =
    refused.length > 0
      ? `its confidentiality [${refused.join(', ')}] is not in modelClearance`
      : `${labelled.unlabelled.join(', ')} has no label (enforce-explicit)`;
  return {
    kind: 'opaque',
    observation: opaqueObservation(held.handle, labelled.label),
    handle: held.handle,
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
  // What the call used explicitly (resolved handles) shaped its result, errors included:
  // an exec that echoes a handle, a grep whose pattern or path is one (AH-CFC-10, AH-REF-4).
  const labelled = observationLabel(tool, args, {
    plan: cfc.plan,
    workspaceTarget: cfc.workspaceTarget,
    influence: cfc.context(),
    explicit,
    container: tool.name === 'exec' && perRun ? cfc.containerLabel() : undefined,
    known,
  });
  if (tool.name === 'exec' && perRun) cfc.noteContainer(labelled.label);
  const d = await dispose(cfc, callId, observation, labelled);
  const record = labelRecord(labelled.label);
  if (labelled.declassified !== undefined)
    await deps.recorder.event(
      'cfc_declassified',
      {
        callId,
        tool: tool.name,
        inputs: labelRecord(labelled.declassified),
        result: record,
        by: 'profile',
      },
      true,
    );
  if (d.handle !== undefined)
    await deps.recorder.event(
      'cfc_handle',
      {
        handle: d.handle,
        action: 'minted',
        callId,
        label: record,
        integrityCounts: labelled.integrityCounts,
      },
      true,
    );
  await deps.recorder.event(
    'cfc_label',
    {
      callId,
      source: labelled.source,
      label: record,
      disposition: d.kind,
      joined: d.kind === 'exposed' && labelled.joins,
      ...(d.handle === undefined ? {} : { handle: d.handle }),
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
