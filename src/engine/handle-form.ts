// A call that uses value handles is answered from the model's own form of it (AH-CFC-18,
// AH-REF-4): what the model sent, handles and not values. The checks that can run on that
// form (the schema's shape, every issue not at a string carrying a handle) run on it and
// say what they find; an issue at a string carrying a handle depends on the value (a
// maxLength, a pattern), so it is deferred to the resolved check, whose finding the model
// never hears: a call unfit once resolved does not run and gets the same opaque answer as
// one that ran (tool-calls.ts), its reason held behind that answer's handle.
import { mentionsHandle } from '../cfc/handles.js';
import type { ToolDefinition } from '../tools/contract.js';

export type ModelForm =
  | { readonly kind: 'invalid'; readonly issues: string }
  | { readonly kind: 'valid'; readonly args: unknown };

/** The value at `path` inside `input` (keys and array indices), or undefined. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let here: unknown = input;
  for (const key of path) {
    if (typeof here !== 'object' || here === null || typeof key === 'symbol') return undefined;
    here = (here as Record<string, unknown>)[String(key)];
  }
  return here;
}

/** Whether an issue is about a string that carries a handle (its value decides it). */
export function atHandle(input: unknown, path: readonly PropertyKey[]): boolean {
  const v = valueAt(input, path);
  return typeof v === 'string' && mentionsHandle(v);
}

/**
 * The model's form of a call checked against the tool's schema: invalid with the issues
 * that do not depend on a value (the model's words only), else valid (the parsed form, or
 * the form as sent where the only issues are at strings carrying handles).
 */
export function checkModelForm(tool: ToolDefinition, input: unknown): ModelForm {
  const parsed = tool.input.safeParse(input);
  if (parsed.success) return { kind: 'valid', args: parsed.data };
  const own = parsed.error.issues.filter((i) => !atHandle(input, i.path));
  if (own.length === 0) return { kind: 'valid', args: input };
  return {
    kind: 'invalid',
    issues: own.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; '),
  };
}
