// The model's form of a call that used handles (tools/model-form.ts with handles as the
// stand-ins, as engine/cfc/cfc-calls.ts checks it): issues at strings carrying a handle are
// deferred to the resolved check (never shown), the others shown.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mentionsHandle } from '../../src/cfc/handles.js';
import type { ToolDefinition } from '../../src/tools/contract.js';
import { atStandIn, checkModelForm as checkForm } from '../../src/tools/model-form.js';

const checkModelForm = (t: ToolDefinition, input: unknown) =>
  checkForm(t.input, input, mentionsHandle);
const atHandle = (input: unknown, at: readonly PropertyKey[]) =>
  atStandIn(input, at, mentionsHandle);

const H = 'cfh-val:abcdefghijklmnopqrst';
const tool = {
  input: z.object({ path: z.string().max(10), n: z.number().optional() }).strict(),
} as unknown as ToolDefinition;

describe('checkModelForm', () => {
  it('defers a bound at a string carrying a handle: valid as sent, the value not consulted', () => {
    expect(checkModelForm(tool, { path: `AAAAAAAAAA${H}` })).toEqual({
      kind: 'valid',
      args: { path: `AAAAAAAAAA${H}` },
    });
  });

  it("shows the issues of the model's own words (unknown keys, types) as they were sent", () => {
    const r = checkModelForm(tool, { path: H, n: 'x', '4821': 0 });
    expect(r.kind).toBe('invalid');
    expect(r.kind === 'invalid' && r.issues).toMatch(/Unrecognized key.*"4821"/);
    expect(r.kind === 'invalid' && r.issues).toMatch(/^n: |; n: /);
    expect(r.kind === 'invalid' && r.issues).not.toMatch(/path/);
  });

  it('a string without a handle is checked as usual', () => {
    expect(checkModelForm(tool, { path: 'A'.repeat(11) }).kind).toBe('invalid');
    expect(atHandle({ a: [H] }, ['a', 0])).toBe(true);
    expect(atHandle({ a: [H] }, ['a'])).toBe(false);
  });
});
