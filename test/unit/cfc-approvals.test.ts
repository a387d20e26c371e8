// A refused flow is endorsed through the usual approval surfaces (docs/operators.md, "CFC",
// AH-CFC-11): the flow rules are rules `--approve` and `--approvals` may name, while an id
// that is no rule of the run is still refused (exit 125 at the CLI).
import { describe, expect, it } from 'vitest';
import { approvableRules } from '../../src/cli/commands/agent-approvals.js';
import { loadProfile } from '../../src/config/profile-loader.js';

describe('approvals name the CFC flow rules', () => {
  const rules = approvableRules(loadProfile('default').profile);

  it('cfc:clearance, cfc:integrity and cfc:unlabelled can be approved', () => {
    for (const r of ['cfc:clearance', 'cfc:integrity', 'cfc:unlabelled'])
      expect(rules.has(r)).toBe(true);
    expect(rules.describe()).toContain('cfc:integrity');
  });

  it('another cfc: id is not a rule of the run', () => {
    expect(rules.has('cfc:allow')).toBe(false);
    expect(rules.has('cfc:anything')).toBe(false);
  });
});
