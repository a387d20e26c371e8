// An environment value of exec's container is a CFC source (cfc/env-labels.ts,
// AH-CFC-2/10): every `--env` value and each labelled profile `env:` value, labelled by
// `--label env:NAME` over `cfc.envLabels`, unlabelled otherwise; under an enforce mode a
// labelled one some sink exec reaches is not cleared for is withheld; exec's reads and its
// flow carry the labels of those it keeps. Pure planning; the run through a real engine is
// test/integration/cfc-env-label.test.ts.
import { describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { parseLabelFlag, type LabelSpec } from '../../src/config/cfc-schema.js';
import { planCfc, workloadReadable, type CfcPlan } from '../../src/cfc/label-map.js';
import { envSources, splitEnvLabels, withEnvLabels } from '../../src/cfc/env-labels.js';
import { judgeFlow } from '../../src/cfc/flow.js';
import { label } from '../../src/cfc/label.js';
import { planRunCfc, snapshotCfc } from '../../src/engine/cfc/cfc-plan.js';
import { withoutEnv } from '../../src/tools/tool-container.js';
import { ConfigError } from '../../src/errors.js';
import type { ContainerSpec } from '../../src/substrate/container-spec.js';

const WS = '/workspace';
const RO = { mode: 'ro', label: { integrity: ['repo'] } };
const RW = { mode: 'rw', label: { integrity: ['repo'] } };
const DEST = 'api.test:443';

function profileWith(patch: Record<string, unknown>): Profile {
  const base = loadProfile('default').profile;
  return Profile.parse({ ...base, ...patch });
}

const network = (clearance: string[] = []) => ({
  mode: 'allowlist',
  allow: [DEST],
  deny: [],
  labels: {},
  clearance: clearance.length === 0 ? {} : { [DEST]: clearance },
  requires: {},
});

function planned(
  p: Profile,
  o: { mode?: CfcPlan['mode']; env?: string[]; flags?: Record<string, LabelSpec> } = {},
): CfcPlan {
  const base = planCfc(p, { workspaceTarget: WS, mode: o.mode ?? 'enforce-explicit' });
  return withEnvLabels(base, p, {
    commandEnv: o.env ?? ['DEPLOY_TOKEN'],
    flags: new Map(Object.entries(o.flags ?? {})),
  });
}

const secret = { confidentiality: ['secret'], integrity: [] };
const exec = {
  name: 'exec',
  riskClass: 'process_execution' as const,
  executor: 'sandbox' as const,
};

describe('which environment values are sources', () => {
  it('every --env value; a profile env value only where it is labelled', () => {
    const p = profileWith({
      env: { PATH: '/usr/bin:/bin', API_URL: 'https://x', DEPLOY_TOKEN: 'profile' },
      cfc: { mode: 'enforce-explicit', envLabels: { API_URL: { integrity: ['ops'] } } },
    });
    expect(envSources(p, { commandEnv: ['DEPLOY_TOKEN', 'A'], flags: new Map() })).toEqual([
      'A',
      'API_URL',
      'DEPLOY_TOKEN',
    ]);
    // A --label names a profile value into the sources too.
    expect(envSources(p, { commandEnv: [], flags: new Map([['PATH', secret]]) })).toEqual([
      'API_URL',
      'PATH',
    ]);
  });

  it('a --label env:NAME naming no value the run has is refused; a profile label is not', () => {
    const p = profileWith({ cfc: { envLabels: { ELSEWHERE: secret } } });
    expect(() => envSources(p, { commandEnv: [], flags: new Map([['NOPE', secret]]) })).toThrow(
      '--label env:NOPE: the run has no environment value NOPE',
    );
    expect(envSources(p, { commandEnv: [], flags: new Map() })).toEqual([]);
  });

  it('--label env:NAME=... is one --label syntax, split from the mount targets', () => {
    const parsed = ['env:DEPLOY_TOKEN=secret,i:ops', '/secrets=secret'].map((v) => {
      const l = parseLabelFlag(v);
      if (typeof l === 'string') throw new Error(l);
      return l;
    });
    const { env, mounts } = splitEnvLabels(parsed);
    expect([...env]).toEqual([
      ['DEPLOY_TOKEN', { confidentiality: ['secret'], integrity: ['ops'] }],
    ]);
    expect(mounts.map((m) => m.target)).toEqual(['/secrets']);
  });
});

describe('labels and withholding', () => {
  it('no label: unlabelled, kept, and exec is refused under cfc:unlabelled naming the label entry', () => {
    const p = profileWith({ workspace: RO, network: network() });
    const plan = planned(p);
    expect(plan.unlabelled).toContain('env DEPLOY_TOKEN');
    expect(plan.env).toEqual([
      { name: 'DEPLOY_TOKEN', label: undefined, labelSource: 'profile', inWorkload: true },
    ]);
    const v = judgeFlow({ plan, workspaceTarget: WS, tool: exec, args: {}, influence: label() });
    expect(v.verdict).toBe('deny');
    expect(v.rule).toBe('cfc:unlabelled');
    expect(v.reason).toContain('exec reads env DEPLOY_TOKEN, which has no label');
    expect(v.reason).toContain(
      'with --label: --label env:DEPLOY_TOKEN=ATOM,... (or cfc.envLabels.DEPLOY_TOKEN)',
    );
  });

  it('a secret some sink exec reaches is not cleared for is withheld, and exec flows without it', () => {
    const p = profileWith({
      workspace: RO,
      network: network(),
      cfc: { mode: 'enforce-explicit', envLabels: { DEPLOY_TOKEN: secret } },
    });
    const plan = planned(p);
    expect(plan.env).toEqual([
      {
        name: 'DEPLOY_TOKEN',
        label: label(secret),
        labelSource: 'profile',
        inWorkload: false,
        withheldBecause: `its confidentiality [secret] is not cleared for ${DEST}, which exec can reach`,
      },
    ]);
    expect(plan.unlabelled).toEqual([]);
    expect(workloadReadable(plan).labels.some((l) => l.confidentiality.includes('secret'))).toBe(
      false,
    );
    const v = judgeFlow({ plan, workspaceTarget: WS, tool: exec, args: {}, influence: label() });
    expect(v.verdict).toBe('allow');
  });

  it('a rw workspace not cleared for it withholds it too; --label replaces the profile label', () => {
    const p = profileWith({
      workspace: RW,
      network: { ...network(), mode: 'disabled' },
      cfc: { envLabels: { DEPLOY_TOKEN: { integrity: ['ops'] } } },
    });
    const plan = planned(p, { flags: { DEPLOY_TOKEN: secret } });
    expect(plan.env?.[0]).toMatchObject({
      labelSource: 'flag',
      inWorkload: false,
      withheldBecause:
        'its confidentiality [secret] is not cleared for /workspace (rw), which exec can reach',
    });
  });

  it("kept where every sink is cleared: exec's reads carry it, and a sink not cleared refuses", () => {
    const p = profileWith({
      workspace: RO,
      network: network(['secret']),
      cfc: { mode: 'enforce-strict', envLabels: { DEPLOY_TOKEN: secret } },
    });
    const plan = planned(p, { mode: 'enforce-strict' });
    expect(plan.env?.[0]?.inWorkload).toBe(true);
    expect(workloadReadable(plan).labels).toContainEqual(label(secret));
    // The same run with a destination not cleared, the value forced in: the flow refuses.
    const forced: CfcPlan = {
      ...plan,
      destinations: plan.destinations.map((d) => ({ ...d, clearance: [] })),
    };
    const v = judgeFlow({
      plan: forced,
      workspaceTarget: WS,
      tool: exec,
      args: {},
      influence: label({ integrity: ['prompt:direct'] }),
    });
    expect(v.rule).toBe('cfc:clearance');
  });

  it('observe and disabled withhold nothing', () => {
    const p = profileWith({
      workspace: RW,
      cfc: { envLabels: { DEPLOY_TOKEN: secret } },
    });
    for (const mode of ['observe', 'disabled'] as const)
      expect(planned(p, { mode }).env?.[0]?.inWorkload).toBe(true);
  });
});

describe('the run plan', () => {
  it('enforce-strict refuses an unlabelled env value, naming --label env:NAME', () => {
    const p = profileWith({ cfc: { mode: 'enforce-strict' } });
    let error: unknown;
    try {
      planRunCfc(p, [], [], WS, { commandEnv: ['DEPLOY_TOKEN'] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(
      'cfc enforce-strict: no label for env DEPLOY_TOKEN',
    );
    expect((error as ConfigError).hint).toContain('--label env:NAME=ATOM,...');
  });

  it('snapshot.cfc records names and labels, never a value', () => {
    const p = profileWith({ workspace: RW, cfc: { mode: 'enforce-explicit' } });
    const plan = planRunCfc(p, [], [], WS, {
      commandEnv: ['DEPLOY_TOKEN', 'OTHER'],
      labels: ['env:DEPLOY_TOKEN=secret'],
    });
    const snap = snapshotCfc(plan, 'enforce-explicit', null);
    expect(snap.env).toEqual([
      {
        name: 'DEPLOY_TOKEN',
        label: { confidentiality: ['secret'], integrity: [] },
        labelSource: 'flag',
        inWorkload: false,
        withheldBecause:
          'its confidentiality [secret] is not cleared for /workspace (rw), which exec can reach',
      },
      { name: 'OTHER', label: null, labelSource: 'profile', inWorkload: true },
    ]);
    expect(snap.unlabelled).toEqual(['env OTHER']);
  });

  it("exec's container gets no withheld variable; the others stay", () => {
    const spec = {
      env: { PATH: '/usr/bin', DEPLOY_TOKEN: 'v', OTHER: 'w' },
    } as unknown as ContainerSpec;
    expect(withoutEnv(spec, ['DEPLOY_TOKEN']).env).toEqual({ PATH: '/usr/bin', OTHER: 'w' });
    expect(withoutEnv(spec, [])).toBe(spec);
  });
});
