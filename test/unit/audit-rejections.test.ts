import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rejectionProblem } from '../../src/evidence/audit/rejections.js';
import type { CallRecord } from '../../src/evidence/audit/decision-inputs.js';
import { heldValueFile } from '../../src/evidence/schema/held-value.js';
import type { MediationTool } from '../../src/evidence/schema/snapshot.js';

const writeFileTool: MediationTool = {
  name: 'write_file',
  executor: 'sandbox',
  riskClass: 'workspace_write',
  sideEffectClass: 'reversible',
  resourceScope: 'workspace',
  permissionPolicy: 'allow',
  cfc: null,
} as unknown as MediationTool;

const call = (input: unknown): CallRecord => ({
  callId: 'call-0002',
  requested: undefined,
  input: { value: input },
  rejected: 'invalid_arguments',
  resolved: [],
  flows: [],
  decisions: [],
  executed: false,
});

const HANDLE = 'cfh-val:abcdefghijklmnopqrst';
let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function runWith(value: string): Promise<string> {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-rej-'));
  const file = path.join(dir, heldValueFile(HANDLE));
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(
    file,
    JSON.stringify({
      schema: 'cfh.held-value/1',
      handle: HANDLE,
      runId: 'r',
      callId: 'call-0001',
      label: { confidentiality: [], integrity: [] },
      integrityCounts: true,
      value,
      nonce: '0'.repeat(32),
    }),
  );
  return dir;
}

describe('rejectionProblem', () => {
  it('fails a rejection whose arguments the schema accepts', () => {
    expect(rejectionProblem('/nowhere', call({ path: 'a', content: 'x' }), writeFileTool)).toMatch(
      /schema accepts/,
    );
  });

  it('keeps a rejection whose arguments the schema refuses', () => {
    expect(rejectionProblem('/nowhere', call({ path: 'a' }), writeFileTool)).toBeUndefined();
  });

  it('keeps a rejection of a handle the run did not hold', () => {
    expect(
      rejectionProblem('/nowhere', call({ path: 'a', content: HANDLE }), writeFileTool),
    ).toBeUndefined();
  });

  it('decides a call using a held handle on the model form: a value too big once resolved is no rejection', async () => {
    // The mediator answers such a call opaquely (unfit, engine/cfc/cfc-calls.ts), never as the
    // model's mistake: a rejection recorded for it is a rewrite.
    const run = await runWith('x'.repeat(1_000_001));
    expect(rejectionProblem(run, call({ path: 'a', content: HANDLE }), writeFileTool)).toMatch(
      /schema accepts/,
    );
  });

  it('decides a call using a held handle on the model form: a value that fits fails the rejection', async () => {
    const run = await runWith('secret');
    expect(rejectionProblem(run, call({ path: 'a', content: HANDLE }), writeFileTool)).toMatch(
      /schema accepts/,
    );
  });

  it("keeps the rejection of a call using a held handle whose model form breaks the schema in the model's own words", async () => {
    const run = await runWith('secret');
    expect(
      rejectionProblem(run, call({ path: 'a', content: HANDLE, extra: 1 }), writeFileTool),
    ).toBeUndefined();
  });

  it('a tool it has no schema of (a host tool) is left to the record', () => {
    const host = { ...writeFileTool, name: 'host__deploy', executor: 'host' } as MediationTool;
    expect(rejectionProblem('/nowhere', call({}), host)).toBeUndefined();
  });
});
