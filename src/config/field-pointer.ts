// Where a host tool's structured result holds an identifier the operator names (AH-REF-1):
// a JSON Pointer (RFC 6901: `/account/id`, `~1` for `/` and `~0` for `~` inside a key, a
// decimal index into an array) with one addition, a segment `*` standing for every element
// of an array (`/entities/*/name`). A pointer names a field positively; nothing is inferred
// from free text. Parsed when the profile loads, so one that does not parse refuses it.
import { z } from 'zod';

/** One step down a structured value: a key (or array index), or every element of an array. */
export type FieldStep = { readonly key: string } | { readonly each: true };

const MAX_STEPS = 32;

/** The steps of `pointer`, or why it is not a field pointer (never quoting it). */
export function parseFieldPointer(pointer: string): readonly FieldStep[] | string {
  if (!pointer.startsWith('/'))
    return "a JSON Pointer starts with '/' (e.g. /id, /account/id, /items/*/id)";
  const raw = pointer.slice(1).split('/');
  if (raw.length > MAX_STEPS) return `a field pointer has at most ${MAX_STEPS} segments`;
  const steps: FieldStep[] = [];
  for (const [i, segment] of raw.entries()) {
    if (/~(?![01])/.test(segment))
      return `segment ${i + 1}: '~' is written ~0 and '/' is written ~1 inside a key (RFC 6901)`;
    steps.push(
      segment === '*' ? { each: true } : { key: segment.replace(/~1/g, '/').replace(/~0/g, '~') },
    );
  }
  return steps;
}

/** The steps of a pointer the profile already validated (FieldPointer). */
export function fieldSteps(pointer: string): readonly FieldStep[] {
  const steps = parseFieldPointer(pointer);
  if (typeof steps === 'string') throw new Error(`field pointer: ${steps}`);
  return steps;
}

/** A field pointer in a profile: refused when it does not parse (exit 125 for a run). */
export const FieldPointer = z
  .string()
  .max(500)
  .superRefine((pointer, ctx) => {
    const steps = parseFieldPointer(pointer);
    if (typeof steps === 'string') ctx.addIssue({ code: 'custom', message: steps });
  });
