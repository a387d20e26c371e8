// A call that uses value handles is answered from the model's own form of it (AH-CFC-18,
// AH-REF-4): what the model sent, handles and not values. The checks that can run on that
// form (the schema's shape, every issue not at a string carrying a handle) run on it and
// say what they find; an issue at a string carrying a handle depends on the value (a
// maxLength, a pattern), so it is deferred to the resolved check, whose finding the model
// never hears: a call unfit once resolved does not run and gets the same opaque answer as
// one that ran (tool-calls.ts), its reason held behind that answer's handle. The check
// itself is the one host-tool references use too (tools/model-form.ts).
import { mentionsHandle } from '../cfc/handles.js';
import type { ToolDefinition } from '../tools/contract.js';
import { atStandIn, checkModelForm as checkForm, type ModelForm } from '../tools/model-form.js';

export type { ModelForm } from '../tools/model-form.js';

/** Whether an issue is about a string that carries a handle (its value decides it). */
export function atHandle(input: unknown, path: readonly PropertyKey[]): boolean {
  return atStandIn(input, path, mentionsHandle);
}

/** The model's form of a handle-using call checked against the tool's schema. */
export function checkModelForm(tool: ToolDefinition, input: unknown): ModelForm {
  return checkForm(tool.input, input, mentionsHandle);
}
