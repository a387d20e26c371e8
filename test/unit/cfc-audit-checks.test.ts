// The CFC audit checks on synthetic evidence (cfc-audit-fixture.ts): each passes on the
// clean enforce-explicit run and fails, naming the place, on one seeded violation.
import { describe, expect, it } from 'vitest';
import type { Check } from '../../src/evidence/audit/check.js';
import {
  cfcModeCheck,
  flowGatedCheck,
  observationsLabelledCheck,
} from '../../src/evidence/audit/checks-cfc.js';
import {
  evidenceBoundaryCheck,
  handlesBeforePolicyCheck,
  promptAuthorityCheck,
} from '../../src/evidence/audit/checks-cfc-values.js';
import {
  flowDerivedCheck,
  influenceDerivedCheck,
} from '../../src/evidence/audit/checks-cfc-derive.js';
import type { RunEvidence } from '../../src/evidence/audit/run-evidence.js';
import {
  L0,
  cleanEvents,
  cleanRun,
  evidenceOf,
  flow,
  handleEv,
  HELD_FILE,
  influence,
  labelled,
  snapshotCfc,
  snapshotOf,
  type Ev,
} from './cfc-audit-fixture.js';

const verdict = (check: Check, run: RunEvidence) => check.run({ run });
const CHECKS = [
  cfcModeCheck,
  flowGatedCheck,
  observationsLabelledCheck,
  handlesBeforePolicyCheck,
  promptAuthorityCheck,
  evidenceBoundaryCheck,
];
/** The clean events with the one at `index` (found by predicate) removed or replaced. */
function edit(find: (e: Ev) => boolean, replace?: Ev | Ev[]): Ev[] {
  const events = cleanEvents();
  const i = events.findIndex(find);
  if (i < 0) throw new Error('no such event in the fixture');
  events.splice(
    i,
    1,
    ...(replace === undefined ? [] : Array.isArray(replace) ? replace : [replace]),
  );
  return events;
}
const is = (type: string, callId?: string) => (e: Ev) =>
  e.type === type &&
  (callId === undefined || e.data.callId === callId || e.data.call_id === callId);

describe('the clean enforce-explicit run', () => {
  it('passes every CFC check', () => {
    const run = cleanRun();
    for (const c of CHECKS) expect(verdict(c, run), c.id).toMatchObject({ verdict: 'pass' });
  });

  it('a run recorded before CFC is not applicable to each; a disabled run records nothing', () => {
    const before = evidenceOf([], { snapshot: snapshotOf(null), report: {} });
    for (const c of CHECKS) expect(verdict(c, before).verdict, c.id).toBe('not-applicable');
    const disabled = cleanRun({
      events: [],
      snapshot: snapshotOf(snapshotCfc('disabled', { promptCapture: null })),
      mode: 'disabled',
    });
    expect(verdict(cfcModeCheck, disabled).verdict).toBe('pass');
    for (const c of CHECKS.slice(1))
      expect(verdict(c, disabled).verdict, c.id).toBe('not-applicable');
  });
});

describe('cfc.mode-recorded (AH-CFC-14/15)', () => {
  it('fails a run with CFC in its report and no mode in its snapshot: "mode missing"', () => {
    const r = verdict(cfcModeCheck, cleanRun({ snapshot: snapshotOf(null) }));
    expect(r.verdict).toBe('fail');
    expect(r.detail).toMatch(/mode missing/);
  });

  it('fails when the report disagrees on the mode, on enforced, or on the counts', () => {
    const run = cleanRun();
    const rep = (cfc: object) =>
      evidenceOf(cleanEvents(), { snapshot: run.snapshot.value, report: { cfc } });
    const good = (cleanRun().report.value as { cfc: Record<string, unknown> }).cfc;
    expect(verdict(cfcModeCheck, rep({ ...good, mode: 'enforce-strict' })).where?.[0]).toMatch(
      /cfc.mode: enforce-strict/,
    );
    expect(verdict(cfcModeCheck, rep({ ...good, enforced: false })).where?.[0]).toMatch(
      /enforced: false/,
    );
    expect(verdict(cfcModeCheck, rep({ ...good, handles: 0 })).where?.[0]).toMatch(
      /the events count/,
    );
    expect(
      verdict(cfcModeCheck, evidenceOf(cleanEvents(), { snapshot: run.snapshot.value, report: {} }))
        .verdict,
    ).toBe('fail');
  });

  it('fails observe without reduced assurance, and passes it with the cfc-observe reason', () => {
    const snap = (assurance: object) => snapshotOf(snapshotCfc('observe'), { assurance });
    const standard = cleanRun({
      events: [],
      snapshot: snap({ level: 'standard', notes: [] }),
      mode: 'observe',
    });
    expect(verdict(cfcModeCheck, standard).where?.[0]).toMatch(/not reduced/);
    const noReason = cleanRun({
      events: [],
      snapshot: snap({
        level: 'reduced',
        notes: ['n'],
        reasons: [{ code: 'root-user', detail: 'd' }],
      }),
      mode: 'observe',
    });
    expect(verdict(cfcModeCheck, noReason).where?.[0]).toMatch(/cfc-observe/);
    const reduced = cleanRun({
      events: [],
      snapshot: snap({
        level: 'reduced',
        notes: ['n'],
        reasons: [{ code: 'cfc-observe', detail: 'd' }],
      }),
      mode: 'observe',
    });
    expect(verdict(cfcModeCheck, reduced).verdict).toBe('pass');
  });

  it('fails a disabled run that records flow decisions, and a fallback without an owner', () => {
    const disabled = cleanRun({ snapshot: snapshotOf(snapshotCfc('disabled')), mode: 'disabled' });
    expect(verdict(cfcModeCheck, disabled).where?.[0]).toMatch(/CFC disabled, yet recorded/);
    const fallback = snapshotCfc('enforce-explicit', {
      fallback: { from: 'enforce-strict', to: 'enforce-explicit', owner: '', retireWhen: '' },
    });
    expect(verdict(cfcModeCheck, cleanRun({ snapshot: snapshotOf(fallback) })).where?.[0]).toMatch(
      /no owner/,
    );
  });
});

describe('cfc.flow-gated (AH-CFC-9/11)', () => {
  it('fails a denied flow that ran without an endorsement: "allowed while its influence lacked"', () => {
    const events = cleanEvents().filter((e) => e.type !== 'cfc_endorsement');
    const r = verdict(flowGatedCheck, cleanRun({ events }));
    expect(r.verdict).toBe('fail');
    expect(r.where?.[0]).toMatch(
      /call-0003 \(exec\) was allowed while its influence lacked integrity \[prompt:direct\] and clearance for \[secret\]/,
    );
  });

  it('fails an endorsement that covers only part of the violation', () => {
    const events = edit((e) => e.type === 'cfc_endorsement' && e.data.kind === 'declassify');
    expect(verdict(flowGatedCheck, cleanRun({ events })).where?.[0]).toMatch(
      /lacked .*clearance for \[secret\]/,
    );
  });

  it('fails a call that ran without a flow decision, or with one after policy', () => {
    const missing = edit(is('cfc_flow', 'call-0001'));
    // Dropped: its decision has no flow before it, and it ran without one.
    expect(verdict(flowGatedCheck, cleanRun({ events: missing })).where).toEqual([
      'events.jsonl:5 (seq 5 permission_decision): call-0001 (read_file) was decided with no flow decision before it',
      'events.jsonl:9 (seq 9 tool_executed): call-0001 ran without a flow decision',
    ]);
    const events = cleanEvents();
    const i = events.findIndex(is('cfc_flow', 'call-0001'));
    const [moved] = events.splice(i, 1);
    if (moved === undefined) throw new Error('fixture');
    events.splice(i + 1, 0, moved); // after its permission_decision
    expect(verdict(flowGatedCheck, cleanRun({ events })).where?.join('\n')).toMatch(
      /after its permission_decision/,
    );
  });

  it('fails an authority that names no capture, and an influence weaker than the context', () => {
    const forged = edit(
      is('cfc_flow', 'call-0001'),
      flow('call-0001', 'read_file', {
        influence: L0([], ['prompt:direct']),
        authority: 'capture-9',
      }),
    );
    expect(verdict(flowGatedCheck, cleanRun({ events: forged })).where?.[0]).toMatch(
      /capture-9 names no prompt_captured/,
    );
    const weaker = edit(
      is('cfc_flow', 'call-0001'),
      flow('call-0001', 'read_file', {
        influence: L0([], ['prompt:direct', 'ops']),
        authority: 'capture-1',
      }),
    );
    // The influence a flow was judged with is the context the log implies (cfc.influence-derived).
    expect(verdict(influenceDerivedCheck, cleanRun()).verdict).toBe('pass');
    expect(verdict(influenceDerivedCheck, cleanRun({ events: weaker })).where).toEqual([
      'events.jsonl:5 (seq 5 cfc_flow): influence {"confidentiality":[],"integrity":["prompt:direct","ops"]}, the log implies {"confidentiality":[],"integrity":["prompt:direct"]}',
    ]);
  });

  it('fails an endorsement no granted approval precedes (the model never endorses)', () => {
    const events = edit(is('approval_received', 'call-0003'));
    expect(verdict(flowGatedCheck, cleanRun({ events })).where?.[0]).toMatch(
      /no granted approval precedes/,
    );
  });
});

describe('cfc.observations-labelled (AH-CFC-6/7)', () => {
  it('fails an observation exposed to the next turn without a label', () => {
    const events = edit(is('cfc_label', 'call-0001'));
    const r = verdict(observationsLabelledCheck, cleanRun({ events }));
    expect(r.verdict).toBe('fail');
    expect(r.where?.[0]).toMatch(/call-0001's observation reached the model .* without a label/);
  });

  it('fails an exposed secret beyond modelClearance, and an opaque label with no handle', () => {
    const exposed = edit(is('cfc_label', 'call-0002'), labelled('call-0002', L0(['secret'])));
    expect(
      verdict(observationsLabelledCheck, cleanRun({ events: exposed })).where?.join('\n'),
    ).toMatch(/exposed \[secret\], beyond modelClearance \[\]/);
    const opaque = edit(is('cfc_handle'));
    expect(verdict(observationsLabelledCheck, cleanRun({ events: opaque })).where?.[0]).toMatch(
      /opaque, yet no handle minted/,
    );
  });

  it('fails an influence that drops an atom or does not join an exposed label', () => {
    const events = edit(
      is('cfc_influence'),
      influence(1, L0(['x'], ['prompt:direct']), 'capture-1'),
    );
    expect(verdict(observationsLabelledCheck, cleanRun({ events })).where?.[0]).toMatch(
      /dropped atoms/,
    );
    const unjoined = edit(
      (e) => e.type === 'cfc_influence' && e.data.turn === 2,
      influence(2, L0([], ['prompt:direct'])),
    );
    expect(
      verdict(observationsLabelledCheck, cleanRun({ events: unjoined })).where?.join('\n'),
    ).toMatch(/does not join the label exposed/);
  });

  it('under observe an unlabelled call is recorded, not failed', () => {
    const events = edit(is('cfc_label', 'call-0001'));
    const observe = snapshotOf(snapshotCfc('observe'));
    expect(
      verdict(observationsLabelledCheck, cleanRun({ events, snapshot: observe, mode: 'observe' }))
        .verdict,
    ).toBe('pass');
  });
});

describe('cfc.handles-before-policy (AH-CFC-18)', () => {
  it("fails a handle resolved after its call's permission_decision", () => {
    const events = cleanEvents();
    const i = events.findIndex((e) => e.type === 'cfc_handle' && e.data.action === 'resolved');
    const [moved] = events.splice(i, 1);
    if (moved === undefined) throw new Error('fixture');
    const d = events.findIndex(is('permission_decision', 'call-0003'));
    events.splice(d + 1, 0, moved);
    const r = verdict(handlesBeforePolicyCheck, cleanRun({ events }));
    expect(r.verdict).toBe('fail');
    expect(r.where?.join('\n')).toMatch(/resolved after call-0003's permission_decision/);
  });

  it('fails a handle resolved that was never minted, and one whose label the flow dropped', () => {
    const events = edit((e) => e.type === 'cfc_handle' && e.data.action === 'minted');
    expect(verdict(handlesBeforePolicyCheck, cleanRun({ events })).where?.[0]).toMatch(
      /cfh-val:abcdefghijklmnopqrst resolved for call-0003, yet never minted/,
    );
    const relabelled = edit(is('cfc_handle', 'call-0003'), handleEv('call-0003', 'resolved', L0()));
    expect(verdict(handlesBeforePolicyCheck, cleanRun({ events: relabelled })).where?.[0]).toMatch(
      /another label than held/,
    );
  });
});

describe('cfc.prompt-authority (AH-CFC-3/4/5)', () => {
  const capture = (sha256: string): Ev => ({
    type: 'prompt_captured',
    data: {
      captureId: 'capture-1',
      kernel: 'cfh',
      subject: { uid: 1000, user: 'op', vouched: false },
      surface: 'cli',
      slot: 'prompt',
      sha256,
      chars: 24,
    },
  });
  it('fails a capture of another value than the direct command (a plan, a context slot)', () => {
    const events = edit(is('prompt_captured'), capture('d'.repeat(64)));
    const r = verdict(promptAuthorityCheck, cleanRun({ events }));
    expect(r.verdict).toBe('fail');
    expect(r.where).toContain(
      'events.jsonl:1 (seq 1 prompt_captured): captured a value other than the direct command the snapshot digests',
    );
  });

  it('fails prompt:direct with no capture at all', () => {
    const events = edit(is('prompt_captured'));
    const snapshot = snapshotOf(snapshotCfc('enforce-explicit', { promptCapture: null }));
    expect(verdict(promptAuthorityCheck, cleanRun({ events, snapshot })).where?.join('\n')).toMatch(
      /carries prompt:direct with no capture/,
    );
  });

  it("fails a capture whose subject is not the run's caller", () => {
    const events = edit(is('prompt_captured'), {
      type: 'prompt_captured',
      data: {
        ...capture('x').data,
        sha256: cleanEvents()[0]?.data.sha256,
        subject: { uid: 0, user: 'root', vouched: false },
      },
    });
    expect(verdict(promptAuthorityCheck, cleanRun({ events })).where?.[0]).toMatch(
      /subject uid 0, the run's caller is uid 1000/,
    );
  });
});

describe('cfc.evidence-boundary (AH-CFC-16/17/19)', () => {
  it('fails a handle event carrying its value, and a handle table kept in the run', () => {
    const events = edit(is('cfc_handle', 'call-0002'), {
      type: 'cfc_handle',
      data: { ...handleEv('call-0002', 'minted').data, value: 'hunter2' },
    });
    const r = verdict(evidenceBoundaryCheck, cleanRun({ events }));
    expect(r.verdict).toBe('fail');
    expect(r.where?.[0]).toMatch(/carries its value/);
    const table = verdict(
      evidenceBoundaryCheck,
      cleanRun({ files: [HELD_FILE, 'outputs/handles.json'] }),
    );
    expect(table.where).toEqual(['outputs/handles.json: a handle table kept outside cfc-handles/']);
  });

  it('ignores files that only look alike elsewhere in their path', () => {
    expect(
      verdict(evidenceBoundaryCheck, cleanRun({ files: [HELD_FILE, 'outputs/call-0001-stdout'] }))
        .verdict,
    ).toBe('pass');
  });
});

describe('the checks are registered', () => {
  it('with the others, in the order cfh audit prints them', async () => {
    const { CHECKS: all } = await import('../../src/evidence/audit/checks.js');
    // The re-derivations (checks-cfc-derive.ts) follow the flow gate; their seeded
    // violations are on real runs (integration/audit-derive.test.ts).
    const ids = CHECKS.map((c) => c.id);
    ids.splice(2, 0, flowDerivedCheck.id, influenceDerivedCheck.id);
    expect(all.map((c) => c.id).filter((id) => id.startsWith('cfc.'))).toEqual(ids);
  });
});
