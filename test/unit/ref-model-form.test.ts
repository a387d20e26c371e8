// What an operator-only identifier answers (AH-REF-2/4, AH-CFC-18): a call naming a
// reference is checked in the model's form first (tools/model-form.ts), its findings at a
// whole reference deferred to the resolved check, whose failure is one fixed answer; and a
// host result that echoes the model's own strings keeps them as written, so an echo of
// guesses does not mark the one that is the value (OpaqueReferences.handlesFor).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkModelForm } from '../../src/tools/model-form.js';
import { UNFIT_ONCE_RESOLVED, withReferences } from '../../src/tools/host/host-tool.js';
import { OpaqueReferences, splitAt } from '../../src/tools/host/opaque-refs.js';

function mint(refs: OpaqueReferences, value: string): string {
  const ref = refs.referenceFor('account', 'account', value);
  if (ref === undefined) throw new Error('not minted');
  return ref;
}

/** What the model is told of `input` (built from `ref`) under `schema`, for the value `id`. */
function answer(id: string, schema: z.ZodType, input: (ref: string) => unknown): string {
  const refs = new OpaqueReferences();
  const ref = mint(refs, id);
  const checked = withReferences('account', refs, schema).safeParse(input(ref));
  if (checked.success) return 'ran';
  return checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
}

describe('the model form of a call naming references', () => {
  const bounded = z.strictObject({ q: z.string().max(64) });

  it('a bound around a spliced reference answers the same whatever the length of its value', () => {
    const pad = (ref: string) => ({ q: `${'A'.repeat(54)}${ref}` });
    const a = answer('acct_83712', bounded, pad);
    const b = answer('acct_837120', bounded, pad);
    expect(a).toBe(b);
    // The model's form (the reference's own spelling) is what the bound is checked on.
    expect(a).toMatch(/^q: Too big/);
  });

  it('a whole reference is checked as the value it stands for: an id field with a pattern', () => {
    const id = z.strictObject({
      id: z
        .string()
        .regex(/^acct_[0-9]+$/)
        .max(12),
    });
    expect(answer('acct_83712', id, (ref) => ({ id: ref }))).toBe('ran');
    // Unfit once resolved: one fixed answer, nothing of the schema's finding on the value.
    expect(answer('acct_8371299999', id, (ref) => ({ id: ref }))).toBe(`: ${UNFIT_ONCE_RESOLVED}`);
  });

  it("the model's own words are checked and answered as written", () => {
    const two = z.strictObject({ id: z.string(), n: z.number().int() });
    expect(answer('acct_1', two, (ref) => ({ id: ref, n: 'x' }))).toMatch(/^n: /);
    expect(answer('acct_1', two, (ref) => ({ id: ref, n: 1, extra: true }))).toMatch(
      /Unrecognized key/,
    );
  });

  it('a spliced reference short enough in the model form runs with the value spliced in', () => {
    const refs = new OpaqueReferences();
    const ref = mint(refs, 'acct_1');
    const checked = withReferences('account', refs, bounded).safeParse({ q: `find ${ref}` });
    expect(checked.data).toEqual({ q: 'find acct_1' });
  });

  it('checkModelForm defers exactly the findings at strings the predicate says stand for a value', () => {
    const s = z.strictObject({ a: z.string().max(2), b: z.string().max(2) });
    const stands = (t: string) => t.startsWith('@');
    expect(checkModelForm(s, { a: '@long', b: 'ok' }, stands)).toEqual({
      kind: 'valid',
      args: { a: '@long', b: 'ok' },
    });
    const mixed = checkModelForm(s, { a: '@long', b: 'long' }, stands);
    expect(mixed.kind).toBe('invalid');
    expect(mixed.kind === 'invalid' ? mixed.found.map((i) => i.path.join('.')) : []).toEqual(['b']);
  });
});

describe("a host result echoing the model's own strings", () => {
  /** The view of `text` for the call whose model form is `input`, with `id` held. */
  function view(id: string, input: unknown, text: (id: string) => string): string {
    const refs = new OpaqueReferences();
    const ref = mint(refs, id);
    const args = { ...(input as object) };
    refs.noteModelForm(args, input);
    return refs.handlesFor(text(id), refs.modelStringsOf(args)).replaceAll(ref, '<ref>');
  }

  const guesses = { q: 'acct_83712 acct_11111 acct_99999' };
  const echo = (id: string) => JSON.stringify({ account: { id }, query: guesses.q });

  it('leaves the guesses as written and still replaces the value where the model never sent it', () => {
    const a = view('acct_83712', guesses, echo);
    const b = view('acct_11111', guesses, echo);
    expect(a).toBe(b);
    expect(a).toBe('{"account":{"id":"<ref>"},"query":"acct_83712 acct_11111 acct_99999"}');
  });

  it('without the echo noted, every occurrence is replaced (the mechanism this rests on)', () => {
    const refs = new OpaqueReferences();
    const ref = mint(refs, 'acct_83712');
    expect(refs.handlesFor(guesses.q)).toBe(`${ref} acct_11111 acct_99999`);
  });

  it('a model string inside the value does not split it: the value is replaced whole', () => {
    const out = view('acct_83712', { q: 'acct_8' }, (id) => `id ${id} for acct_8`);
    expect(out).not.toContain('acct_83712');
    expect(out).toBe('id <ref> for acct_8');
  });

  it('a value straddling the edge of an echo is replaced, the echo with it', () => {
    const out = view('acct_83712', { q: 'acct_83712 acct_8' }, (id) => `${id} ${id}`);
    expect(out).toBe('<ref> <ref>');
  });

  it('a string that names a reference is not the model words (its echo is the resolved value)', () => {
    const refs = new OpaqueReferences();
    const ref = mint(refs, 'acct_1');
    const args = { q: 'find acct_1' };
    refs.noteModelForm(args, { q: `find ${ref}` });
    expect(refs.modelStringsOf(args)).toEqual(['q']); // its key only
    expect(refs.handlesFor('find acct_1', refs.modelStringsOf(args))).toBe(`find ${ref}`);
  });

  it('splitAt cuts the text at each echo, the longest first', () => {
    expect(splitAt('xabcy ab', ['ab', 'abc'])).toEqual([
      { text: 'x', echo: false },
      { text: 'abc', echo: true },
      { text: 'y ', echo: false },
      { text: 'ab', echo: true },
    ]);
  });
});
