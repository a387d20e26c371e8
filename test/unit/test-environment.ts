// The environment a unit test plans a run with (config/env.ts CfhEnvironment): every
// directory cfh would use lies under `dir`, the test's own, so nothing of the host's state
// (its artifact root, keys, state directory) is read or written.
import os from 'node:os';
import path from 'node:path';
import type { CfhEnvironment } from '../../src/config/env.js';

export function testEnvironment(dir: string, extra: Partial<CfhEnvironment> = {}): CfhEnvironment {
  return {
    artifactRoot: path.join(dir, 'runs'),
    keyDir: path.join(dir, 'keys'),
    dockerHost: undefined,
    logLevel: 'warn',
    egressResolver: undefined,
    draftMaxBytes: undefined,
    anthropicApiKey: undefined,
    anthropicBaseUrl: undefined,
    model: 'm',
    draftRoot: os.tmpdir(),
    hostProcessDir: path.join(dir, 'host-processes'),
    writtenLabelsDir: path.join(dir, 'written-labels'),
    credentialSource: {},
    ...extra,
  };
}
