// The class: evidence a sandbox can make cfh write without a bound (AH-CONT-4, AH-ART-1).
// Repeats aggregate into counts, written events are rate-bound and capped per run, and
// what is not written one by one is summarised; every attempt is accounted for.
import { describe, expect, it } from 'vitest';
import type { EgressEvent } from '../../src/network/egress-event.js';
import {
  EGRESS_EVIDENCE_BOUND,
  EgressEvidence,
  type EgressSummary,
  type EvidenceBound,
  type RepeatedEgress,
} from '../../src/network/egress-evidence.js';
import { eventDataIssues } from '../../src/evidence/schema/registry.js';

function attempt(
  name: string,
  at: number,
  reason: EgressEvent['reason'] = 'dns-refused',
): EgressEvent {
  return {
    protocol: 'dns',
    via: 'resolver',
    name,
    port: 53,
    queryType: 'A',
    allowed: false,
    reason,
    bytesOut: 0,
    bytesIn: 0,
    startedAt: new Date(at).toISOString(),
    durationMs: 0,
  };
}

function harness(bound: EvidenceBound = EGRESS_EVIDENCE_BOUND) {
  let t = 1_000_000;
  const written: (EgressEvent | RepeatedEgress)[] = [];
  const summaries: EgressSummary[] = [];
  const evidence = new EgressEvidence(
    {
      egress: (e) => written.push(e),
      summary: (s) => summaries.push(s),
    },
    bound,
    () => t,
  );
  const accounted = (): number =>
    written.reduce((n, e) => n + ('count' in e ? e.count : 1), 0) +
    summaries.reduce((n, s) => n + s.attempts, 0);
  return {
    evidence,
    written,
    summaries,
    accounted,
    advance: (ms: number) => (t += ms),
    now: () => t,
  };
}

describe('egress evidence is bounded', () => {
  it('identical attempts in a loop are one event and a count per window', () => {
    const h = harness();
    // 20,000 identical refusals over 10 s (one each 0.5 ms).
    for (let i = 0; i < 20_000; i++) {
      h.evidence.record(attempt('loop.test', h.now()));
      h.advance(0.5);
    }
    h.evidence.close();
    expect(h.written.length).toBeLessThanOrEqual(2 * 11);
    expect(h.summaries).toEqual([]);
    expect(h.accounted()).toBe(20_000);
    const repeated = h.written.filter((e): e is RepeatedEgress => 'count' in e);
    expect(repeated.length).toBeGreaterThan(0);
    for (const e of [...h.written])
      expect(eventDataIssues('egress', { ...e }), JSON.stringify(e)).toEqual([]);
  });

  it('distinct attempts are rate-bound, and the rest summarised per reason', () => {
    const h = harness();
    // 50,000 distinct names in 5 s: a DNS tunnel's loop.
    for (let i = 0; i < 50_000; i++) {
      h.evidence.record(
        attempt(`n${i}.x.test`, h.now(), i % 2 === 0 ? 'dns-refused' : 'invalid-name'),
      );
      h.advance(0.1);
    }
    h.evidence.close();
    const b = EGRESS_EVIDENCE_BOUND;
    expect(h.written.length).toBeLessThanOrEqual(b.burst + b.perSecond * 5 + 1);
    expect(h.summaries.length).toBeGreaterThan(0);
    expect(h.summaries.length).toBeLessThanOrEqual(5_000 / b.summaryIntervalMs + 2);
    expect(h.summaries.at(-1)?.final).toBe(true);
    expect(h.accounted()).toBe(50_000);
    const reasons = new Set(h.summaries.flatMap((s) => s.outcomes.map((o) => o.reason)));
    expect([...reasons].sort()).toEqual(['dns-refused', 'invalid-name']);
    for (const s of h.summaries)
      expect(eventDataIssues('egress_summarised', { ...s, outcomes: [...s.outcomes] })).toEqual([]);
  });

  it('the run cap holds whatever the rate allows, and the summary says it was reached', () => {
    const h = harness({ ...EGRESS_EVIDENCE_BOUND, maxEvents: 100, perSecond: 10_000 });
    for (let i = 0; i < 5_000; i++) {
      h.evidence.record(attempt(`c${i}.test`, h.now()));
      h.advance(10);
    }
    h.evidence.close();
    expect(h.written.length).toBe(100);
    expect(h.summaries.every((s) => s.capReached)).toBe(true);
    expect(h.accounted()).toBe(5_000);
  });

  it('repeats held at close are written: nothing is lost', () => {
    const h = harness();
    h.evidence.record(attempt('a.test', h.now()));
    h.evidence.record(attempt('a.test', h.now()));
    h.evidence.record(attempt('a.test', h.now()));
    h.evidence.close();
    expect(h.written).toHaveLength(2);
    expect(h.written[1]).toMatchObject({ name: 'a.test', count: 2 });
  });
});
