// The bound on what a sandbox can make cfh write about its egress (AH-CONT-4, AH-ART-1).
// Every DNS query and connection attempt is the sandbox's to repeat: one event each would
// let a loop fill the artifact root (a DNS loop wrote 82 MiB in 5 s) and make every later
// reader read it all. So:
// - identical attempts (same protocol, way, destination, decision, reason and rule) within
//   a window are one `egress` event for the first and one more with `count` for the rest;
// - written `egress` events are rate-bound (a burst, then a steady rate) and capped per run;
// - what is not written individually is counted per protocol, decision and reason, and an
//   `egress_summarised` event (at most one per interval, and a final one at close) says
//   how many, and the bound that applied. Nothing an attempt made goes unrecorded: it is an
//   event of its own, part of a repeat's count, or part of a summary's.
import type { EgressEvent } from './egress-event.js';

export interface EvidenceBound {
  /** `egress` events written per run, at most. */
  readonly maxEvents: number;
  /** Written at once before the rate applies. */
  readonly burst: number;
  readonly perSecond: number;
  /** Identical attempts within this window are one event with a count. */
  readonly repeatWindowMs: number;
  /** Summaries of what was not written, at most one per interval. */
  readonly summaryIntervalMs: number;
}

export const EGRESS_EVIDENCE_BOUND: EvidenceBound = {
  maxEvents: 10_000,
  burst: 1_000,
  perSecond: 50,
  repeatWindowMs: 1_000,
  summaryIntervalMs: 5_000,
};

export interface RepeatedEgress extends EgressEvent {
  /** How many attempts this event stands for (the first of them is its own event). */
  readonly count: number;
  readonly lastAt: string;
}

export interface SummarisedOutcome {
  readonly protocol: EgressEvent['protocol'];
  readonly allowed: boolean;
  readonly reason: EgressEvent['reason'];
  readonly count: number;
  readonly bytesOut: number;
  readonly bytesIn: number;
}

export interface EgressSummary {
  readonly bound: EvidenceBound;
  /** Why attempts were not written one by one: the rate, or the run's cap was reached. */
  readonly capReached: boolean;
  readonly from: string;
  readonly to: string;
  readonly attempts: number;
  readonly outcomes: readonly SummarisedOutcome[];
  readonly final: boolean;
}

export interface EvidenceSink {
  readonly egress: (event: EgressEvent | RepeatedEgress) => void;
  readonly summary: (summary: EgressSummary) => void;
}

interface Repeat {
  readonly first: EgressEvent;
  readonly windowEnds: number;
  count: number;
  bytesOut: number;
  bytesIn: number;
  firstAt: string;
  lastAt: string;
}

function keyOf(e: EgressEvent): string {
  return JSON.stringify([
    e.protocol,
    e.via,
    e.name,
    e.address,
    e.port,
    e.queryType,
    e.allowed,
    e.reason,
    e.rule,
  ]);
}

export class EgressEvidence {
  readonly #sink: EvidenceSink;
  readonly #bound: EvidenceBound;
  readonly #now: () => number;
  readonly #repeats = new Map<string, Repeat>();
  readonly #pending = new Map<string, SummarisedOutcome>();
  #written = 0;
  #tokens: number;
  #refilledAt: number;
  #pendingAttempts = 0;
  #pendingFrom: number | undefined;
  #lastSummary: number;
  #capReached = false;

  constructor(sink: EvidenceSink, bound = EGRESS_EVIDENCE_BOUND, now: () => number = Date.now) {
    this.#sink = sink;
    this.#bound = bound;
    this.#now = now;
    this.#tokens = bound.burst;
    this.#refilledAt = now();
    this.#lastSummary = now();
  }

  /** One attempt, as the gateway decided it. */
  record(event: EgressEvent): void {
    const now = this.#now();
    this.#expire(now, false);
    const key = keyOf(event);
    const repeat = this.#repeats.get(key);
    if (repeat !== undefined) {
      repeat.count += 1;
      repeat.bytesOut += event.bytesOut;
      repeat.bytesIn += event.bytesIn;
      repeat.lastAt = event.startedAt;
      if (repeat.count === 1) repeat.firstAt = event.startedAt;
    } else {
      if (this.#take(now)) this.#sink.egress(event);
      else this.#summarise(event, 1, event.bytesOut, event.bytesIn, now);
      this.#repeats.set(key, {
        first: event,
        windowEnds: now + this.#bound.repeatWindowMs,
        count: 0,
        bytesOut: 0,
        bytesIn: 0,
        firstAt: event.startedAt,
        lastAt: event.startedAt,
      });
    }
    this.#maybeSummary(now, false);
  }

  /** Writes what is still held (repeat counts, the last summary): no attempt is lost. */
  close(): void {
    const now = this.#now();
    this.#expire(now, true);
    this.#maybeSummary(now, true);
  }

  #expire(now: number, all: boolean): void {
    // Insertion order is window order (each ends a fixed time after it began): stop at the
    // first still open, so a flood of distinct attempts costs O(1) each, not O(held).
    for (const [key, r] of this.#repeats) {
      if (!all && r.windowEnds > now) break;
      this.#repeats.delete(key);
      if (r.count === 0) continue;
      if (this.#take(now))
        this.#sink.egress({
          ...r.first,
          startedAt: r.firstAt,
          bytesOut: r.bytesOut,
          bytesIn: r.bytesIn,
          count: r.count,
          lastAt: r.lastAt,
        });
      else this.#summarise(r.first, r.count, r.bytesOut, r.bytesIn, now);
    }
  }

  /** A token for one written event: within the run's cap and the rate. */
  #take(now: number): boolean {
    if (this.#written >= this.#bound.maxEvents) {
      this.#capReached = true;
      return false;
    }
    const b = this.#bound;
    this.#tokens = Math.min(
      b.burst,
      this.#tokens + ((now - this.#refilledAt) * b.perSecond) / 1000,
    );
    this.#refilledAt = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    this.#written += 1;
    return true;
  }

  #summarise(e: EgressEvent, count: number, bytesOut: number, bytesIn: number, now: number): void {
    const key = JSON.stringify([e.protocol, e.allowed, e.reason]);
    const had = this.#pending.get(key);
    this.#pending.set(key, {
      protocol: e.protocol,
      allowed: e.allowed,
      reason: e.reason,
      count: (had?.count ?? 0) + count,
      bytesOut: (had?.bytesOut ?? 0) + bytesOut,
      bytesIn: (had?.bytesIn ?? 0) + bytesIn,
    });
    this.#pendingAttempts += count;
    this.#pendingFrom ??= now;
  }

  #maybeSummary(now: number, final: boolean): void {
    if (this.#pendingAttempts === 0) return;
    if (!final && now - this.#lastSummary < this.#bound.summaryIntervalMs) return;
    this.#sink.summary({
      bound: this.#bound,
      capReached: this.#capReached,
      from: new Date(this.#pendingFrom ?? now).toISOString(),
      to: new Date(now).toISOString(),
      attempts: this.#pendingAttempts,
      outcomes: [...this.#pending.values()].sort((a, b) => b.count - a.count),
      final,
    });
    this.#pending.clear();
    this.#pendingAttempts = 0;
    this.#pendingFrom = undefined;
    this.#lastSummary = now;
  }
}
