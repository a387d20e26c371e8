// The integration suite needs the built CLI, a Docker engine and the sandbox image; the
// Makefile's `test` target provides all three. Fail early and say which is missing.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { CFH_MAIN } from './helpers.js';

export default async function setup(): Promise<() => void> {
  if (!existsSync(CFH_MAIN))
    throw new Error(`${CFH_MAIN} missing: run 'make build' (or 'make test')`);
  const doctor = await execa(process.execPath, [CFH_MAIN, 'doctor', '--json'], { reject: false });
  if (doctor.exitCode !== 0) {
    throw new Error(
      `cfh doctor reports an unhealthy engine or a missing image; run 'make image':\n${doctor.stdout}${doctor.stderr}`,
    );
  }
  // The suite's cfh state (helpers.ts baseEnv: one directory per test file), never the
  // machine's: removed when the suite ends.
  const stateRoot = mkdtempSync(path.join(os.tmpdir(), 'cfh-test-state-'));
  process.env.CFH_TEST_STATE_ROOT = stateRoot;
  return () => {
    rmSync(stateRoot, { recursive: true, force: true });
  };
}
