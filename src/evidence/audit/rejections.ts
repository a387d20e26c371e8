// A call recorded as rejected for invalid arguments is checked again (AH-TOOL-4, AH-CFC-1):
// the arguments the model sent (the transcript's tool_use), with the handles the run held
// resolved into them as the mediator resolves them (cfc/handles.ts resolveHandles, its held
// values under cfc-handles/), against the built-in tool's own schema (tools/builtin-inputs.ts,
// the one the mediator checks). A rejection whose arguments the schema accepts is a rewrite:
// a refused flow or a denied call hidden as the model's mistake.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { resolveHandles } from '../../cfc/handles.js';
import { label } from '../../cfc/label.js';
import { BUILTIN_INPUTS } from '../../tools/builtin-inputs.js';
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
  // Two keys that resolve alike may not run either (cfc/handles.ts): the rejection stands.
  if (resolution.collisions.length > 0) return undefined;
  if (!schema.safeParse(resolution.value).success) return undefined;
  return `rejected as invalid arguments, yet ${tool.name}'s schema accepts the arguments the model sent`;
}
