// One value a run holds back from the model behind a handle (AH-CFC-18/19, AH-REF-3): the
// referent (run and call), the label it carries into a call, whether its integrity counts,
// and the value itself. One file each under cfc-handles/, written once before the handle is
// handed out and recorded in the chain like every evidence file; `nonce` makes the recorded
// digest say nothing of the value (a short value could otherwise be found by trying
// candidates against it). Under the transcript's boundary: the values are the tool results
// the model was not shown, which outputs/ may hold too.
import { z } from 'zod';
import { CallId } from './common.js';
import { LabelRecord } from './events-cfc.js';

export const HELD_VALUES_DIR = 'cfc-handles';
export const HANDLE_NAME = /^cfh-val:[a-z2-7]{20}$/;

export const HeldValueRecord = z.strictObject({
  schema: z.literal('cfh.held-value/1'),
  handle: z.string().regex(HANDLE_NAME),
  runId: z.string().min(1).max(64),
  callId: CallId,
  label: LabelRecord,
  integrityCounts: z.boolean(),
  value: z.string(),
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
});
export type HeldValueRecord = z.infer<typeof HeldValueRecord>;

/** The file of a handle, relative to its run directory. */
export function heldValueFile(handle: string): string {
  return `${HELD_VALUES_DIR}/${handle.slice('cfh-val:'.length)}.json`;
}
