// A clean enforce-explicit agent run as evidence, for the CFC audit checks: the direct
// command captured, a workspace file read (exposed), a secret read (held as a handle), an
// exec that uses the handle (its flow denied, a person endorses and declassifies), and the
// influence recorded before each model turn. Each test seeds one violation into a copy.
import { createHash } from 'node:crypto';
import { parseEvents, type RunEvidence } from '../../src/evidence/audit/run-evidence.js';
import { summarizeCfc } from '../../src/evidence/cfc-summary.js';

export const RUN_ID = '20260101T000000Z-0123abcd';
export const PROMPT = 'summarise the repository';
export interface Ev {
  type: string;
  data: Record<string, unknown>;
}
const none = { present: false, value: undefined } as const;
const hex = (s: string): string => createHash('sha256').update(s).digest('hex');
const DIGEST = `sha256:${'a'.repeat(64)}`;
const L = (confidentiality: string[] = [], integrity: string[] = []) => ({
  confidentiality,
  integrity,
});
const human = { kind: 'human', user: 'op', surface: 'tty' };

export function evidenceOf(
  events: readonly Ev[],
  docs: { snapshot?: unknown; report?: unknown; files?: string[] } = {},
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
    files: (docs.files ?? []).map((rel) => ({ rel, kind: 'file' as const, bytes: 1 })),
    listProblems: [],
    locked: false,
  };
}

export function snapshotCfc(mode = 'enforce-explicit', extra: Record<string, unknown> = {}) {
  return {
    mode,
    modeSource: 'flag',
    fallback: null,
    modelClearance: [],
    mounts: [
      {
        target: '/workspace',
        writable: true,
        label: L([], ['repo:untrusted']),
        clearance: [],
        inWorkload: true,
      },
      {
        target: '/secrets',
        writable: false,
        label: L(['secret']),
        clearance: [],
        inWorkload: false,
        withheldBecause: 'the workspace is not cleared for [secret]',
      },
    ],
    destinations: [],
    sinks: {},
    unlabelled: [],
    promptCapture: 'capture-1',
    ...extra,
  };
}

export const snapshotOf = (cfc: unknown = snapshotCfc(), extra: Record<string, unknown> = {}) => ({
  caller: { host: 'h', pid: 1, start: 's', uid: 1000, user: 'op' },
  promptSlots: {
    directCommand: { chars: PROMPT.length, digest: `sha256:${hex(PROMPT)}` },
    context: [],
    quoted: [],
  },
  assurance: { level: 'standard', notes: [] },
  network: { mode: 'disabled' },
  ...(cfc === null ? {} : { cfc }),
  ...extra,
});

const turn = (n: number): Ev => ({
  type: 'model_call_started',
  data: { attemptId: `turn-${n}`, adapter: 'scripted' },
});
export const influence = (n: number, label: object, authority: string | null = null): Ev => ({
  type: 'cfc_influence',
  data: { turn: n, label, joined: n - 1, authority },
});
export const flow = (callId: string, tool: string, more: Record<string, unknown> = {}): Ev => ({
  type: 'cfc_flow',
  data: {
    callId,
    tool,
    mode: 'enforce-explicit',
    verdict: 'allow',
    rule: 'cfc:allow',
    reason: 'the flow is allowed',
    influence: L(),
    explicit: null,
    label: L(),
    sinks: [],
    violations: [],
    authority: null,
    handles: [],
    ...more,
  },
});
export const decision = (callId: string, tool: string, value = 'allow', rule = 'default'): Ev => ({
  type: 'permission_decision',
  data: {
    call_id: callId,
    tool_name: tool,
    risk_class: null,
    side_effect_class: null,
    resource_scope: null,
    decision: value,
    policy_rule: rule,
    reason: 'r',
    approver: null,
    args_digest: DIGEST,
    timestamp: '2026-01-01T00:00:00.000Z',
  },
});
const requested = (callId: string, tool: string): Ev => ({
  type: 'tool_requested',
  data: { callId, toolUseId: `tu-${callId}`, tool, input: '{}' },
});
export const executed = (callId: string, tool: string): Ev => ({
  type: 'tool_executed',
  data: {
    callId,
    toolUseId: `tu-${callId}`,
    tool,
    status: 'success',
    exitCode: 0,
    durationMs: 1,
    containerId: 'c',
    attempts: 1,
    outputs: [],
  },
});
export const labelled = (
  callId: string,
  label: object,
  disposition = 'exposed',
  handle?: string,
): Ev => ({
  type: 'cfc_label',
  data: {
    callId,
    source: 'mount:/workspace',
    label,
    disposition,
    ...(handle === undefined ? {} : { handle }),
  },
});
/** A handle as cfh names one (run-salted: cfc/handles.ts). */
export const HANDLE = 'cfh-val:abcdefghijklmnopqrst';
/** Where the clean run keeps the value it holds behind HANDLE. */
export const HELD_FILE = 'cfc-handles/abcdefghijklmnopqrst.json';
export const handleEv = (callId: string, action: string, label: object = L(['secret'])): Ev => ({
  type: 'cfc_handle',
  data: { handle: HANDLE, action, callId, label, integrityCounts: true },
});
export const endorsement = (kind: string, atoms: string[]): Ev => ({
  type: 'cfc_endorsement',
  data: {
    callId: 'call-0003',
    kind,
    confidentiality: kind === 'declassify' ? atoms : [],
    integrity: kind === 'endorse' ? atoms : [],
    approver: human,
    argsDigest: DIGEST,
  },
});

/** The clean run's events: every CFC clause holds. */
export function cleanEvents(): Ev[] {
  const direct = L([], ['prompt:direct']);
  return [
    {
      type: 'prompt_captured',
      data: {
        captureId: 'capture-1',
        kernel: 'cfh',
        subject: { uid: 1000, user: 'op', vouched: false },
        surface: 'cli',
        slot: 'prompt',
        sha256: hex(PROMPT),
        chars: PROMPT.length,
      },
    },
    influence(1, direct, 'capture-1'),
    turn(1),
    // Every call of a turn is decided before any of them runs (engine/agent/tool-calls.ts).
    requested('call-0001', 'read_file'),
    flow('call-0001', 'read_file', { influence: direct, authority: 'capture-1' }),
    decision('call-0001', 'read_file'),
    requested('call-0002', 'read_file'),
    flow('call-0002', 'read_file', { influence: direct, authority: 'capture-1' }),
    decision('call-0002', 'read_file'),
    executed('call-0001', 'read_file'),
    labelled('call-0001', L([], ['repo:untrusted'])),
    executed('call-0002', 'read_file'),
    handleEv('call-0002', 'minted'),
    labelled('call-0002', L(['secret']), 'opaque', HANDLE),
    influence(2, L()),
    turn(2),
    requested('call-0003', 'exec'),
    handleEv('call-0003', 'resolved'),
    flow('call-0003', 'exec', {
      verdict: 'deny',
      rule: 'cfc:integrity',
      reason: 'its influence lacks [prompt:direct]',
      explicit: L(['secret']),
      label: L(['secret']),
      violations: [{ sink: 'exec', uncleared: ['secret'], missing: ['prompt:direct'] }],
      handles: [HANDLE],
    }),
    decision('call-0003', 'exec', 'approval_required', 'cfc:integrity'),
    {
      type: 'approval_requested',
      data: {
        callId: 'call-0003',
        tool: 'exec',
        rule: 'cfc:integrity',
        decision: 'approval_required',
        argsDigest: DIGEST,
        approvers: [human],
      },
    },
    {
      type: 'approval_received',
      data: {
        callId: 'call-0003',
        rule: 'cfc:integrity',
        argsDigest: DIGEST,
        outcome: 'granted',
        approver: human,
        waitedMs: 1,
      },
    },
    endorsement('endorse', ['prompt:direct']),
    endorsement('declassify', ['secret']),
    executed('call-0003', 'exec'),
    labelled('call-0003', L()),
    influence(3, L()),
    turn(3),
    { type: 'final_answer_produced', data: { chars: 2 } },
    {
      type: 'run_finished',
      data: {
        status: 'completed',
        terminalReason: 'final_answer',
        exitCode: 0,
        reportSha256: 'c'.repeat(64),
      },
    },
  ];
}

/** The clean run as evidence (or a seeded copy), its report counted from its events. */
export function cleanRun(
  o: {
    events?: readonly Ev[];
    snapshot?: unknown;
    files?: string[];
    mode?: 'observe' | 'enforce-explicit' | 'enforce-strict' | 'disabled';
  } = {},
): RunEvidence {
  const events = o.events ?? cleanEvents();
  const report = {
    cfc: summarizeCfc(o.mode ?? 'enforce-explicit', events),
    assurance: { level: 'standard', notes: [] },
  };
  return evidenceOf(events, {
    snapshot: o.snapshot ?? snapshotOf(),
    report,
    files: o.files ?? [HELD_FILE],
  });
}

export const L0 = L;
