// Reading one part of a document with the part's own schema, so a check depends only on
// what it uses: a snapshot missing its workspace fails the snapshot check, and leaves the
// budget check able to read the budgets.
import { z } from 'zod';

export type Part<T> = { readonly ok: true; readonly value: T } | { readonly ok: false };

/** `doc[key]` parsed with `schema`; not ok when the document or the part is absent or wrong. */
export function partOf<S extends z.ZodType>(
  doc: unknown,
  key: string,
  schema: S,
): Part<z.output<S>> {
  if (typeof doc !== 'object' || doc === null || !Object.hasOwn(doc, key)) return { ok: false };
  const parsed = schema.safeParse((doc as Record<string, unknown>)[key]);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false };
}

export function hasKey(doc: unknown, key: string): boolean {
  return typeof doc === 'object' && doc !== null && Object.hasOwn(doc, key);
}

export function stringOf(doc: unknown, key: string): string | undefined {
  if (typeof doc !== 'object' || doc === null) return undefined;
  const v = (doc as Record<string, unknown>)[key];
  return typeof v === 'string' ? v : undefined;
}

const AnyRecord = z.record(z.string(), z.unknown());

/** A JSON object as a record, or undefined for anything else. */
export function recordOf(value: unknown): Record<string, unknown> | undefined {
  const parsed = AnyRecord.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}
