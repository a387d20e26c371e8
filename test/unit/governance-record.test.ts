// The governance record (governance.jsonl) and its published JSON Schema enforce the
// extension's invariants structurally: each invariant broken by a hand-made record is
// rejected by the zod schema cfh writes with AND by a JSON Schema validator reading the
// file in docs/, and the published file is exactly what the zod definition generates.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { GovernanceRecord, governanceJsonSchema } from '../../src/evidence/governance-record.js';

const PUBLISHED = new URL('../../docs/schema/governance-record.schema.json', import.meta.url);

const good = {
  schema: 'cfh.governance/1',
  call_id: 'call-0001',
  timestamp: '2026-12-01T10:00:00.000Z',
  mode: 'run',
  tool: {
    name: 'write_file',
    risk_class: 'write_local',
    side_effect_class: 'local_artifact',
    resource_scope: 'project',
    executor: 'sandbox',
  },
  decision: {
    value: 'allow',
    policy_rule: 'default:write_local',
    reason: 'writes only inside the sandbox',
    decided_by: 'policy',
    approver: null,
    args_digest: `sha256:${'a'.repeat(64)}`,
  },
  side_effect_committed: true,
  idempotency_key: null,
  observation_status: 'success',
  budget: {
    model_turns: 1,
    tool_calls: 0,
    input_tokens: 10,
    output_tokens: 5,
    estimated_cost: null,
    elapsed_seconds: 0.5,
  },
};

type Rec = typeof good & Record<string, unknown>;
const human = { kind: 'human', user: 'alice', surface: 'tty' };
const change = (f: (r: Rec) => void): Rec => {
  const r = structuredClone(good) as Rec;
  f(r);
  return r;
};

const violations: [string, Rec][] = [
  [
    '1. the model as the deciding authority',
    change((r) => {
      (r.decision as Record<string, unknown>).decided_by = 'model';
    }),
  ],
  [
    '1. a model approver',
    change((r) => {
      r.decision = {
        ...r.decision,
        decided_by: 'human',
        approver: { ...human, kind: 'model' },
      } as never;
    }),
  ],
  [
    '2. planning mode committing a mutation',
    change((r) => {
      r.mode = 'plan';
    }),
  ],
  [
    '3. a committed side effect with a pending approval',
    change((r) => {
      r.decision = { ...r.decision, value: 'approval_required' };
    }),
  ],
  [
    '4. a denied decision that committed',
    change((r) => {
      r.decision = { ...r.decision, value: 'deny' };
    }),
  ],
  [
    '5. a high-risk commitment decided by policy',
    change((r) => {
      r.tool = { ...r.tool, risk_class: 'destructive', side_effect_class: 'destructive_change' };
    }),
  ],
  [
    '5. an external commitment decided by policy',
    change((r) => {
      r.tool = { ...r.tool, risk_class: 'communication', side_effect_class: 'external_commitment' };
    }),
  ],
  [
    '6. a budget stop without a budget',
    change((r) => {
      r.budget_stop = { budget: '' };
    }),
  ],
  [
    'a human decision with no approver named',
    change((r) => {
      r.decision = { ...r.decision, decided_by: 'human' };
    }),
  ],
];

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addFormat('date-time', true);
const validate = ajv.compile(JSON.parse(readFileSync(PUBLISHED, 'utf8')) as object);

describe('governance record', () => {
  it('the published JSON Schema is what the zod definition generates', () => {
    expect(JSON.parse(readFileSync(PUBLISHED, 'utf8'))).toEqual(governanceJsonSchema());
  });

  it('accepts conforming records, the approved high-risk commit and a budget stop too', () => {
    const approved = change((r) => {
      r.tool = { ...r.tool, risk_class: 'destructive', side_effect_class: 'destructive_change' };
      r.decision = {
        ...r.decision,
        value: 'approval_required',
        decided_by: 'human',
        approver: human as never,
      };
    });
    const stopped = change((r) => {
      r.side_effect_committed = false;
      r.observation_status = 'aborted';
      r.decision = {
        ...r.decision,
        value: 'deny',
        policy_rule: 'stop:budget_exceeded:max_tool_calls',
      };
      r.budget_stop = { budget: 'max_tool_calls' };
    });
    for (const r of [good, approved, stopped]) {
      expect(GovernanceRecord.safeParse(r).success).toBe(true);
      expect(validate(r), JSON.stringify(validate.errors)).toBe(true);
    }
  });

  it.each(violations)('rejects %s, in zod and in the JSON Schema', (_name, record) => {
    expect(GovernanceRecord.safeParse(record).success).toBe(false);
    expect(validate(record)).toBe(false);
  });
});
