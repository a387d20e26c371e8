// report.json's `cfc` is counted from the run's events (AH-CFC-14): the flows by verdict,
// endorsements once per call, handles minted (not resolved), opaque observations; enforced
// only in the two enforce modes, never observe (AH-CFC-15).
import { describe, expect, it } from 'vitest';
import {
  CfcTally,
  cfcModeOfSnapshot,
  isEnforcedMode,
  summarizeCfc,
} from '../../src/evidence/cfc-summary.js';
import { cleanEvents, flow, snapshotCfc } from './cfc-audit-fixture.js';

describe('summarizeCfc', () => {
  it('counts the clean run: 2 allowed, 1 denied and endorsed, 1 handle, 1 opaque', () => {
    expect(summarizeCfc('enforce-explicit', cleanEvents())).toEqual({
      mode: 'enforce-explicit',
      enforced: true,
      flows: { allowed: 2, denied: 1, wouldDeny: 0, endorsed: 1 },
      handles: 1,
      opaque: 1,
      declassified: 0,
      carried: 0,
    });
  });

  it('counts would_deny, an `endorsed` verdict once with its endorsement, and skips bad data', () => {
    const events = [
      flow('call-0001', 'exec', { verdict: 'would_deny', mode: 'observe' }),
      flow('call-0002', 'exec', { verdict: 'endorsed' }),
      { type: 'cfc_endorsement', data: { ...cleanEvents()[23]?.data, callId: 'call-0002' } },
      { type: 'cfc_flow', data: { verdict: 'allow' } },
      { type: 'cfc_label', data: { disposition: 'opaque' } },
    ];
    expect(summarizeCfc('observe', events)).toEqual({
      mode: 'observe',
      enforced: false,
      flows: { allowed: 0, denied: 0, wouldDeny: 1, endorsed: 1 },
      handles: 0,
      opaque: 0,
      declassified: 0,
      carried: 0,
    });
  });

  it('enforced only for the enforce modes', () => {
    expect(
      (['disabled', 'observe', 'enforce-explicit', 'enforce-strict'] as const).map((m) =>
        isEnforcedMode(m),
      ),
    ).toEqual([false, false, true, true]);
  });

  it('the snapshot mode, disabled when the snapshot has none', () => {
    expect(cfcModeOfSnapshot({ cfc: snapshotCfc('observe') })).toBe('observe');
    expect(cfcModeOfSnapshot({})).toBe('disabled');
    expect(cfcModeOfSnapshot({ cfc: { mode: 'bogus' } })).toBe('disabled');
  });

  it('the tally keeps only the CFC events appended, and summarises them', () => {
    const tally = new CfcTally();
    for (const e of cleanEvents()) tally.listener('', e);
    expect(tally.summary('enforce-strict')).toEqual({
      ...summarizeCfc('enforce-strict', cleanEvents()),
    });
  });
});

describe('runs show: the cfc line', () => {
  it('says the mode, whether it is enforcement, and the counts', async () => {
    const { cfcLine } = await import('../../src/cli/commands/runs.js');
    const report = { cfc: summarizeCfc('enforce-explicit', cleanEvents()) };
    expect(cfcLine({}, report)).toBe(
      'enforce-explicit (enforced); flows 2 allowed, 1 denied, 0 would-deny, 1 endorsed; 1 handle(s), 1 opaque',
    );
    expect(cfcLine({}, { cfc: summarizeCfc('observe', []) })).toMatch(
      /^observe \(diagnostic, not enforcement\)/,
    );
    expect(cfcLine({ cfc: snapshotCfc('observe') }, {})).toBe(
      'observe (snapshot; the report records no cfc)',
    );
    expect(cfcLine({}, undefined)).toBe('not recorded (a run from before CFC)');
  });

  it('names a mount whose label what earlier runs wrote raised', async () => {
    const { cfcLine } = await import('../../src/cli/commands/runs.js');
    const snap = snapshotCfc('enforce-explicit');
    const raised = {
      ...snap,
      mounts: snap.mounts.map((m, i) =>
        i === 0 ? { ...m, labelSource: 'written', writtenBy: ['run-1'] } : m,
      ),
    };
    expect(
      cfcLine({ cfc: raised }, { cfc: summarizeCfc('enforce-explicit', cleanEvents()) }),
    ).toMatch(/; raised by what earlier runs wrote: \/workspace \(cfh labels\)$/);
  });
});
