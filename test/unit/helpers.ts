// Shared helpers for the unit tests: catching a thrown CfhError and temp directories.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { ConfigError } from '../../src/errors.js';

/** Runs `fn` and returns what it threw; fails the test if it returned normally. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw, but it returned');
}

/**
 * Asserts `fn` throws a ConfigError with `code` whose message contains every fragment.
 * Returns the error for further checks.
 */
export function expectConfigError(
  fn: () => unknown,
  code: string,
  ...fragments: string[]
): ConfigError {
  const error = thrownBy(fn);
  expect(error).toBeInstanceOf(ConfigError);
  const configError = error as ConfigError;
  expect(configError.code).toBe(code);
  expect(configError.boundary).toBe('configuration');
  for (const fragment of fragments) expect(configError.message).toContain(fragment);
  return configError;
}

/** A fresh directory under os.tmpdir(); remove it with `removeTempDir`. */
export function makeTempDir(prefix = 'cfh-unit-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

export async function removeTempDir(dir: string | undefined): Promise<void> {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
}

/** Narrows away undefined, failing the test when the value is missing. */
export function must<T>(value: T | undefined | null, what = 'value'): T {
  if (value === undefined || value === null) throw new Error(`${what} is missing`);
  return value;
}
