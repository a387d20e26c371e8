// A call recorded as rejected for invalid arguments is checked again (AH-TOOL-4, AH-CFC-1)
// as the mediator checked it: the arguments the model sent (the transcript's tool_use)
// against the built-in tool's own schema (tools/builtin-inputs.ts). A call using handles the
// run held (cfc/handles.ts resolveHandles, the values under cfc-handles/) is rejected only
// on the model's own form (tools/model-form.ts: an issue at a string carrying a handle is
// deferred, never a rejection); a handle the run did not hold makes it invalid. A rejection the check does not give is a rewrite: a refused flow or a
// denied call hidden as the model's mistake.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { mentionsHandle, resolveHandles } from '../../cfc/handles.js';
import { label } from '../../cfc/label.js';
import { BUILTIN_INPUTS } from '../../tools/builtin-inputs.js';
import { checkModelForm } from '../../tools/model-form.js';
import { HANDLE_NAME, HeldValueRecord, heldValueFile } from '../schema/held-value.js';
import type { MediationTool } from '../schema/snapshot.js';
import type { CallRecord } from './decision-inputs.js';

const BUILTINS: ReadonlyMap<string, (typeof BUILTIN_INPUTS)[keyof typeof BUILTIN_INPUTS]> = new Map(
  Object.entries(BUILTIN_INPUTS),
);

/** The value the run held under `handle`, read from its evidence; undefined when it held none. */
function heldValue(runDir: string, handle: string): { value: string } | undefined {
  if (!HANDLE_NAME.test(handle)) return undefined;
  try {
    const body = readFileSync(path.join(runDir, heldValueFile(handle)), 'utf8');
    const parsed = HeldValueRecord.safeParse(JSON.parse(body));
    return parsed.success ? { value: parsed.data.value } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why the rejection of `call` as invalid is not what its recorded arguments give; undefined
 * when it is (the schema refuses them, a handle the run did not hold, a tool the audit has
 * no schema of, or arguments the evidence does not hold).
 */
export function rejectionProblem(
  runDir: string,
  call: CallRecord,
  tool: MediationTool,
): string | undefined {
  const schema = tool.executor === 'sandbox' ? BUILTINS.get(tool.name) : undefined;
  if (schema === undefined || call.input === undefined) return undefined;
  const resolution = resolveHandles(call.input.value, (handle) => {
    const held = heldValue(runDir, handle);
    // Only the value counts for the schema: the label is not read here.
    return held === undefined
      ? undefined
      : { value: held.value, label: label({}), integrityCounts: true };
  });
  // A handle the run did not hold makes the call invalid (AH-REF-2): the rejection stands.
  if (resolution.kind === 'unknown') return undefined;
  if (resolution.used.length === 0) {
    if (!schema.safeParse(call.input.value).success) return undefined;
  } else {
    // Decided on the model's form: what a handle's value breaks once resolved is not a
    // rejection (the call is answered opaquely), so only the model's own words can be.
    // Two keys resolving alike are unfit too (engine/cfc/cfc-calls.ts), never rejected.
    if (checkModelForm(schema, call.input.value, mentionsHandle).kind === 'invalid')
      return undefined;
  }
  return `rejected as invalid arguments, yet ${tool.name}'s schema accepts the arguments the model sent`;
}
