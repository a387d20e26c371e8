// Opaque references of host tools as pure logic (AH-REF-1..4, AH-TOOL-10): minted only for
// a field of a structured result the profile names, never for a match in free text (that is
// concealed by a marker that stands for nothing); named by a run-salted HMAC, so a name
// guessed by its spelling or carried from another run is unheld; resolved for their own
// authority only; recorded without anything computed from the value. The same classes
// against real runs: integration/host-tools-refs.test.ts.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { HostTools } from '../../src/config/host-tools-schema.js';
import { parseFieldPointer } from '../../src/config/field-pointer.js';
import { hostEvents } from '../../src/evidence/schema/events-host.js';
import {
  Sanitizer,
  execObservation,
  mcpObservation,
  type Concealment,
} from '../../src/tools/host/host-results.js';
import { UNFIT_ONCE_RESOLVED, withReferences } from '../../src/tools/host/host-tool.js';
import {
  MAX_REFERENCES,
  OpaqueReferences,
  concealPattern,
  type IssuedReference,
} from '../../src/tools/host/opaque-refs.js';
import { fieldRule, mintFields } from '../../src/tools/host/referents.js';
import { Scrubber } from '../../src/tools/host/scrub.js';

const REF = /cfh-ref:billing:[a-z2-7]{16}/g;
const account = concealPattern('account', 'acct_[0-9]{4,}');

function sanitizer(refs: OpaqueReferences, conceal: Partial<Concealment> = {}): Sanitizer {
  return new Sanitizer(new Scrubber([]), refs, 'billing', {
    fields: conceal.fields ?? [],
    patterns: conceal.patterns ?? [],
  });
}

const refsIn = (text: string): string[] => text.match(REF) ?? [];

/** A reference the table must mint (it holds fewer than MAX_REFERENCES). */
function mint(
  refs: OpaqueReferences,
  authority: string,
  kind: string,
  value: string | number,
): string {
  const ref = refs.referenceFor(authority, kind, value);
  if (ref === undefined) throw new Error('the table is full');
  return ref;
}

const RESOURCES = {
  kind: 'invoice',
  idField: '/invoices/*/id',
  enumerate: 'e',
  cancel: 'c',
  cleanup: 'c',
  retention: 'r',
};

describe('class: a reference is minted from free text (AH-REF-1)', () => {
  it('a pattern conceals with a marker: no reference in the text, nothing resolves to the value', () => {
    const refs = new OpaqueReferences();
    const text = refs.conceal([account], 'acct_1234 paid acct_5678; acct_1234 again');
    expect(text).toBe(
      '[operator-only:account] paid [operator-only:account]; [operator-only:account] again',
    );
    // What today's references were spelled like, and the marker itself: neither is authority.
    expect(() => refs.resolve('billing', { to: 'cfh-ref:billing:1' })).toThrow(
      /cfh-ref:billing:1 is not a reference this run holds/,
    );
    expect(refs.resolve('billing', { to: '[operator-only:account]' })).toEqual({
      to: '[operator-only:account]',
    });
  });

  it('a capture group is concealed where it matched, its context kept', () => {
    const refs = new OpaqueReferences();
    const user = concealPattern('user', 'accounts/\\d+/users/(\\d+)');
    expect(refs.conceal([user], 'see accounts/4512/users/45 now')).toBe(
      'see accounts/4512/users/[operator-only:user] now',
    );
  });

  it('a named field of a structured result becomes a reference that resolves for its authority, typed as it was', () => {
    const refs = new OpaqueReferences();
    const s = sanitizer(refs, {
      fields: [fieldRule('account', '/account/id'), fieldRule('seat', '/seat')],
    });
    const { text } = s.structured(
      { account: { id: 'acct_1234', name: 'Ada' }, seat: 42 },
      undefined,
    );
    const shown = JSON.parse(text) as { account: { id: string; name: string }; seat: string };
    expect(shown.account.id).toMatch(/^cfh-ref:billing:[a-z2-7]{16}$/);
    expect(shown.seat).toMatch(/^cfh-ref:billing:[a-z2-7]{16}$/);
    expect(shown.account.name).toBe('Ada');
    expect(text).not.toContain('acct_1234');
    expect(refs.resolve('billing', { to: shown.account.id, n: shown.seat })).toEqual({
      to: 'acct_1234',
      n: 42,
    });
    // Inside a longer string a number is spliced as its digits.
    expect(refs.resolve('billing', { note: `seat ${shown.seat}` })).toEqual({ note: 'seat 42' });
  });

  it('every element of a list (`*`): each id its own reference, the resources ids in order', () => {
    const refs = new OpaqueReferences();
    const s = sanitizer(refs);
    const value = { invoices: [{ id: 'inv-1' }, { id: 'inv-2' }, { id: 'inv-1' }, { other: 1 }] };
    const { text, created } = s.structured(value, RESOURCES);
    expect(created.ids).toEqual(['inv-1', 'inv-2']);
    expect(created.references).toHaveLength(2);
    expect(new Set(created.references).size).toBe(2);
    expect(refsIn(text)).toEqual([
      created.references[0],
      created.references[1],
      created.references[0],
    ]);
  });

  it('a named field that is no identifier is concealed whole, never a reference', () => {
    const refs = new OpaqueReferences();
    const s = sanitizer(refs, {
      fields: [
        fieldRule('acct', '/account'),
        fieldRule('acct', '/account/id'),
        fieldRule('f', '/flag'),
      ],
    });
    const { text } = s.structured(
      { account: { id: 'acct_1', tags: ['a'] }, flag: true, long: 'x' },
      undefined,
    );
    expect(JSON.parse(text)).toEqual({
      account: '[operator-only:acct]',
      flag: '[operator-only:f]',
      long: 'x',
    });
    expect(text).not.toContain('acct_1');
  });

  it('a pointer that reaches nothing mints nothing', () => {
    const refs = new OpaqueReferences();
    const issued: IssuedReference[] = [];
    refs.onIssued = (i) => issued.push(i);
    const s = sanitizer(refs, {
      fields: [fieldRule('a', '/missing/id'), fieldRule('a', '/list/7')],
    });
    const { text } = s.structured({ list: [1, 2], x: 'acct_9' }, undefined);
    expect(JSON.parse(text)).toEqual({ list: [1, 2], x: 'acct_9' });
    expect(issued).toEqual([]);
  });

  it('an MCP result: a text block repeating the structured value shows the reference too', () => {
    const refs = new OpaqueReferences();
    const s = sanitizer(refs, { fields: [fieldRule('account', '/account/id')] });
    const value = { account: { id: 'acct_777001' } };
    const { observation } = mcpObservation(
      {
        content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
        structuredContent: value,
      },
      s,
      undefined,
    );
    const all = observation.items.join('\n');
    expect(all).not.toContain('acct_777001');
    expect(new Set(refsIn(all)).size).toBe(1);
    expect(refsIn(all)).toHaveLength(2);
  });

  it('an exec tool that declares JSON: its fields minted; output that does not parse is not shown', () => {
    const refs = new OpaqueReferences();
    const s = sanitizer(refs, { fields: [fieldRule('ticket', '/ticket/id')] });
    const run = (stdout: string) =>
      execObservation(
        {
          exitCode: 0,
          signal: undefined,
          stdout: Buffer.from(stdout),
          stdoutCut: false,
          timedOut: false,
          timeoutMs: 1000,
        },
        s,
        'json',
        undefined,
      ).observation;
    const ok = run('{"ticket": {"id": "T-40417"}}\n');
    expect(ok.status).toBe('success');
    expect(ok.items.join('')).not.toContain('T-40417');
    const broken = run('ticket T-40417 created\n');
    expect(broken.status).toBe('error');
    expect(broken.items).toEqual([]);
    expect(broken.summary).toMatch(/not the JSON its profile declares/);
  });
});

describe('class: a held value leaks around its reference (AH-REF-4)', () => {
  it('a held value inside a longer one: the longer is replaced whole, whatever the order minted', () => {
    const refs = new OpaqueReferences();
    const short = mint(refs, 'billing', 'account', 'acct_1234');
    const long = mint(refs, 'billing', 'account', 'acct_12345678');
    expect(refs.handlesFor('acct_12345678 and acct_1234')).toBe(`${long} and ${short}`);
    expect(refs.handlesFor(Buffer.from('acct_12345678').toString('base64'))).toBe(long);
  });

  it(`past ${MAX_REFERENCES} references a named field is concealed, never shown; the held still resolve`, () => {
    const refs = new OpaqueReferences();
    const first = mint(refs, 'billing', 'account', 'acct_0');
    for (let i = 1; i < MAX_REFERENCES; i += 1) mint(refs, 'billing', 'account', `acct_${i}`);
    expect(refs.referenceFor('billing', 'account', 'acct_new')).toBeUndefined();
    // A value already held keeps its reference.
    expect(refs.referenceFor('billing', 'account', 'acct_0')).toBe(first);
    const { shown, ids } = mintFields(
      refs,
      'billing',
      { invoices: [{ id: 'acct_new' }, { id: 'acct_0' }] },
      [],
      fieldRule('invoice', '/invoices/*/id'),
    );
    expect(shown).toEqual({ invoices: [{ id: '[operator-only:invoice]' }, { id: first }] });
    expect(ids).toEqual([
      { id: 'acct_new', ref: '[operator-only:invoice]' },
      { id: 'acct_0', ref: first },
    ]);
    expect(refs.resolve('billing', { to: first })).toEqual({ to: 'acct_0' });
  });
});

describe('class: a reference is guessed by its spelling (AH-REF-2/3)', () => {
  it('names are an HMAC under the run salt: stable for a value, distinct for values, no counter', () => {
    const refs = new OpaqueReferences();
    const a = mint(refs, 'billing', 'account', 'acct_1');
    const b = mint(refs, 'billing', 'account', 'acct_2');
    expect(a).toMatch(/^cfh-ref:billing:[a-z2-7]{16}$/);
    expect(mint(refs, 'billing', 'account', 'acct_1')).toBe(a);
    expect(b).not.toBe(a);
    // The string and the number are two referents.
    expect(mint(refs, 'billing', 'account', 1)).not.toBe(mint(refs, 'billing', 'account', '1'));
    for (const n of ['1', '2', '3'])
      expect(() => refs.resolve('billing', `cfh-ref:billing:${n}`)).toThrow(/not a reference/);
  });

  it("another run's table names the same value otherwise, and its names are unheld here", () => {
    const one = new OpaqueReferences();
    const other = new OpaqueReferences();
    const mine = mint(one, 'billing', 'account', 'acct_1');
    const theirs = mint(other, 'billing', 'account', 'acct_1');
    expect(theirs).not.toBe(mine);
    expect(() => one.resolve('billing', { to: theirs })).toThrow(
      new RegExp(`${theirs} is not a reference this run holds`),
    );
  });

  it('anything spelled like a reference and not held is refused, in any case, in keys too', () => {
    const refs = new OpaqueReferences();
    const held = mint(refs, 'billing', 'account', 'acct_1');
    for (const guess of [
      'cfh-ref:billing:aaaaaaaaaaaaaaaa',
      'cfh-ref:billing:',
      'cfh-ref:',
      held.toUpperCase(),
      `see ${held.slice(0, -1)}`,
    ])
      expect(() => refs.resolve('billing', { to: guess }), guess).toThrow(/not a reference/);
    expect(() => refs.resolve('billing', { [`cfh-ref:billing:${'b'.repeat(16)}`]: 1 })).toThrow(
      /not a reference/,
    );
    expect(refs.resolve('billing', { [held]: 1 })).toEqual({ acct_1: 1 });
  });

  it('a reference resolves for its own authority only', () => {
    const refs = new OpaqueReferences();
    const ref = mint(refs, 'billing', 'account', 'acct_1');
    expect(() => refs.resolve('notify', { message: ref })).toThrow(
      new RegExp(`${ref} belongs to host tool 'billing', not to 'notify'`),
    );
  });

  it('neither a pattern nor an echoed value rewrites a held reference', () => {
    const refs = new OpaqueReferences();
    // A held value that is a piece of a reference's own name.
    const ref = mint(refs, 'billing', 'k', 'billing');
    const letters = concealPattern('w', '[a-z]{5,}');
    const text = `${ref} and billing`;
    expect(refs.handlesFor(text)).toBe(`${ref} and ${ref}`);
    expect(refs.conceal([letters], `${ref} and words`)).toBe(`${ref} and [operator-only:w]`);
  });
});

describe('class: a reference record keeps a digest or the length of its value (AH-REF-3/4)', () => {
  it('the event holds the name, authority and kind, and its schema refuses anything more', () => {
    const refs = new OpaqueReferences();
    const issued: IssuedReference[] = [];
    refs.onIssued = (i) => issued.push(i);
    const ref = mint(refs, 'billing', 'account', 'acct_1234');
    expect(issued).toEqual([{ ref, authority: 'billing', kind: 'account' }]);
    const schema = hostEvents.opaque_reference_issued;
    expect(schema.safeParse(issued[0]).success).toBe(true);
    const digest = `sha256:${createHash('sha256').update('acct_1234').digest('hex')}`;
    for (const extra of [{ digest }, { length: 9 }, { value: 'acct_1234' }])
      expect(schema.safeParse({ ...issued[0], ...extra }).success).toBe(false);
    // Today's sequential names are not what cfh writes any more.
    expect(
      schema.safeParse({ ref: 'cfh-ref:billing:1', authority: 'billing', kind: 'account' }).success,
    ).toBe(false);
  });

  it("a schema's finding on a resolved reference is one fixed answer, never the message quoting the value", () => {
    const refs = new OpaqueReferences();
    const ref = mint(refs, 'billing', 'account', 'acct_1234');
    const quoting = z.strictObject({
      to: z.string().regex(/^x/, { error: (issue) => `no account ${String(issue.input)}` }),
    });
    const checked = withReferences('billing', refs, quoting).safeParse({ to: ref });
    expect(checked.success).toBe(false);
    const messages = checked.error?.issues.map((i) => i.message).join(' ') ?? '';
    expect(messages).toBe(UNFIT_ONCE_RESOLVED);
    expect(messages).not.toContain('acct_1234');
  });
});

describe('profile: fields by JSON Pointer, free text by pattern', () => {
  const exec = (over: Record<string, unknown>) => ({
    name: 'tickets',
    kind: 'exec',
    argv: ['/bin/true'],
    riskClass: 'read_only',
    sideEffectClass: 'none',
    ...over,
  });
  const issues = (raw: unknown[]): string =>
    HostTools.safeParse(raw)
      .error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
      .join('; ') ?? '';

  it('parses RFC 6901 pointers with `*` for every element; refuses what does not parse', () => {
    expect(parseFieldPointer('/items/*/a~1b/c~0d/0')).toEqual([
      { key: 'items' },
      { each: true },
      { key: 'a/b' },
      { key: 'c~d' },
      { key: '0' },
    ]);
    for (const bad of ['', 'account/id', '/a~2b', '/a~'])
      expect(typeof parseFieldPointer(bad), bad).toBe('string');
    expect(issues([exec({ output: 'json', operatorOnly: [{ kind: 'k', field: 'id' }] })])).toMatch(
      /operatorOnly\.0\.field: a JSON Pointer starts with '\/'/,
    );
  });

  it("resources' idPattern is refused naming idField; an entry gives field or pattern", () => {
    const legacy = exec({
      output: 'json',
      resources: { ...RESOURCES, idField: undefined, idPattern: '"id":"([^"]+)"' },
    });
    expect(issues([legacy])).toMatch(/resources\.idPattern: idPattern is retired.*idField/);
    expect(issues([exec({ operatorOnly: [{ kind: 'k', field: '/a', pattern: 'x' }] })])).toMatch(
      /either field .* or pattern/,
    );
    expect(issues([exec({ operatorOnly: [{ kind: 'k' }] })])).toMatch(/either field/);
  });

  it('an exec tool names fields only when it declares its output JSON', () => {
    expect(issues([exec({ operatorOnly: [{ kind: 'k', field: '/id' }] })])).toMatch(
      /^0\.output: .*declare output: json/,
    );
    expect(issues([exec({ resources: RESOURCES })])).toMatch(/^0\.output: /);
    expect(issues([exec({ output: 'json', resources: RESOURCES })])).toBe('');
    expect(issues([exec({ operatorOnly: [{ kind: 'k', pattern: 'T-[0-9]+' }] })])).toBe('');
  });
});
