// Events of information flow control (CFC integration profile, AH-CFC-3/7/11/16/18):
// the capture of the direct command, the label each observation was given and what
// became of it, the model context's influence at each model turn, each flow decision,
// each endorsement a person gave, each handle minted or resolved. Kept in the chained
// events, under the same boundary as the transcript (AH-CFC-17); handle values never, nor
// any digest or length of one.
import { z } from 'zod';
import { CallId, Count, Sha256Hex } from './common.js';
import { Approver } from './events-tools.js';

/** A label as recorded: sorted, unique atoms. */
export const LabelRecord = z.strictObject({
  confidentiality: z.array(z.string()),
  integrity: z.array(z.string()),
});
export type LabelRecord = z.infer<typeof LabelRecord>;

/** The trusted input-capture record of a prompt slot (AH-CFC-3). */
export const InputCaptureRecord = z.strictObject({
  captureId: z.string().regex(/^capture-[0-9]{1,6}$/),
  kernel: z.literal('cfh'),
  subject: z.strictObject({
    uid: z.number().int().nullable(),
    user: z.string(),
    /** True: a caller named the subject and vouches for it (recorded as such). */
    vouched: z.boolean(),
  }),
  surface: z.enum(['cli', 'stdio', 'mcp']),
  slot: z.enum(['prompt']),
  sha256: Sha256Hex,
  chars: Count,
});
export type InputCaptureRecord = z.infer<typeof InputCaptureRecord>;

export const FlowSinkRecord = z.strictObject({
  sink: z.string(),
  clearance: z.array(z.string()),
  requires: z.array(z.string()),
});

export const cfcEvents = {
  /** The direct command was captured: only this mints `prompt:direct` (AH-CFC-3). */
  prompt_captured: InputCaptureRecord,
  /** The label cfh gave a call's observation, where from, and what the model got. */
  cfc_label: z.strictObject({
    callId: CallId,
    source: z.string(),
    label: LabelRecord,
    /** exposed: the model saw it (joined); opaque: a handle; denied: nothing of it. */
    disposition: z.enum(['exposed', 'opaque', 'denied']),
    handle: z.string().optional(),
    reason: z.string().optional(),
    /** false: exposed but not joined (the image's own files); absent in older logs. */
    joined: z.boolean().optional(),
  }),
  /**
   * A model context carried in from another run (resume, restore, a delegation, a plan): the
   * new context starts at least at its label (AH-CFC-5/7/12). Before the first model request.
   */
  cfc_carried: z.strictObject({
    kind: z.enum(['resume', 'restore', 'delegation', 'plan', 'slot']),
    fromRunId: z.string(),
    fromCallId: CallId.optional(),
    label: LabelRecord,
    /** recorded: the old run's own record; sources: it recorded none, every source counts. */
    basis: z.enum(['recorded', 'sources', 'call']),
    /** Handles of the old context this run holds again (their values under cfc-handles/). */
    handles: Count,
    /** kind `slot`: the prompt slot read from a file, and the file as given. */
    slot: z.strictObject({ flag: z.enum(['--context', '--quote']), file: z.string() }).optional(),
  }),
  /** The model context's label before a model turn: what every call of the turn carries. */
  cfc_influence: z.strictObject({
    turn: z.number().int().positive(),
    label: LabelRecord,
    /** Observations joined into it so far. */
    joined: Count,
    /** The capture record whose authority the context still carries, if any. */
    authority: z.string().nullable(),
  }),
  /** The flow decision of one call, before policy (AH-CFC-9/10/11). */
  cfc_flow: z.strictObject({
    callId: CallId,
    tool: z.string(),
    mode: z.enum(['observe', 'enforce-explicit', 'enforce-strict']),
    verdict: z.enum(['allow', 'deny', 'would_deny', 'endorsed']),
    rule: z.string(),
    reason: z.string(),
    influence: LabelRecord,
    explicit: LabelRecord.nullable(),
    label: LabelRecord,
    sinks: z.array(FlowSinkRecord),
    violations: z.array(
      z.strictObject({
        sink: z.string(),
        uncleared: z.array(z.string()),
        missing: z.array(z.string()),
      }),
    ),
    /** The input-capture record whose authority the request uses (AH-CFC-9), or none. */
    authority: z.string().nullable(),
    handles: z.array(z.string()),
  }),
  /** A person let a violating flow run: what they endorsed or declassified, for which value. */
  cfc_endorsement: z.strictObject({
    callId: CallId,
    kind: z.enum(['endorse', 'declassify']),
    confidentiality: z.array(z.string()),
    integrity: z.array(z.string()),
    approver: Approver,
    argsDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  }),
  /**
   * What a call (or a command run, no callId) may write into a writable mount, recorded
   * before it can: the host tree's record in the state directory is raised first
   * (`recorded`; a draft's copy counts for the host workspace), a mount with no resolved
   * host tree is `untracked` (cfc/written-labels.ts). A call to a cleared host tool names
   * the tool (`target: host tool NAME`) and the tree its configuration names as its store.
   */
  cfc_written: z.strictObject({
    callId: CallId.optional(),
    target: z.string(),
    label: LabelRecord,
    tree: z.string().nullable(),
    held: z.enum(['recorded', 'untracked']),
  }),
  /**
   * A host tool the operator declared a declassifier answered: its result carries its own
   * label alone, not what its inputs carried (which this records), on the profile's word.
   */
  cfc_declassified: z.strictObject({
    callId: CallId,
    tool: z.string(),
    inputs: LabelRecord,
    result: LabelRecord,
    by: z.literal('profile'),
  }),
  /**
   * A value held back from the model as a handle, held again by a run continuing the context
   * it was minted in, or resolved in a call (AH-CFC-18). No digest or length of the value:
   * those would answer guesses (its file under cfc-handles/ is recorded with a nonce).
   */
  cfc_handle: z.strictObject({
    handle: z.string().regex(/^cfh-val:[a-z2-7]{20}$/),
    action: z.enum(['minted', 'inherited', 'resolved']),
    callId: CallId,
    label: LabelRecord,
    /** false: its integrity does not count when a call uses it (operator data: "Handles"). */
    integrityCounts: z.boolean(),
    /** inherited: the run it was minted in. */
    fromRunId: z.string().optional(),
  }),
} as const;
