// The model's own form of a call, checked before anything it names is resolved (AH-CFC-18,
// AH-REF-2, AH-REF-4). What the model is told about a call is built from what it sent: the
// schema's findings at its own words are its to hear, while a finding at a string that
// stands for a value it was not shown (a value handle, an opaque reference) depends on that
// value (a maxLength, a pattern) and is deferred to the check of the resolved call, whose
// failure gets one answer that does not depend on the value. Shared by value handles
// (engine/cfc/cfc-calls.ts) and host-tool references (tools/host/host-tool.ts).
import type { z } from 'zod';

export interface FormIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

export type ModelForm =
  | { readonly kind: 'invalid'; readonly issues: string; readonly found: readonly FormIssue[] }
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

/** Whether the issue at `path` is about a string `stands` says stands for a value. */
export function atStandIn(
  input: unknown,
  path: readonly PropertyKey[],
  stands: (text: string) => boolean,
): boolean {
  const v = valueAt(input, path);
  return typeof v === 'string' && stands(v);
}

/** A zod issue as the one line a model is told. */
export function issueLine(issue: FormIssue): string {
  return `${issue.path.map(String).join('.') || '(input)'}: ${issue.message}`;
}

/**
 * The model's form of a call checked against `schema`: invalid with the issues that do not
 * depend on a value (the model's words only), else valid (the parsed form, or the form as
 * sent where the only issues are at strings that stand for a value: deferred).
 */
export function checkModelForm(
  schema: z.ZodType,
  input: unknown,
  stands: (text: string) => boolean,
): ModelForm {
  const parsed = schema.safeParse(input);
  if (parsed.success) return { kind: 'valid', args: parsed.data };
  const own = parsed.error.issues.filter((i) => !atStandIn(input, i.path, stands));
  if (own.length === 0) return { kind: 'valid', args: input };
  return { kind: 'invalid', issues: own.map(issueLine).join('; '), found: own };
}
