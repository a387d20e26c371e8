// The closed registry of error codes: one spelling each, words an operator can look up.
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/error-codes.js';

describe('ERROR_CODES', () => {
  it('holds each code once, in snake case', () => {
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    for (const code of ERROR_CODES) expect(code).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
  });
});
