// What "narrows" means per field of a resumed run (AH-ART-4): a table of cases, each an
// override of one field, and whether the resume may run with it.
import { describe, expect, it } from 'vitest';
import {
  narrowingViolations,
  type AuthorityConfig,
} from '../../src/engine/resume/resume-narrowing.js';

const BASE: AuthorityConfig = {
  tools: ['read_file', 'write_file', 'exec'],
  hostTools: [],
  policy: [{ decision: 'ask', json: '{"id":"a"}' }],
  mounts: [{ target: '/data', source: '/srv/data', mode: 'rw' }],
  workspace: { hostPath: '/w', mode: 'rw' },
  network: { mode: 'allowlist', allow: ['a.test', 'b.test'], deny: ['c.test'], caBundle: null },
  limits: { memoryBytes: 1024, cpus: 2, pids: 100 },
  budgets: { maxToolCalls: 50, maxTotalCost: null },
  toolTimeoutSeconds: 60,
  toolLifetime: 'per-run',
  runtime: 'runc',
  image: 'cfh-sandbox:1',
  user: '4321:4321',
  cfcMode: 'enforce-explicit',
  cfcLabels: '{}',
  model: { adapter: 'anthropic', model: 'm', endpoint: 'https://e', keySource: 'env:K' },
  ownerUid: 1000,
  mode: 'run',
  failOnBlocked: false,
  commandEnv: [],
};

type Case = [string, Partial<AuthorityConfig>, string | null];

const CASES: Case[] = [
  ['nothing changed', {}, null],
  ['fewer tools', { tools: ['read_file'] }, null],
  ['another tool', { tools: ['read_file', 'grep'] }, 'tools'],
  ['a host tool added', { hostTools: ['gh'] }, 'hostTools'],
  [
    'a deny rule added',
    { policy: [...BASE.policy, { decision: 'deny', json: '{"id":"d"}' }] },
    null,
  ],
  [
    'an allow rule added',
    { policy: [...BASE.policy, { decision: 'allow', json: '{"id":"x"}' }] },
    'policy',
  ],
  ['a rule dropped', { policy: [] }, 'policy'],
  ['a mount read-only', { mounts: [{ target: '/data', source: '/srv/data', mode: 'ro' }] }, null],
  ['a mount dropped', { mounts: [] }, null],
  [
    'a mount added',
    { mounts: [...BASE.mounts, { target: '/x', source: '/x', mode: 'ro' }] },
    'mounts[/x]',
  ],
  [
    'a mount moved',
    { mounts: [{ target: '/data', source: '/other', mode: 'rw' }] },
    'mounts[/data]',
  ],
  ['another workspace', { workspace: { hostPath: '/v', mode: 'rw' } }, 'workspace'],
  ['workspace ro', { workspace: { hostPath: '/w', mode: 'ro' } }, null],
  ['workspace draft', { workspace: { hostPath: '/w', mode: 'draft' } }, null],
  ['network disabled', { network: { ...BASE.network, mode: 'disabled' } }, null],
  ['network open', { network: { ...BASE.network, mode: 'open' } }, 'network.mode'],
  ['an allowed host fewer', { network: { ...BASE.network, allow: ['a.test'] } }, null],
  [
    'an allowed host more',
    { network: { ...BASE.network, allow: ['a.test', 'z.test'] } },
    'network.allow',
  ],
  ['a deny more', { network: { ...BASE.network, deny: ['c.test', 'd.test'] } }, null],
  ['a deny dropped', { network: { ...BASE.network, deny: [] } }, 'network.deny'],
  ['another CA bundle', { network: { ...BASE.network, caBundle: '/ca.pem' } }, 'network.caBundle'],
  ['less memory', { limits: { ...BASE.limits, memoryBytes: 512 } }, null],
  ['more memory', { limits: { ...BASE.limits, memoryBytes: 2048 } }, 'limits.memory'],
  ['no pids limit', { limits: { ...BASE.limits, pids: null } }, 'limits.pids'],
  ['a lower budget', { budgets: { maxToolCalls: 3, maxTotalCost: null } }, null],
  [
    'a higher budget',
    { budgets: { maxToolCalls: 51, maxTotalCost: null } },
    'budgets.maxToolCalls',
  ],
  ['a cost limit where none', { budgets: { maxToolCalls: 50, maxTotalCost: 1 } }, null],
  [
    'a budget unlimited',
    { budgets: { maxToolCalls: null, maxTotalCost: null } },
    'budgets.maxToolCalls',
  ],
  ['a shorter tool timeout', { toolTimeoutSeconds: 10 }, null],
  ['no tool timeout', { toolTimeoutSeconds: null }, 'toolTimeoutSeconds'],
  ['a container per call', { toolLifetime: 'per-call' }, null],
  ['gVisor', { runtime: 'runsc' }, null],
  ['another image', { image: 'other:1' }, 'image'],
  ['another user', { user: '0:0' }, 'user'],
  ['a stricter CFC mode', { cfcMode: 'enforce-strict' }, null],
  ['a weaker CFC mode', { cfcMode: 'observe' }, 'cfc.mode'],
  ['other labels', { cfcLabels: '{"x":1}' }, 'cfc.labels'],
  ['another model', { model: { ...BASE.model, model: 'n' } }, 'model.model'],
  ['another endpoint', { model: { ...BASE.model, endpoint: 'https://f' } }, 'model.endpoint'],
  ['another credential', { model: { ...BASE.model, keySource: 'env:L' } }, 'model.keySource'],
  [
    'another adapter',
    { model: { adapter: 'scripted', model: null, endpoint: null, keySource: null } },
    'model.adapter',
  ],
  ['another OS user', { ownerUid: 0 }, 'credentialOwner'],
  ['fail on blocked', { failOnBlocked: true }, null],
  ['--env given', { commandEnv: ['TOKEN'] }, 'env'],
];

describe('resume narrowing (AH-ART-4)', () => {
  it.each(CASES)('%s', (_name, change, field) => {
    const violations = narrowingViolations(BASE, { ...BASE, ...change });
    if (field === null) expect(violations).toEqual([]);
    else expect(violations.map((v) => v.field)).toContain(field);
  });

  it('a scripted stand-in may replay another script; its adapter still must match', () => {
    const scripted = {
      ...BASE,
      model: { adapter: 'scripted', model: null, endpoint: null, keySource: null },
    };
    expect(narrowingViolations(scripted, scripted)).toEqual([]);
  });

  it('plan mode cannot become a run; a run may become a plan', () => {
    expect(narrowingViolations({ ...BASE, mode: 'plan' }, BASE).map((v) => v.field)).toEqual([
      'mode',
    ]);
    expect(narrowingViolations(BASE, { ...BASE, mode: 'plan' })).toEqual([]);
  });

  it('fail-on-blocked cannot be turned off', () => {
    const on = { ...BASE, failOnBlocked: true };
    expect(narrowingViolations(on, BASE).map((v) => v.field)).toEqual(['failOnBlocked']);
  });

  it('a run without CFC cannot be held to an enforcing mode: its labels are unknown', () => {
    const off = { ...BASE, cfcMode: 'disabled' as const };
    expect(narrowingViolations(off, { ...off, cfcMode: 'enforce-strict' })).toEqual([
      expect.objectContaining({ field: 'cfc.mode' }),
    ]);
  });

  it('a read-only mount cannot become read-write', () => {
    const ro = { ...BASE, mounts: [{ target: '/data', source: '/srv/data', mode: 'ro' as const }] };
    expect(narrowingViolations(ro, BASE).map((v) => v.field)).toEqual(['mounts[/data]']);
  });

  it('runc is broader than runsc', () => {
    expect(narrowingViolations({ ...BASE, runtime: 'runsc' }, BASE).map((v) => v.field)).toEqual([
      'runtime',
    ]);
  });
});
