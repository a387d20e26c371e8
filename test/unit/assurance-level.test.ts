// The assurance level is decided by what the engine was found to run, not by the runtime a
// profile asked for (AH-DIAG-2): `strong` only where every runtime name the run uses is
// registered to gVisor's binary; a `runsc` name that runs something else is `reduced`, with
// its reason. And the audit refuses a `strong` that the recorded runtime does not bear out.
// Pure logic over planned runs and synthetic evidence; the real engine's runs are in
// integration/assurance.test.ts.
import { mkdir } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CfhEnvironment } from '../../src/config/env.js';
import type { PreflightFacts } from '../../src/engine/run/preflight.js';
import { planSandboxRun, type RunPlan } from '../../src/engine/run/run-plan.js';
import { assuranceOf } from '../../src/engine/run/snapshot.js';
import { assuranceCheck } from '../../src/evidence/audit/checks-snapshot.js';
import { parseEvents, type RunEvidence } from '../../src/evidence/audit/run-evidence.js';
import { isGvisorBinary } from '../../src/evidence/schema/snapshot.js';
import { makeTempDir, removeTempDir } from './helpers.js';
import { testEnvironment } from './test-environment.js';

let tmp: string | undefined;
let ws = '';
beforeAll(async () => {
  tmp = realpathSync(await makeTempDir('cfh-assurance-'));
  ws = path.join(tmp, 'ws');
  await mkdir(ws);
});
afterAll(async () => {
  await removeTempDir(tmp);
});

function plan(runtime: 'runc' | 'runsc', network = 'disabled'): RunPlan {
  const art = path.join(tmp ?? '', 'runs');
  const env: CfhEnvironment = testEnvironment(path.join(art, '..'), { artifactRoot: art });
  return planSandboxRun(
    { workspace: ws, command: ['true'], runtime, network },
    env,
    { uid: 1000, gid: 1000 },
    { pid: 4242, start: 'boot/1', host: 'test-host' },
  );
}

function facts(binaries?: Record<string, string>): PreflightFacts {
  return {
    engine: { serverVersion: '20.10.24', apiVersion: '1.41' },
    image: {
      id: 'sha256:abc',
      tags: [],
      createdAt: '',
      sizeBytes: 1,
      labels: {},
      config: { volumes: [], entrypoint: [], healthcheck: [], onBuild: [] },
    },
    seccompEnforcement: binaries === undefined ? 'kernel-seccomp' : 'gvisor-oci-seccomp',
    ...(binaries === undefined
      ? {}
      : { runtimeArgs: ['--oci-seccomp'], runtimeBinaries: binaries }),
  };
}

describe('the level rests on the runtime the engine runs, not the name asked for', () => {
  it('runc is standard, resting on the container isolation', () => {
    const a = assuranceOf(plan('runc'), facts());
    expect(a.level).toBe('standard');
    expect(a.reasons).toEqual([]);
    expect(a.basis.map((b) => b.code)).toEqual(['container']);
  });

  it('runsc registered to gVisor is strong, naming the binary', () => {
    const a = assuranceOf(plan('runsc'), facts({ runsc: '/usr/bin/runsc' }));
    expect(a.level).toBe('strong');
    expect(a.basis).toEqual([
      { code: 'gvisor', detail: expect.stringContaining('runsc: /usr/bin/runsc') },
    ]);
  });

  it('a runsc name registered to another binary is reduced, not strong', () => {
    const a = assuranceOf(plan('runsc'), facts({ runsc: '/usr/bin/runc' }));
    expect(a.level).toBe('reduced');
    expect(a.reasons.map((r) => r.code)).toEqual(['runtime-not-gvisor']);
    expect(a.notes[0]).toMatch(/'runsc' as \/usr\/bin\/runc/);
  });

  it('variant: the networked name (runsc-host) is another binary, the plain one is gVisor', () => {
    const p = plan('runsc', 'open');
    expect(p.spec.engineRuntime).toBe('runsc-host');
    const a = assuranceOf(p, facts({ 'runsc-host': '/opt/crun', runsc: '/usr/bin/runsc' }));
    expect(a.level).toBe('reduced');
    expect(a.notes[0]).toMatch(/'runsc-host' as \/opt\/crun/);
  });

  it('variant: a binary preflight could not name is not gVisor', () => {
    expect(assuranceOf(plan('runsc'), facts({ runsc: '' })).level).toBe('reduced');
    expect(assuranceOf(plan('runsc'), facts({})).level).toBe('reduced');
  });

  it('gVisor binaries by their file name, wherever installed', () => {
    for (const b of [
      'runsc',
      '/usr/bin/runsc',
      '/opt/gvisor/runsc-2022',
      '/usr/local/bin/runsc.real',
    ])
      expect(isGvisorBinary(b), b).toBe(true);
    for (const b of ['runc', '/usr/bin/runc', '/tmp/not-runsc', '/usr/bin/runscx', ''])
      expect(isGvisorBinary(b), b).toBe(false);
  });
});

const RUN_ID = '20260101T000000Z-0123abcd';
const none = { present: false, value: undefined } as const;

function evidence(snapshot: Record<string, unknown>): RunEvidence {
  const { events, badLines } = parseEvents('');
  return {
    dir: `/runs/${RUN_ID}`,
    runId: RUN_ID,
    eventLog: { present: true },
    eventsBody: '',
    events,
    badLines,
    snapshot: { present: true, value: snapshot },
    report: none,
    state: none,
    signature: none,
    transcript: undefined,
    files: [],
    listProblems: [],
    locked: false,
  };
}

function snapshotOf(
  level: string,
  runtime: Record<string, unknown>,
  enforcement = 'gvisor-oci-seccomp',
): Record<string, unknown> {
  return {
    assurance: { level, notes: [], reasons: [], basis: [] },
    runtime,
    seccomp: { enforcement },
  };
}

describe('the audit refuses a strong level the recorded runtime does not bear out', () => {
  const verdict = (snap: Record<string, unknown>) => assuranceCheck.run({ run: evidence(snap) });

  it('strong on runsc registered to gVisor passes', () => {
    const r = verdict(
      snapshotOf('strong', {
        requested: 'runsc',
        engineRuntime: 'runsc',
        binaries: { runsc: '/usr/bin/runsc' },
      }),
    );
    expect(r.verdict).toBe('pass');
  });

  it('strong on runc fails, naming the runtime', () => {
    const r = verdict(
      snapshotOf('strong', { requested: 'runc', engineRuntime: 'runc' }, 'kernel-seccomp'),
    );
    expect(r.verdict).toBe('fail');
    expect((r.where ?? []).join('\n')).toMatch(/strong, yet the runtime is runc/);
  });

  it('strong on a runsc name registered to runc fails', () => {
    const r = verdict(
      snapshotOf('strong', {
        requested: 'runsc',
        engineRuntime: 'runsc',
        binaries: { runsc: '/usr/bin/runc' },
      }),
    );
    expect(r.verdict).toBe('fail');
  });

  it('strong without the filter applied fails', () => {
    const r = verdict(
      snapshotOf(
        'strong',
        { requested: 'runsc', engineRuntime: 'runsc', binaries: { runsc: '/usr/bin/runsc' } },
        'not-applied-gvisor',
      ),
    );
    expect(r.verdict).toBe('fail');
    expect((r.where ?? []).join('\n')).toMatch(/not applied, yet the level is strong/);
  });
});
