// lifecycle.pool (CFH-POOL-1) on synthetic evidence: passes on what a pooled per-call run
// writes, and each seeded violation (a container handed out twice, a call in a container an
// earlier call used, a container made for another spec, handed out before it was ready, a
// call in a pooled container never handed out, a pooled container never removed) fails it
// with the place. A real pooled run passes it in integration/tool-pool.test.ts.
import { describe, expect, it } from 'vitest';
import { poolCheck } from '../../src/evidence/audit/checks-pool.js';
import { parseEvents, type RunEvidence } from '../../src/evidence/audit/run-evidence.js';

const RUN_ID = '20260101T000000Z-0123abcd';
const none = { present: false, value: undefined } as const;
const SPEC = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);

type Ev = { type: string; data: Record<string, unknown> };

function evidence(events: Ev[], lifetime = 'per-call'): RunEvidence {
  const body = events
    .map((e, i) => JSON.stringify({ seq: i + 1, type: e.type, data: e.data }))
    .join('\n');
  const { events: loaded, badLines } = parseEvents(body);
  expect(badLines).toEqual([]);
  const snapshot = {
    toolContainer: {
      lifetime,
      name: `cfh-tools-${RUN_ID}`,
      fileToolName: `cfh-files-${RUN_ID}`,
      timeoutCapSeconds: null,
      pool:
        lifetime === 'per-call'
          ? { size: 2, kinds: [{ kind: 'workload', specDigest: SPEC }] }
          : null,
    },
  };
  return {
    dir: `/runs/${RUN_ID}`,
    runId: RUN_ID,
    eventLog: { present: true },
    eventsBody: body,
    events: loaded,
    badLines,
    snapshot: { present: true, value: snapshot },
    report: none,
    state: none,
    signature: none,
    transcript: undefined,
    files: [],
    listProblems: [],
    locked: false,
  };
}

const container = (n: number) => ({
  containerId: `c${n}`.padEnd(64, '0'),
  name: `cfh-tools-${RUN_ID}-c${n}`,
  kind: 'workload',
  lifetime: 'per-call',
});
const facts = (specDigest = SPEC) => ({
  specDigest,
  madeAt: '2026-01-01T00:00:00.000Z',
  readyMs: 200,
});
const started = (n: number): Ev => ({ type: 'tool_container_started', data: container(n) });
const pooled = (n: number, digest = SPEC): Ev => ({
  type: 'tool_container_pooled',
  data: { ...container(n), ...facts(digest) },
});
const taken = (n: number): Ev => ({
  type: 'tool_container_taken',
  data: { ...container(n), ...facts(), idleMs: 5, waitedMs: 0, unused: true },
});
const removed = (n: number): Ev => ({ type: 'tool_container_removed', data: container(n) });
const executed = (call: number, n: number): Ev => ({
  type: 'tool_executed',
  data: {
    callId: `call-000${call}`,
    toolUseId: `t${call}`,
    tool: 'exec',
    status: 'success',
    exitCode: 0,
    durationMs: 80,
    containerId: container(n).containerId,
    attempts: 1,
    outputs: [],
  },
});
const made = (n: number): Ev[] => [started(n), pooled(n)];

/** Two calls, each in its own pooled container, a third left warm: all removed. */
const GOOD: Ev[] = [
  ...made(1),
  ...made(2),
  taken(1),
  ...made(3),
  executed(1, 1),
  removed(1),
  taken(2),
  executed(2, 2),
  removed(2),
  removed(3),
];

const run = (events: Ev[], lifetime?: string) => poolCheck.run({ run: evidence(events, lifetime) });

describe('lifecycle.pool (CFH-POOL-1)', () => {
  it('passes on a pooled run; not applicable under per-run', () => {
    expect(run(GOOD)).toMatchObject({ verdict: 'pass' });
    expect(run([], 'per-run').verdict).toBe('not-applicable');
  });

  const violations: [string, Ev[], RegExp][] = [
    [
      'a container handed out twice',
      [...GOOD.slice(0, -1), taken(1), removed(3)],
      /seq 13 tool_container_taken\): .*-c1 handed out a second time/,
    ],
    [
      'a call in a container an earlier call used',
      GOOD.map((e, i) => (i === 10 ? executed(2, 1) : e)),
      /seq 11 tool_executed\): call-0002 ran in a container an earlier call used/,
    ],
    [
      'a container made for another spec',
      GOOD.map((e, i) => (i === 3 ? pooled(2, OTHER) : e)),
      /seq 4 tool_container_pooled\): .*-c2 made for spec bbbbbbbbbbbb, not the snapshot's workload spec/,
    ],
    [
      'handed out before it was ready',
      [started(1), taken(1), pooled(1), executed(1, 1), removed(1)],
      /seq 2 tool_container_taken\): .*-c1 handed out before it was recorded ready/,
    ],
    [
      'a call in a pooled container never handed out',
      GOOD.filter((_, i) => i !== 9),
      /call-0002 ran in pooled container c20000000000 that was never handed out/,
    ],
    [
      'a pooled container never removed',
      GOOD.slice(0, -1),
      /seq 7 tool_container_pooled\): pooled container .*-c3 never recorded removed/,
    ],
  ];

  it.each(violations)('fails on %s, with the place', (_, events, where) => {
    const r = run(events);
    expect(r.verdict).toBe('fail');
    expect((r.where ?? []).join('\n')).toMatch(where);
  });
});
