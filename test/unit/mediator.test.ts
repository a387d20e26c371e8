// The mediator, pure: policy evaluation order and tiers, the defaults for every risk class,
// rule matching on arguments, each decision value's effect, approvals bound to the args
// digest, and the AuthorizedCall only the mediator can make (governance extension;
// AH-TOOL-4, AH-CFC-1, AH-CFC-11).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RiskClass } from '../../src/config/vocabulary.js';
import { PolicyRule } from '../../src/config/policy-schema.js';
import { ObservationSchema } from '../../src/tools/observation.js';
import type { ToolDefinition } from '../../src/tools/contract.js';
import { Approvals, FileApprovals, RuleApprovals } from '../../src/mediator/approvals.js';
import {
  AuthorizedCall,
  Mediator,
  argsDigest,
  isAuthorized,
  type Ruling,
} from '../../src/mediator/mediator.js';
import { Policy, type CheckedCall, type RunFacts } from '../../src/mediator/policy.js';
import { compilePolicy } from '../../src/mediator/policy-rule.js';
import { describeDefaults } from '../../src/mediator/defaults.js';

const FACTS: RunFacts = {
  mode: 'run',
  workspaceMode: 'direct',
  network: 'disabled',
  rwMounts: true,
  fromPlan: false,
};

function tool(overrides: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name: 'exec',
    purpose: 'x',
    input: z.strictObject({ command: z.array(z.string()) }),
    output: ObservationSchema,
    riskClass: 'process_execution',
    sideEffectClass: 'process_or_network_execution',
    resourceScope: 'project',
    permissionPolicy: 'allow',
    timeoutMs: 1000,
    resultSizeLimitChars: 1000,
    retryPolicy: 'no_auto_retry',
    maxRetries: 0,
    auditPolicy: 'full_structured_event',
    executor: 'sandbox',
    ...overrides,
  };
}

const valid = (t: ToolDefinition, args: unknown = { command: ['ls'] }): CheckedCall => ({
  kind: 'valid',
  tool: t,
  args,
});

function rules(...list: unknown[]): ReturnType<typeof compilePolicy> {
  return compilePolicy(list.map((r) => PolicyRule.parse(r)));
}

function policy(profileRules: unknown[] = [], facts: Partial<RunFacts> = {}): Policy {
  return new Policy(rules(...profileRules), { ...FACTS, ...facts });
}

describe('policy: tiers and evaluation order', () => {
  it('within a tier, deny beats ask beats allow, first match within each class', () => {
    const p = policy([
      { id: 'a1', match: { tool: 'exec' }, decision: 'allow', reason: 'r' },
      { id: 'q1', match: { tool: 'exec' }, decision: 'approval_required', reason: 'r' },
      { id: 'q2', match: { tool: 'exec' }, decision: 'ask_user', reason: 'r' },
      { id: 'd1', match: { tool: 'ex*' }, decision: 'deny', reason: 'no' },
      { id: 'd2', match: { tool: 'exec' }, decision: 'deny', reason: 'no' },
    ]);
    expect(p.decide(valid(tool()))).toMatchObject({ decision: 'deny', rule: 'd1', tier: 1 });
    const noDeny = policy([
      { id: 'a1', match: { tool: 'exec' }, decision: 'allow', reason: 'r' },
      { id: 'q1', match: { tool: 'exec' }, decision: 'require_stronger_auth', reason: 'r' },
      { id: 'q2', match: { tool: 'exec' }, decision: 'ask_user', reason: 'r' },
    ]);
    expect(noDeny.decide(valid(tool()))).toMatchObject({
      decision: 'require_stronger_auth',
      rule: 'q1',
    });
  });

  it("the profile's rules decide before the contract, the contract before the defaults", () => {
    const t = tool({ riskClass: 'communication', executor: 'host', permissionPolicy: 'allow' });
    // Defaults alone: communication needs approval.
    expect(policy().decide(valid(t))).toMatchObject({
      decision: 'approval_required',
      rule: 'default:communication',
      tier: 3,
    });
    // The operator allows it for this tool: the profile's tier decides.
    const allowed = policy([
      { id: 'ok-notify', match: { tool: 'exec' }, decision: 'allow', reason: 'operator says so' },
    ]);
    expect(allowed.decide(valid(t))).toMatchObject({
      decision: 'allow',
      rule: 'ok-notify',
      tier: 1,
    });
    // A contract that says deny beats the defaults.
    expect(policy().decide(valid({ ...t, permissionPolicy: 'deny' }))).toMatchObject({
      decision: 'deny',
      rule: 'contract:exec',
      tier: 2,
    });
  });

  it('unknown tools and invalid arguments are decided deny, naming why', () => {
    expect(policy().decide({ kind: 'unknown', name: 'rm_rf' })).toMatchObject({
      decision: 'deny',
      rule: 'unknown_tool',
    });
    expect(policy().decide({ kind: 'invalid', tool: tool(), issues: 'x' })).toMatchObject({
      decision: 'deny',
      rule: 'invalid_arguments',
    });
  });

  it('nothing that matches is denied by default', () => {
    // A tool whose risk class has no default cannot exist; a profile rule that only matches
    // in plan mode leaves a host-side process to its default (approval), not to allow.
    const explained = policy().explain({ kind: 'unknown', name: 'x' });
    expect(explained.verdict.decision).toBe('deny');
  });

  it('planning mode denies every mutation with rule planning_mode, whatever the profile says', () => {
    const allowAll = [{ id: 'yes', match: {}, decision: 'allow', reason: 'r' }];
    const plan = policy(allowAll, { mode: 'plan' });
    const write = tool({
      name: 'write_file',
      riskClass: 'write_local',
      sideEffectClass: 'local_artifact',
    });
    expect(plan.decide(valid(write))).toMatchObject({ decision: 'deny', rule: 'planning_mode' });
    // A program in a sandbox with an rw mount, or with network, can change things.
    expect(plan.decide(valid(tool()))).toMatchObject({ rule: 'planning_mode' });
    expect(
      policy(allowAll, { mode: 'plan', rwMounts: false, network: 'open' }).decide(valid(tool())),
    ).toMatchObject({ rule: 'planning_mode' });
    // With no rw mount and no network it cannot: allowed in plan mode.
    const ro = policy([], { mode: 'plan', rwMounts: false });
    expect(ro.decide(valid(tool()))).toMatchObject({ decision: 'run_in_sandbox' });
    // Reading is always fine.
    const read = tool({ name: 'read_file', riskClass: 'read_only', sideEffectClass: 'none' });
    expect(plan.decide(valid(read))).toMatchObject({ decision: 'allow', rule: 'yes' });
    // A host tool with a side effect is a mutation even when read-classified.
    const hostRead = tool({
      executor: 'host',
      riskClass: 'read_only',
      sideEffectClass: 'process_or_network_execution',
    });
    expect(ro.decide(valid(hostRead))).toMatchObject({ rule: 'planning_mode' });
  });

  it('a run from a plan asks before anything risky', () => {
    const p = policy([{ id: 'yes', match: {}, decision: 'allow', reason: 'r' }], {
      fromPlan: true,
    });
    expect(p.decide(valid(tool()))).toMatchObject({
      decision: 'approval_required',
      rule: 'from_plan',
    });
    const read = tool({ riskClass: 'read_only', sideEffectClass: 'none' });
    expect(p.decide(valid(read))).toMatchObject({ decision: 'allow' });
  });

  it('a run from a plan only tightens: denials, stronger authentication and what cannot hold stand', async () => {
    const noRm = {
      id: 'no-rm',
      match: { args: { 'command.0': 'rm' } },
      decision: 'deny',
      reason: 'never',
    };
    const cases: [string, ToolDefinition, unknown, { decision: string; rule: string }][] = [
      [
        'profile deny',
        tool(),
        { command: ['rm', '-rf', '/'] },
        { decision: 'deny', rule: 'no-rm' },
      ],
      [
        'contract deny',
        tool({
          name: 'host__pay',
          executor: 'host',
          permissionPolicy: 'deny',
          riskClass: 'write_external',
          sideEffectClass: 'external_commitment',
        }),
        { command: ['x'] },
        { decision: 'deny', rule: 'contract:host__pay' },
      ],
      [
        'stronger authentication',
        tool({
          name: 'host__wire',
          executor: 'host',
          riskClass: 'financial',
          sideEffectClass: 'financial_transfer',
        }),
        { command: ['x'] },
        { decision: 'require_stronger_auth', rule: 'default:financial' },
      ],
      [
        'sandbox-only on the host',
        tool({ name: 'host__s', executor: 'host', permissionPolicy: 'sandbox' }),
        { command: ['x'] },
        { decision: 'deny', rule: 'contract:host__s' },
      ],
      [
        'sandbox-only on the host, high-risk',
        tool({
          name: 'host__d',
          executor: 'host',
          permissionPolicy: 'sandbox',
          riskClass: 'destructive',
        }),
        { command: ['x'] },
        { decision: 'deny', rule: 'contract:host__d' },
      ],
      [
        'open world with the network disabled',
        tool({ name: 'fetch', riskClass: 'network_open_world' }),
        { command: ['x'] },
        { decision: 'deny', rule: 'default:network_open_world' },
      ],
    ];
    for (const [label, t, args, want] of cases) {
      for (const fromPlan of [false, true]) {
        const p = policy([noRm], { fromPlan });
        expect(p.decide(valid(t, args)), `${label}, fromPlan ${fromPlan}`).toMatchObject(want);
        // Even with `--approve from_plan`, none of them is authorized.
        const m = new Mediator({
          policy: p,
          approvals: new Approvals([new RuleApprovals(['from_plan'], 'op')]),
          recorder: { event: () => Promise.resolve() },
        });
        const ruling = await m.decide(
          { callId: 'c1', toolUseId: 'u1', checked: valid(t, args) },
          new AbortController().signal,
        );
        expect(ruling.kind, `${label}, fromPlan ${fromPlan}`).toBe('refused');
      }
    }
  });
});

describe('policy: the built-in defaults, every risk class', () => {
  const expected: Record<string, [string, string]> = {
    read_only: ['allow', 'allow'],
    search_only: ['allow', 'allow'],
    compute_only: ['allow', 'allow'],
    draft_only: ['allow', 'allow'],
    write_local: ['allow', 'approval_required'],
    write_internal: ['approval_required', 'approval_required'],
    write_external: ['approval_required', 'approval_required'],
    communication: ['approval_required', 'approval_required'],
    financial: ['require_stronger_auth', 'require_stronger_auth'],
    identity_access: ['require_stronger_auth', 'require_stronger_auth'],
    security_sensitive: ['approval_required', 'approval_required'],
    process_execution: ['run_in_sandbox', 'approval_required'],
    network_open_world: ['deny', 'approval_required'],
    destructive: ['approval_required', 'approval_required'],
    privileged_admin: ['approval_required', 'approval_required'],
  };

  it.each(RiskClass.options)('%s: sandbox and host', (riskClass) => {
    const [sandbox, host] = expected[riskClass] ?? [];
    for (const [executor, want] of [
      ['sandbox', sandbox],
      ['host', host],
    ] as const) {
      const v = policy().decide(valid(tool({ riskClass, executor })));
      expect(v, `${riskClass} ${executor}`).toMatchObject({
        decision: want,
        rule: `default:${riskClass}`,
        tier: 3,
      });
    }
  });

  it('network_open_world follows the network posture; write_local in a draft is draft-only', () => {
    const open = tool({ riskClass: 'network_open_world' });
    expect(policy([], { network: 'open' }).decide(valid(open)).decision).toBe('run_in_sandbox');
    expect(policy([], { network: 'allowlist' }).decide(valid(open)).decision).toBe(
      'run_in_sandbox',
    );
    const write = tool({ riskClass: 'write_local' });
    expect(policy([], { workspaceMode: 'draft' }).decide(valid(write)).decision).toBe(
      'run_as_draft_only',
    );
  });

  it('the published table is the evaluated one', () => {
    const table = describeDefaults(FACTS);
    expect(table).toHaveLength(15);
    for (const row of table) expect([row.sandbox, row.host]).toEqual(expected[row.riskClass]);
  });
});

describe('policy: matching on arguments', () => {
  const on = (match: unknown) => {
    const p = policy([{ id: 'r', match, decision: 'deny', reason: 'x' }]);
    return (call: CheckedCall) => p.decide(call);
  };

  it('dotted paths into arrays and objects, exact strings and /regex/', () => {
    const t = tool();
    expect(on({ args: { 'command.0': 'rm' } })(valid(t, { command: ['rm', '-rf'] })).rule).toBe(
      'r',
    );
    expect(on({ args: { 'command.0': 'rm' } })(valid(t, { command: ['rmdir'] })).rule).not.toBe(
      'r',
    );
    expect(on({ args: { 'command.1': '/^-r/' } })(valid(t, { command: ['rm', '-rf'] })).rule).toBe(
      'r',
    );
    expect(on({ args: { 'command.5': '/.*/' } })(valid(t, { command: ['rm'] })).rule).not.toBe('r');
    const nested = { path: 'a', options: { force: true, depth: 3 } };
    expect(on({ args: { 'options.force': 'true' } })(valid(t, nested)).rule).toBe('r');
    expect(on({ args: { 'options.depth': '3' } })(valid(t, nested)).rule).toBe('r');
    // An object is not a string: no match.
    expect(on({ args: { options: '/.*/' } })(valid(t, nested)).rule).not.toBe('r');
    // Prototype names are not paths into the input.
    expect(on({ args: { 'constructor.name': 'Object' } })(valid(t, {})).rule).not.toBe('r');
  });

  it('a value padded past what a regex sees never passes an allow, and still meets a deny', () => {
    const t = tool({ input: z.strictObject({ sql: z.string() }) });
    const allowSelect = policy([
      {
        id: 'select',
        match: { args: { sql: '/^SELECT [a-z_, ]+ FROM [a-z_]+$/' } },
        decision: 'allow',
        reason: 'x',
      },
    ]);
    const padded = `SELECT ${'a'.repeat(9986)} FROM t; DROP TABLE users`;
    expect(allowSelect.decide(valid(t, { sql: 'SELECT a FROM t' })).rule).toBe('select');
    expect(
      allowSelect.decide(valid(t, { sql: 'SELECT a FROM t; DROP TABLE users' })).rule,
    ).not.toBe('select');
    expect(allowSelect.decide(valid(t, { sql: padded })).rule).not.toBe('select');
    const denyDrop = policy([
      { id: 'no-drop', match: { args: { sql: '/DROP/' } }, decision: 'deny', reason: 'x' },
    ]);
    expect(denyDrop.decide(valid(t, { sql: `${'a'.repeat(20_000)} DROP` })).rule).toBe('no-drop');
  });

  it('a regex with g or y answers the same every time (no state between calls)', () => {
    const t = tool();
    const p = policy([
      { id: 'rm', match: { args: { 'command.0': '/rm/g' } }, decision: 'deny', reason: 'x' },
    ]);
    const rules = [0, 1, 2].map(() => p.decide(valid(t, { command: ['rm'] })).rule);
    expect(rules).toEqual(['rm', 'rm', 'rm']);
  });

  it('every given field must hold: tool glob, classes, mode', () => {
    const t = tool({ name: 'mcp__tracker__create-issue', riskClass: 'write_internal' });
    expect(on({ tool: 'mcp__tracker__*' })(valid(t)).rule).toBe('r');
    expect(on({ tool: 'mcp__tracker__*', riskClass: 'read_only' })(valid(t)).rule).not.toBe('r');
    expect(on({ tool: 'mcp__*', mode: 'plan' })(valid(t)).rule).not.toBe('r');
    expect(on({ tool: 'mcp__tracker.create' })(valid(t)).rule).not.toBe('r');
  });

  it('rule ids are unique and cfh keeps its own', () => {
    expect(() =>
      rules(
        { id: 'x', decision: 'deny', reason: 'r' },
        { id: 'x', decision: 'allow', reason: 'r' },
      ),
    ).toThrow(/used twice/);
    expect(
      PolicyRule.safeParse({ id: 'default:read_only', decision: 'allow', reason: 'r' }).success,
    ).toBe(false);
    expect(
      PolicyRule.safeParse({ id: 'planning_mode', decision: 'allow', reason: 'r' }).success,
    ).toBe(false);
  });
});

describe('mediator: each decision value, recorded before anything runs', () => {
  function mediator(
    decision: string,
    facts: Partial<RunFacts> = {},
    approvals: Approvals = new Approvals([]),
  ) {
    const events: { type: string; data: Record<string, unknown> }[] = [];
    const m = new Mediator({
      policy: policy([{ id: 'the-rule', match: {}, decision, reason: 'because' }], facts),
      approvals,
      recorder: {
        event: (type, data) => {
          events.push({ type, data });
          return Promise.resolve();
        },
      },
    });
    return { m, events };
  }
  const proposal = (checked: CheckedCall) => ({ callId: 'call-0001', toolUseId: 'tu', checked });
  const signal = new AbortController().signal;

  it.each([
    ['allow', 'authorized'],
    ['run_in_sandbox', 'authorized'],
    ['deny', 'refused:denied'],
    ['ask_user', 'refused:approval_required'],
    ['approval_required', 'refused:approval_required'],
    ['require_stronger_auth', 'refused:approval_required'],
    ['run_as_draft_only', 'refused:denied'],
  ])('%s with nobody to ask, direct workspace: %s', async (decision, want) => {
    const { m, events } = mediator(decision);
    const r = await m.decide(proposal(valid(tool())), signal);
    expect(r.kind === 'authorized' ? 'authorized' : `refused:${r.status}`).toBe(want);
    // The decision object is the first thing recorded, with every field.
    expect(events[0]?.type).toBe('permission_decision');
    expect(events[0]?.data).toMatchObject({
      call_id: 'call-0001',
      tool_name: 'exec',
      risk_class: 'process_execution',
      side_effect_class: 'process_or_network_execution',
      resource_scope: 'project',
      policy_rule: 'the-rule',
      approver: null,
      args_digest: argsDigest('exec', { command: ['ls'] }),
    });
  });

  it('run_as_draft_only runs in a draft; run_in_sandbox never runs a host tool', async () => {
    expect(
      (
        await mediator('run_as_draft_only', { workspaceMode: 'draft' }).m.decide(
          proposal(valid(tool())),
          signal,
        )
      ).kind,
    ).toBe('authorized');
    const host = await mediator('run_in_sandbox').m.decide(
      proposal(valid(tool({ executor: 'host' }))),
      signal,
    );
    expect(host).toMatchObject({ kind: 'refused', status: 'denied' });
  });

  it('an approval binds the exact call: another argument is another digest', async () => {
    const t = tool();
    const approved = {
      rule: 'the-rule',
      tool: 'exec',
      argsDigest: argsDigest('exec', { command: ['ls'] }),
    };
    const sources = new Approvals([new FileApprovals([approved], 'alice')]);
    const { m, events } = mediator('approval_required', {}, sources);
    const same = await m.decide(proposal(valid(t, { command: ['ls'] })), signal);
    expect(same.kind).toBe('authorized');
    expect(same.decision.approver).toEqual({ kind: 'human', user: 'alice', surface: 'file' });
    const changed = await m.decide(proposal(valid(t, { command: ['ls', '/'] })), signal);
    expect(changed).toMatchObject({ kind: 'refused', status: 'approval_required' });
    expect(events.map((e) => e.type)).toEqual([
      'permission_decision',
      'approval_requested',
      'approval_received',
      'permission_decision',
      'approval_requested',
      'approval_received',
    ]);
    expect(events[2]?.data).toMatchObject({ outcome: 'granted', approver: { surface: 'file' } });
    expect(events[5]?.data).toMatchObject({ outcome: 'unavailable', approver: null });
  });

  it('a file entry approves one call once: a repeat is asked again, two entries approve two', async () => {
    const t = tool();
    const entry = {
      rule: 'the-rule',
      tool: 'exec',
      argsDigest: argsDigest('exec', { command: ['ls'] }),
    };
    for (const [entries, expected] of [
      [[entry], ['authorized', 'refused', 'refused']],
      [
        [entry, entry],
        ['authorized', 'authorized', 'refused'],
      ],
    ] as const) {
      const sources = new Approvals([new FileApprovals(entries, 'alice')]);
      const { m } = mediator('approval_required', {}, sources);
      const kinds: string[] = [];
      for (let i = 0; i < 3; i += 1)
        kinds.push((await m.decide(proposal(valid(t, { command: ['ls'] })), signal)).kind);
      expect(kinds).toEqual(expected);
    }
  });

  it('a rule approved for the run covers its calls, but never stronger authentication', async () => {
    const sources = () => new Approvals([new RuleApprovals(['the-rule'], 'alice')]);
    const ask = await mediator('approval_required', {}, sources()).m.decide(
      proposal(valid(tool())),
      signal,
    );
    expect(ask).toMatchObject({ kind: 'authorized', decision: { approver: { surface: 'flag' } } });
    const strong = await mediator('require_stronger_auth', {}, sources()).m.decide(
      proposal(valid(tool())),
      signal,
    );
    expect(strong).toMatchObject({ kind: 'refused', status: 'approval_required' });
  });

  it('no rule allows a high-risk commit outright: it asks, under the rule that allowed it', async () => {
    const risky = tool({
      riskClass: 'communication',
      sideEffectClass: 'external_commitment',
      executor: 'host',
    });
    const { m, events } = mediator('allow');
    const r = await m.decide(proposal(valid(risky)), signal);
    expect(r).toMatchObject({ kind: 'refused', status: 'approval_required' });
    expect(events[0]?.data).toMatchObject({
      decision: 'approval_required',
      policy_rule: 'the-rule',
    });
    const approved = await mediator(
      'allow',
      {},
      new Approvals([new RuleApprovals(['the-rule'], 'alice')]),
    ).m.decide(proposal(valid(risky)), signal);
    expect(approved).toMatchObject({
      kind: 'authorized',
      decision: { approver: { kind: 'human' } },
    });
  });

  it('high-risk commits carry an idempotency key; others none', async () => {
    const r = (await mediator(
      'allow',
      {},
      new Approvals([new RuleApprovals(['the-rule'], 'alice')]),
    ).m.decide(
      proposal(valid(tool({ riskClass: 'destructive', sideEffectClass: 'destructive_change' }))),
      signal,
    )) as Extract<Ruling, { kind: 'authorized' }>;
    expect(r.call.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    const plain = (await mediator('allow').m.decide(proposal(valid(tool())), signal)) as Extract<
      Ruling,
      { kind: 'authorized' }
    >;
    expect(plain.call.idempotencyKey).toBeUndefined();
  });
});

describe('AuthorizedCall', () => {
  it('cannot be made outside the mediator, nor faked', () => {
    expect(
      () =>
        new AuthorizedCall(
          Symbol('cfh.authorized-call') as never,
          'call-0001',
          tool(),
          {},
          {} as never,
          undefined,
        ),
    ).toThrow(/mediator only/);
    const lookalike = Object.create(AuthorizedCall.prototype) as AuthorizedCall;
    expect(isAuthorized(lookalike)).toBe(false);
    expect(isAuthorized({ callId: 'x', tool: tool(), args: {}, decision: {} })).toBe(false);
  });
});
