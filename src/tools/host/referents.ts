// Structured referents (AH-REF-1): the fields of a host tool's structured result the operator
// named (`operatorOnly: [{kind, field}]`, `resources.idField`), found by pointer in the value
// itself, never guessed from its text. Each one found is replaced, in what the model is
// shown, by an opaque reference to it when it is an identifier (a non-empty string up to
// MAX_REFERENT_CHARS, or a finite number) and by a marker otherwise (an object, a list, a
// boolean, an overlong string: the operator said the field is theirs, so nothing of it shows).
import { fieldSteps, type FieldStep } from '../../config/field-pointer.js';
import { concealedMarker, type OpaqueReferences, type Referent } from './opaque-refs.js';

/** Longer than this is not an identifier: concealed, never a reference. */
export const MAX_REFERENT_CHARS = 1000;

export interface FieldRule {
  readonly kind: string;
  readonly pointer: string;
  readonly steps: readonly FieldStep[];
}

export function fieldRule(kind: string, pointer: string): FieldRule {
  return { kind, pointer, steps: fieldSteps(pointer) };
}

type Path = readonly (string | number)[];

/** Every place `steps` reaches in `root`, with the value there. */
export function locate(
  root: unknown,
  steps: readonly FieldStep[],
): { path: Path; value: unknown }[] {
  let here: { path: Path; value: unknown }[] = [{ path: [], value: root }];
  for (const step of steps) {
    const next: { path: Path; value: unknown }[] = [];
    for (const { path, value } of here) {
      if ('each' in step) {
        if (Array.isArray(value))
          value.forEach((v: unknown, i) => next.push({ path: [...path, i], value: v }));
      } else if (Array.isArray(value)) {
        // RFC 6901: a decimal index without leading zeros.
        if (/^(0|[1-9][0-9]*)$/.test(step.key) && Number(step.key) < value.length)
          next.push({
            path: [...path, Number(step.key)],
            value: value[Number(step.key)] as unknown,
          });
      } else if (typeof value === 'object' && value !== null && Object.hasOwn(value, step.key)) {
        next.push({
          path: [...path, step.key],
          value: (value as Record<string, unknown>)[step.key],
        });
      }
    }
    here = next;
  }
  return here;
}

/** The value as a referent, or undefined when it is no identifier. */
export function asReferent(value: unknown): Referent | undefined {
  if (typeof value === 'string' && value !== '' && value.length <= MAX_REFERENT_CHARS) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  return undefined;
}

/** Puts `replacement` at `path` inside `root` (a copy cfh owns), if the path still leads there. */
function setAt(root: unknown, path: Path, replacement: unknown): void {
  let here = root;
  for (const [i, step] of path.entries()) {
    // The way there was replaced already (a field inside one concealed whole): nothing to do.
    if (typeof here !== 'object' || here === null) return;
    const container = here as Record<string | number, unknown>;
    if (i === path.length - 1) container[step] = replacement;
    else here = container[step];
  }
}

export interface Minted {
  /** The value the model is shown: every named field a reference or a marker. */
  readonly shown: unknown;
  /** The referents of `ids` (resources' idField), each with its reference (or marker), in order. */
  readonly ids: readonly { readonly id: Referent; readonly ref: string }[];
}

/**
 * `structured` as the model may see it: each field `rules` and `ids` name replaced by a
 * reference of `authority` (or a marker). Every field is found in the original value, so one
 * rule never reads what another wrote.
 */
export function mintFields(
  refs: OpaqueReferences,
  authority: string,
  structured: unknown,
  rules: readonly FieldRule[],
  ids: FieldRule | undefined,
): Minted {
  if (structured === null || typeof structured !== 'object') return { shown: structured, ids: [] };
  // JSON data (parsed, or the SDK's parse of it): a deep copy to replace fields in.
  const shown: unknown = structuredClone(structured);
  const found: { id: Referent; ref: string }[] = [];
  const all = ids === undefined ? rules : [...rules, ids];
  for (const rule of all) {
    for (const { path, value } of locate(structured, rule.steps)) {
      // An empty string holds nothing to conceal; anything else named is the operator's.
      if (value === '') continue;
      const referent = asReferent(value);
      // No identifier, or the run holds all the references it may: concealed, not referenced.
      const ref =
        referent === undefined ? undefined : refs.referenceFor(authority, rule.kind, referent);
      setAt(shown, path, ref ?? concealedMarker(rule.kind));
      if (rule === ids && referent !== undefined && !found.some((f) => f.id === referent))
        found.push({ id: referent, ref: ref ?? concealedMarker(rule.kind) });
    }
  }
  return { shown, ids: found };
}
