// CFC at run planning (engine/cfc/cfc-plan.ts): `--cfc` and `--label` from the flag table to the
// plan, refused in the one error style when wrong; enforce-strict refuses an unlabelled
// source naming every one and the fix (AH-CFC-14); `--mount` mounts are sources too;
// snapshot.cfc's fallback (AH-CFC-15); the capture record of `--prompt` (AH-CFC-3).
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bindFlags } from '../../src/cli/flags/flag.js';
import { BUDGET_RUN_FLAGS, RUN_FLAGS } from '../../src/cli/flags/run-flags.js';
import { runRequestOf } from '../../src/cli/flags/run-request.js';
import type { CfhEnvironment } from '../../src/config/env.js';
import {
  captureOfPrompt,
  cfcRuntimeOf,
  parseCfcMode,
  parseLabelFlags,
  snapshotCfc,
} from '../../src/engine/cfc/cfc-plan.js';
import { planSandboxRun, type SandboxRunOptions } from '../../src/engine/run/run-plan.js';
import { InputCaptureRecord } from '../../src/evidence/schema/events-cfc.js';
import { SnapshotCfc } from '../../src/evidence/schema/snapshot.js';
import { expectConfigError, makeTempDir, removeTempDir } from './helpers.js';
import { testEnvironment } from './test-environment.js';

let tmp = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-cfc-plan-'));
  await mkdir(path.join(tmp, 'ws'));
  await mkdir(path.join(tmp, 'data'));
  await mkdir(path.join(tmp, 'extra'));
});

afterEach(async () => {
  await removeTempDir(tmp);
});

function env(): CfhEnvironment {
  return testEnvironment(tmp);
}

function plan(options: Partial<SandboxRunOptions> = {}) {
  return planSandboxRun(
    { workspace: path.join(tmp, 'ws'), command: ['true'], ...options },
    env(),
    { uid: 1000, gid: 1000 },
    { pid: 4242, start: 'boot/1', host: 'test-host' },
  );
}

async function profile(cfc: string, mountLabel = ''): Promise<string> {
  const file = path.join(tmp, 'p.yaml');
  await writeFile(
    file,
    `extends: default\nname: p\ncfc: { mode: ${cfc} }\nmounts:\n  - { source: ${path.join(tmp, 'data')}, target: /data${mountLabel} }\n`,
  );
  return file;
}

function parseRun(argv: string[]) {
  const cmd = new Command('run').exitOverride().passThroughOptions();
  bindFlags(bindFlags(cmd, RUN_FLAGS), BUDGET_RUN_FLAGS);
  let command: string[] = [];
  cmd.argument('[command...]').action((c: string[]) => {
    command = c;
  });
  cmd.parse(argv, { from: 'user' });
  return runRequestOf(cmd.opts(), command);
}

describe('--cfc and --label flags', () => {
  it('land in command and agent requests alike, --label repeatable and in order', () => {
    const argv = ['--cfc', 'observe', '--label', '/a=x', '--label', '/b=i:y'];
    expect(parseRun([...argv, '--', 'true'])).toMatchObject({
      kind: 'command',
      cfc: 'observe',
      labels: ['/a=x', '/b=i:y'],
    });
    expect(parseRun([...argv, '--prompt', 'p'])).toMatchObject({
      kind: 'agent',
      cfc: 'observe',
      labels: ['/a=x', '/b=i:y'],
    });
    expect(parseRun(['--', 'true'])).toMatchObject({ labels: [] });
  });

  it('parses every mode and refuses another word with the modes as the hint', () => {
    for (const m of ['disabled', 'observe', 'enforce-explicit', 'enforce-strict'])
      expect(parseCfcMode(m)).toBe(m);
    const error = expectConfigError(() => parseCfcMode('on'), 'cfc_mode_invalid', "--cfc: 'on'");
    expect(error.hint).toBe('give one of disabled, observe, enforce-explicit, enforce-strict');
  });

  it('parses labels (bare and c: confidentiality, i: integrity) and refuses bad ones', () => {
    expect(parseLabelFlags(['/data=secret,c:pii,i:repo'])).toEqual([
      { target: '/data', label: { confidentiality: ['secret', 'pii'], integrity: ['repo'] } },
    ]);
    expectConfigError(() => parseLabelFlags(['/data']), 'cfc_label_invalid', 'TARGET=ATOM');
    // cfh's own atoms are never an operator's label (AH-CFC-1).
    expectConfigError(
      () => parseLabelFlags(['/data=i:prompt:direct']),
      'cfc_label_invalid',
      '--label: /data:',
    );
  });

  it('a --label for a target the run does not mount is refused at planning', async () => {
    const p = await profile('observe');
    expectConfigError(
      () => plan({ profile: p, labels: ['/nowhere=secret'] }),
      'cfc_label_invalid',
      '--label /nowhere: no mount has that target',
      '/workspace, /data',
    );
  });
});

describe('planning', () => {
  it('--label replaces a mount label; --cfc overrides the profile mode (modeSource flag)', async () => {
    const p = await profile('enforce-explicit');
    const planned = plan({ profile: p, cfc: 'observe', labels: ['/data=secret'] });
    expect(planned.cfc.mode).toBe('observe');
    expect(planned.cfc.modeSource).toBe('flag');
    expect(planned.cfc.mounts.find((m) => m.target === '/data')?.label).toEqual({
      confidentiality: ['secret'],
      integrity: [],
    });
  });

  it('a --mount mount is a source of the plan too: unlabelled unless --label names it', () => {
    const extra = `${path.join(tmp, 'extra')}:/extra`;
    const bare = plan({ mounts: [extra], cfc: 'observe' });
    expect(bare.cfc.unlabelled).toContain('mount /extra');
    const labelled = plan({ mounts: [extra], cfc: 'observe', labels: ['/extra=i:x'] });
    expect(labelled.cfc.unlabelled).not.toContain('mount /extra');
  });

  it('--workspace-mode keeps the workspace label the profile gives', async () => {
    const file = path.join(tmp, 'w.yaml');
    await writeFile(
      file,
      'extends: default\nname: w\nworkspace: { mode: ro, label: { integrity: [repo] } }\n',
    );
    const planned = plan({ profile: file, workspaceMode: 'rw' });
    expect(planned.cfc.mounts[0]).toMatchObject({
      target: '/workspace',
      writable: true,
      label: { confidentiality: [], integrity: ['repo'] },
    });
  });

  it('enforce-strict refuses naming every unlabelled source and the fix (AH-CFC-14)', async () => {
    const p = await profile('enforce-strict');
    const error = expectConfigError(
      () => plan({ profile: p }),
      'cfc_unlabelled',
      'cfc enforce-strict: no label for mount /data',
    );
    expect(error.exitCode).toBe(125);
    expect(error.hint).toContain('--label TARGET=ATOM,...');
    expect(error.hint).toContain('label each in the profile');
    // Labelled, it plans; and `profiles show --resolved` (describing) shows it either way.
    expect(
      plan({ profile: p, labels: ['/workspace=i:repo', '/data=i:data'] }).cfc.unlabelled,
    ).toEqual([]);
    expect(plan({ profile: p, describing: true }).cfc.unlabelled).toHaveLength(1);
  });

  it('enforce-explicit plans with unlabelled sources (they are opaque at run time)', async () => {
    const p = await profile('enforce-explicit');
    // The built-in workspace is labelled repo:untrusted (profiles/default.yaml).
    expect(plan({ profile: p }).cfc.unlabelled).toEqual(['mount /data']);
  });
});

describe('the run state and its record', () => {
  it('a disabled run gets no runtime; any other mode one carrying the capture', async () => {
    const p = await profile('observe');
    const planned = plan({ profile: p });
    const capture = captureOfPrompt('do it');
    const slots = { capture, context: 0, quoted: 0, fromPlan: false };
    const opts = { runId: 'run-p', keep: () => Promise.resolve(), carried: [] };
    expect(cfcRuntimeOf(plan({ cfc: 'disabled' }).cfc, '/workspace', slots, opts)).toBeUndefined();
    const runtime = cfcRuntimeOf(planned.cfc, '/workspace', slots, opts);
    expect(runtime?.authority()).toBe('capture-1');
    // No capture (a prompt cfh did not read from its caller): no authority.
    const none = cfcRuntimeOf(planned.cfc, '/workspace', { ...slots, capture: null }, opts);
    expect(none?.authority()).toBeNull();
  });

  it('captures the exact --prompt value as the schema has it', () => {
    const capture = captureOfPrompt('fix the tests\n');
    expect(InputCaptureRecord.parse(capture)).toEqual(capture);
    expect(capture).toMatchObject({
      captureId: 'capture-1',
      kernel: 'cfh',
      surface: 'cli',
      slot: 'prompt',
      chars: 14,
      sha256: createHash('sha256').update('fix the tests\n').digest('hex'),
      subject: { uid: process.getuid?.() ?? null, vouched: false },
    });
  });

  it('records a fallback only for a flag that weakens a profile enforce mode', async () => {
    const enforcing = await profile('enforce-explicit', ', label: { confidentiality: [s] }');
    const observed = plan({ profile: enforcing, cfc: 'observe' });
    const record = snapshotCfc(observed.cfc, 'enforce-explicit', null);
    expect(SnapshotCfc.parse(record)).toEqual(record);
    expect(record.fallback).toEqual({
      from: 'enforce-explicit',
      to: 'observe',
      owner: 'the operator (profile cfc.mode / --cfc)',
      retireWhen: 'set an enforce mode',
    });
    expect(record.mounts[1]).toMatchObject({ target: '/data', label: { confidentiality: ['s'] } });
    expect(record.mounts[0]?.label).toEqual({ confidentiality: [], integrity: ['repo:untrusted'] });
    const strict = plan({ profile: enforcing, cfc: 'enforce-strict', labels: ['/workspace=i:r'] });
    expect(snapshotCfc(strict.cfc, 'enforce-explicit', null).fallback).toBeNull();
    const own = plan({ profile: await profile('observe') });
    expect(snapshotCfc(own.cfc, 'observe', captureOfPrompt('p'))).toMatchObject({
      fallback: null,
      modeSource: 'profile',
      promptCapture: 'capture-1',
    });
  });
});
