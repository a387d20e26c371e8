// `cfh policy explain` and the policy of `cfh profiles show --resolved`: the mediator's own
// evaluation, through the real CLI, without running anything (governance extension,
// "Permission decision object"; AH-CFC-1: the harness decides, never the model).
import { describe, expect, it } from 'vitest';
import { cfh, useScratch } from './helpers.js';

const scratch = useScratch('policy-cli');

const PROFILE = `extends: untrusted-repo
name: policy-test
policy:
  - id: ask-before-rm
    match: { tool: exec, args: { "command.0": rm } }
    decision: approval_required
    reason: removing files needs a person
  - id: no-curl
    match: { tool: exec, args: { "command.0": "/^(curl|wget)$/" } }
    decision: deny
    reason: no downloads
`;

describe('cfh policy explain', () => {
  it('names the rule that decides, its tier and reason, and every rule that matched', async () => {
    const profile = await scratch.file('policy.yaml', PROFILE);
    const rm = await cfh([
      'policy',
      'explain',
      '--profile',
      profile,
      '--json',
      'exec',
      '{"command":["rm","-rf","x"]}',
    ]);
    expect(rm.exitCode, rm.stderr).toBe(0);
    const e = JSON.parse(rm.stdout);
    expect(e.verdict).toMatchObject({
      decision: 'approval_required',
      rule: 'ask-before-rm',
      tier: 1,
    });
    expect((e.matched as { rule: string }[]).map((m) => m.rule)).toEqual([
      'ask-before-rm',
      'contract:exec',
      'default:process_execution',
    ]);
    expect(e.argsDigest).toMatch(/^sha256:[0-9a-f]{64}$/);

    const ls = await cfh([
      'policy',
      'explain',
      '--profile',
      profile,
      '--json',
      'exec',
      '{"command":["ls"]}',
    ]);
    expect(JSON.parse(ls.stdout).verdict).toMatchObject({
      decision: 'run_in_sandbox',
      rule: 'contract:exec',
    });
    const curl = await cfh([
      'policy',
      'explain',
      '--profile',
      profile,
      'exec',
      '{"command":["curl","x"]}',
    ]);
    expect(curl.stdout).toMatch(/^decision\s+deny$/m);
    expect(curl.stdout).toMatch(/^rule\s+no-curl \(tier 1\)$/m);
  });

  it('planning mode, unknown tools and invalid arguments', async () => {
    const profile = await scratch.file('policy2.yaml', PROFILE);
    const plan = await cfh([
      'policy',
      'explain',
      '--profile',
      profile,
      '--plan',
      '--json',
      'write_file',
      '{"path":"a","content":"b"}',
    ]);
    expect(JSON.parse(plan.stdout).verdict).toMatchObject({
      decision: 'deny',
      rule: 'planning_mode',
    });
    const unknown = await cfh([
      'policy',
      'explain',
      '--profile',
      profile,
      '--json',
      'send_mail',
      '{}',
    ]);
    expect(JSON.parse(unknown.stdout)).toMatchObject({
      checked: 'unknown',
      verdict: { rule: 'unknown_tool' },
    });
    const invalid = await cfh([
      'policy',
      'explain',
      '--profile',
      profile,
      '--json',
      'exec',
      '{"command":"ls"}',
    ]);
    expect(JSON.parse(invalid.stdout)).toMatchObject({
      checked: 'invalid',
      verdict: { rule: 'invalid_arguments' },
    });
    const bad = await cfh(['policy', 'explain', '--profile', profile, 'exec', 'not json']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/ARGS_JSON: not JSON/);
  });

  it('a profile whose rules do not compile is refused before any run', async () => {
    const broken = await scratch.file(
      'broken.yaml',
      'extends: default\nname: broken\npolicy:\n  - { id: a, decision: deny, reason: r }\n  - { id: a, decision: allow, reason: r }\n',
    );
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      broken,
      '--artifact-root',
      scratch.path('art'),
      '--',
      'true',
    ]);
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/rule id 'a' is used twice/);
  });
});

describe('cfh profiles show --resolved', () => {
  it('shows the effective rules, tier by tier, with the published defaults', async () => {
    const profile = await scratch.file('policy3.yaml', PROFILE);
    const r = await cfh([
      'profiles',
      'show',
      profile,
      '--resolved',
      '--workspace',
      scratch.path(''),
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    const shown = JSON.parse(r.stdout);
    const tiers = shown.policy.tiers as { tier: number; rules: Record<string, unknown>[] }[];
    expect(tiers.map((t) => t.tier)).toEqual([0, 1, 2, 3]);
    expect(tiers[1]?.rules.map((x) => x.id)).toEqual(['ask-before-rm', 'no-curl']);
    expect(tiers[2]?.rules.find((x) => x.id === 'contract:exec')).toMatchObject({
      permissionPolicy: 'sandbox',
    });
    expect(tiers[3]?.rules).toHaveLength(15);
    expect(tiers[3]?.rules.find((x) => x.riskClass === 'financial')).toMatchObject({
      sandbox: 'require_stronger_auth',
    });
  });
});
