// What the audit's re-derivations read back from the evidence (audit/decision-inputs.ts), on
// synthetic evidence (pure logic; real runs are in integration/audit-derive.test.ts): a tool an
// MCP entry exposes through `*` is contracted by its host_tools_listed record and labelled as
// its entry's unnamed tools, and policy.rederived decides its call with that contract; an
// observation of the image's own files is exposed but never joins the context.
import { describe, expect, it } from 'vitest';
import { argsDigest } from '../../src/mediator/mediator.js';
import { influenceDerivedCheck } from '../../src/evidence/audit/checks-cfc-derive.js';
import { policyDerivedCheck } from '../../src/evidence/audit/checks-policy.js';
import { mediationOf } from '../../src/evidence/audit/decision-inputs.js';
import type { RunEvidence } from '../../src/evidence/audit/run-evidence.js';
import {
  cleanEvents,
  decision,
  evidenceOf,
  influence,
  snapshotCfc,
  snapshotOf,
  type Ev,
} from './cfc-audit-fixture.js';

const UNNAMED = {
  result: { confidentiality: ['tracker'], integrity: [] },
  clearance: [],
  requires: [],
  readsBeforeWrite: false,
  declassifies: false,
};
const mediation = {
  facts: {
    mode: 'run',
    workspaceMode: 'direct',
    network: 'disabled',
    rwMounts: false,
    mountChannel: null,
    fromPlan: false,
  },
  tools: [],
  unnamedMcpLabels: { tracker: UNNAMED },
};
const listed: Ev = {
  type: 'host_tools_listed',
  data: {
    tool: 'tracker',
    listed: 1,
    exposed: [
      {
        name: 'mcp__tracker__close',
        serverName: 'close',
        classified: false,
        riskClass: 'write_external',
        sideEffectClass: 'external_commitment',
        resourceScope: 'external',
        permissionPolicy: 'approval_required',
      },
    ],
  },
};

function run(events: Ev[], extra: Record<string, unknown> = {}): RunEvidence {
  return evidenceOf(events, {
    snapshot: snapshotOf(snapshotCfc('disabled', { promptCapture: null }), {
      mediation,
      profile: { resolved: { policy: [] } },
      ...extra,
    }),
  });
}

const requested: Ev = {
  type: 'tool_requested',
  data: { callId: 'call-0001', toolUseId: 'tu-1', tool: 'mcp__tracker__close', input: '{}' },
};
const decided = (value: string, rule: string, reason: string): Ev => {
  const d = decision('call-0001', 'mcp__tracker__close', value, rule);
  return {
    ...d,
    data: {
      ...d.data,
      risk_class: 'write_external',
      side_effect_class: 'external_commitment',
      resource_scope: 'external',
      reason,
      args_digest: argsDigest('mcp__tracker__close', {}),
    },
  };
};

describe("an MCP tool an entry's `*` exposes", () => {
  it('is contracted by its listing and labelled as its entry says', () => {
    const m = mediationOf(run([listed]));
    expect(m !== undefined && !('problem' in m) && m.tools.get('mcp__tracker__close')).toEqual({
      name: 'mcp__tracker__close',
      executor: 'host',
      riskClass: 'write_external',
      sideEffectClass: 'external_commitment',
      resourceScope: 'external',
      permissionPolicy: 'approval_required',
      cfc: UNNAMED,
    });
  });

  it('its decision is decided again with that contract: approval_required, and allow fails', () => {
    const asked = decided(
      'approval_required',
      'contract:mcp__tracker__close',
      'mcp__tracker__close declares permission_policy approval_required',
    );
    expect(policyDerivedCheck.run({ run: run([listed, requested, asked]) })).toMatchObject({
      verdict: 'pass',
    });
    const allowed = decided('allow', 'default:write_external', 'forged');
    expect(policyDerivedCheck.run({ run: run([listed, requested, allowed]) }).where).toEqual([
      'events.jsonl:3 (seq 3 permission_decision): call-0001 allow under default:write_external, decided again approval_required under contract:mcp__tracker__close',
    ]);
    // Not listed: the decision names a tool the run never had.
    expect(policyDerivedCheck.run({ run: run([requested, asked]) }).where).toEqual([
      "events.jsonl:2 (seq 2 permission_decision): call-0001: mcp__tracker__close is not on the run's recorded surface",
    ]);
  });

  it('a run with decisions and no mediation record fails: its decisions cannot be proved', () => {
    const asked = decided('approval_required', 'r', 'r');
    expect(
      policyDerivedCheck.run({ run: run([listed, requested, asked], { mediation: undefined }) }),
    ).toMatchObject({ verdict: 'fail', where: ['snapshot.json mediation: missing'] });
  });
});

describe("the image's own files", () => {
  it('are exposed, recorded, and never joined into the context', () => {
    const L = (c: string[], i: string[]) => ({ confidentiality: c, integrity: i });
    const capture = cleanEvents()[0] as Ev;
    const direct = (n: number) => influence(n, L([], ['prompt:direct']), 'capture-1');
    const image: Ev = {
      type: 'cfc_label',
      data: { callId: 'call-0001', source: 'image', label: L([], []), disposition: 'exposed' },
    };
    // Joined, the image's label (no integrity) would take prompt:direct away.
    const ok = evidenceOf([capture, direct(1), image, direct(2)], { snapshot: snapshotOf() });
    expect(influenceDerivedCheck.run({ run: ok })).toMatchObject({ verdict: 'pass' });
    // The same label from a mount joins: the next influence must then have lost it.
    const mount = { ...image, data: { ...image.data, source: 'mount /workspace' } };
    const joined = evidenceOf([capture, direct(1), mount, direct(2)], { snapshot: snapshotOf() });
    expect(influenceDerivedCheck.run({ run: joined }).where).toEqual([
      'events.jsonl:4 (seq 4 cfc_influence): influence {"confidentiality":[],"integrity":["prompt:direct"]}, the log implies {"confidentiality":[],"integrity":[]}',
    ]);
  });
});
