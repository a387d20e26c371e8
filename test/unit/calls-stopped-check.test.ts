// lifecycle.calls-stopped (AH-LIFE-3, AH-INT-5) on synthetic evidence: passes on a call
// stopped at its deadline and one stopped by a cancellation, each recorded before its answer
// with nothing left; each seeded violation (a timeout without its stop, a stop recorded
// after the answer, a stop that left processes, a stop in another container, a stop never
// answered) fails it with the place. Real runs pass it in integration/call-stop.test.ts;
// integration/audit.test.ts seeds a violation on a real run.
import { describe, expect, it } from 'vitest';
import { callsStoppedCheck } from '../../src/evidence/audit/checks-stops.js';
import { parseEvents, type RunEvidence } from '../../src/evidence/audit/run-evidence.js';

const RUN_ID = '20260101T000000Z-0123abcd';
const none = { present: false, value: undefined } as const;
const C1 = 'c1'.padEnd(64, '0');
const C2 = 'c2'.padEnd(64, '0');

type Ev = { type: string; data: Record<string, unknown> };

function evidence(events: Ev[]): RunEvidence {
  const body = events
    .map((e, i) => JSON.stringify({ seq: i + 1, type: e.type, data: e.data }))
    .join('\n');
  const { events: loaded, badLines } = parseEvents(body);
  expect(badLines).toEqual([]);
  return {
    dir: `/runs/${RUN_ID}`,
    runId: RUN_ID,
    eventLog: { present: true },
    eventsBody: body,
    events: loaded,
    badLines,
    snapshot: none,
    report: none,
    state: none,
    signature: none,
    transcript: undefined,
    files: [],
    listProblems: [],
    locked: false,
  };
}

const ref = (n: number) => ({ callId: `call-000${n}`, toolUseId: `t${n}`, tool: 'exec' });
const executed = (n: number, status: string, containerId = C1): Ev => ({
  type: 'tool_executed',
  data: {
    ...ref(n),
    status,
    exitCode: 137,
    durationMs: 2000,
    containerId,
    attempts: 1,
    outputs: [],
  },
});
const aborted = (n: number): Ev => ({
  type: 'tool_call_aborted',
  data: { ...ref(n), reason: 'cancelled' },
});
const stopped = (n: number, reason: string, gone = true, containerId = C1): Ev => ({
  type: 'tool_call_stopped',
  data: {
    callId: `call-000${n}`,
    tool: 'exec',
    containerId,
    reason,
    method: 'session',
    session: 40 + n,
    processes: 3,
    waitedMs: 4.5,
    gone,
  },
});

/** A call stopped at its deadline, another cancelled: each stop before its answer. */
const GOOD: Ev[] = [
  stopped(1, 'timeout'),
  executed(1, 'timeout'),
  stopped(2, 'cancelled'),
  aborted(2),
];

const run = (events: Ev[]) => callsStoppedCheck.run({ run: evidence(events) });

describe('lifecycle.calls-stopped (AH-LIFE-3, AH-INT-5)', () => {
  it('passes on stops recorded before their answers; not applicable with none', () => {
    expect(run(GOOD)).toMatchObject({ verdict: 'pass' });
    expect(run([executed(1, 'success')]).verdict).toBe('not-applicable');
    // A host tool's timeout is the host-tool channel's to record.
    expect(run([executed(1, 'timeout', 'host:notify')]).verdict).toBe('not-applicable');
  });

  const violations: [string, Ev[], RegExp][] = [
    [
      'a call that timed out in its container without its stop',
      [executed(1, 'timeout')],
      /seq 1 tool_executed\): call-0001 timed out without its stop recorded before/,
    ],
    [
      'a stop recorded after the answer',
      [executed(1, 'timeout'), stopped(1, 'timeout')],
      /seq 1 tool_executed\): call-0001 was answered before its stop was recorded/,
    ],
    [
      'a stop that left processes running',
      [stopped(2, 'cancelled', false), aborted(2)],
      /seq 1 tool_call_stopped\): call-0002 was answered with processes of it still running/,
    ],
    [
      'a stop in another container than the call ran in',
      [stopped(1, 'timeout', true, C2), executed(1, 'timeout')],
      /seq 1 tool_call_stopped\): call-0001 was stopped in another container/,
    ],
    [
      'a stop never answered',
      [stopped(3, 'cancelled')],
      /seq 1 tool_call_stopped\): call-0003 was stopped and never answered/,
    ],
  ];

  it.each(violations)('fails on %s', (_name, events, where) => {
    const outcome = run(events);
    expect(outcome.verdict).toBe('fail');
    expect(JSON.stringify(outcome)).toMatch(where);
  });
});
