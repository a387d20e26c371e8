// The audit checks whose evidence cfh does not write yet (approvals), on
// synthetic evidence: each says not-applicable while its evidence is absent, passes when
// it holds and fails, with the place, when it does not. The checks over today's evidence
// are proved on real runs (integration/audit.test.ts); the CFC checks in cfc-audit-*.test.ts.
import { describe, expect, it } from 'vitest';
import { approvalsCheck, egressCheck } from '../../src/evidence/audit/checks-run.js';
import { parseEvents, type RunEvidence } from '../../src/evidence/audit/run-evidence.js';

const RUN_ID = '20260101T000000Z-0123abcd';
const none = { present: false, value: undefined } as const;

function evidence(
  events: { type: string; data: Record<string, unknown> }[],
  docs: { snapshot?: unknown; report?: unknown } = {},
): RunEvidence {
  const body = events
    .map((e, i) => JSON.stringify({ seq: i + 1, type: e.type, data: e.data }))
    .join('\n');
  const { events: loaded, badLines } = parseEvents(body);
  return {
    dir: `/runs/${RUN_ID}`,
    runId: RUN_ID,
    eventLog: { present: true },
    eventsBody: body,
    events: loaded,
    badLines,
    snapshot: docs.snapshot === undefined ? none : { present: true, value: docs.snapshot },
    report: docs.report === undefined ? none : { present: true, value: docs.report },
    state: none,
    signature: none,
    transcript: undefined,
    files: [],
    listProblems: [],
    locked: false,
  };
}

const DIGEST = `sha256:${'a'.repeat(64)}`;
const asked = (callId: string) => ({
  type: 'approval_requested',
  data: {
    callId,
    tool: 'exec',
    rule: 'r',
    decision: 'approval_required',
    argsDigest: DIGEST,
    approvers: [],
  },
});
const answered = (callId: string, argsDigest = DIGEST) => ({
  type: 'approval_received',
  data: { callId, rule: 'r', argsDigest, outcome: 'granted', approver: null, waitedMs: 1 },
});

describe('approvals.paired (AHGE-APPROVAL-1)', () => {
  it('not applicable without approvals; pass when each request has one answer after it', () => {
    expect(approvalsCheck.run({ run: evidence([]) }).verdict).toBe('not-applicable');
    const paired = evidence([asked('call-0001'), answered('call-0001')]);
    expect(approvalsCheck.run({ run: paired }).verdict).toBe('pass');
  });

  it('fails on an unanswered request and on an answer nobody asked for', () => {
    const r = approvalsCheck.run({
      run: evidence([asked('call-0001'), answered('call-0002')]),
    });
    expect(r.verdict).toBe('fail');
    expect(r.where).toEqual([
      'events.jsonl:1 (seq 1 approval_requested): 0 answers to the approval asked for call-0001',
      'events.jsonl:2 (seq 2 approval_received): an approval nobody asked for (call-0002)',
    ]);
  });
});

describe('egress.decided (AH-CONT-4): a run that ended short of its posture', () => {
  const snapshot = {
    network: {
      mode: 'allowlist',
      allow: ['127.0.0.1:9'],
      deny: [],
      enforcement: { kind: 'egress-gateway' },
    },
  };
  const finished = (status: string) => ({
    type: 'run_finished',
    data: { status, terminalReason: `${status}:x`, exitCode: status === 'completed' ? 0 : 143 },
  });
  const created = { type: 'run_created', data: {} };

  it('owes no egress_ready when it was cancelled or failed before anything started', () => {
    for (const status of ['cancelled', 'failed']) {
      const r = egressCheck.run({ run: evidence([created, finished(status)], { snapshot }) });
      expect(r.verdict).toBe('not-applicable');
    }
  });

  it('still fails a completed run without it, and one whose workload started', () => {
    const completed = egressCheck.run({
      run: evidence([created, finished('completed')], { snapshot }),
    });
    expect(completed.verdict).toBe('fail');
    const started = egressCheck.run({
      run: evidence(
        [created, { type: 'tool_container_started', data: {} }, finished('cancelled')],
        { snapshot },
      ),
    });
    expect(started.verdict).toBe('fail');
    expect(started.where).toEqual([
      '0 egress_ready events (one expected for allowlist)',
      'events.jsonl:2 (seq 2 tool_container_started): the workload started before the egress posture was ready',
    ]);
  });
});
