// One tool call as the evidence tells it, joined by call id: the proposal, the mediator's
// decisions, and the events that answer it. The tool checks read calls through this, so a
// new kind of decision or result (approvals, plans, host tools) is one more join here.
import { ObservationStatus } from '../schema/events-tools.js';
import type { TranscriptLine } from './run-evidence.js';
import { eventsOf, type RunEvidence, type TypedEvent } from './run-evidence.js';

/** Event types that answer a call: exactly one of them per call. */
export const RESULT_TYPES = [
  'tool_rejected',
  'tool_denied',
  'tool_executed',
  'tool_call_aborted',
] as const;
export type ResultType = (typeof RESULT_TYPES)[number];

export interface ToolCallView {
  readonly callId: string;
  readonly requests: TypedEvent<'tool_requested'>[];
  readonly decisions: TypedEvent<'permission_decision'>[];
  readonly retries: TypedEvent<'tool_retry'>[];
  readonly results: (
    | TypedEvent<'tool_rejected'>
    | TypedEvent<'tool_denied'>
    | TypedEvent<'tool_executed'>
    | TypedEvent<'tool_call_aborted'>
  )[];
}

export function toolCalls(run: RunEvidence): Map<string, ToolCallView> {
  const calls = new Map<string, ToolCallView>();
  const view = (callId: string): ToolCallView => {
    let v = calls.get(callId);
    if (v === undefined) {
      v = { callId, requests: [], decisions: [], retries: [], results: [] };
      calls.set(callId, v);
    }
    return v;
  };
  for (const e of eventsOf(run, 'tool_requested')) view(e.data.callId).requests.push(e);
  for (const e of eventsOf(run, 'permission_decision')) view(e.data.call_id).decisions.push(e);
  for (const e of eventsOf(run, 'tool_retry')) view(e.data.callId).retries.push(e);
  for (const e of eventsOf(run, 'tool_rejected')) view(e.data.callId).results.push(e);
  for (const e of eventsOf(run, 'tool_denied')) view(e.data.callId).results.push(e);
  for (const e of eventsOf(run, 'tool_executed')) view(e.data.callId).results.push(e);
  for (const e of eventsOf(run, 'tool_call_aborted')) view(e.data.callId).results.push(e);
  for (const v of calls.values()) v.results.sort((a, b) => a.seq - b.seq);
  return calls;
}

export interface TranscriptResult {
  readonly line: number;
  readonly isError: boolean;
  /** The observation's status, read from inside the untrusted-tool-output fence. */
  readonly status: string | undefined;
}

const FENCED = /^<untrusted-tool-output tool="[^"]*">\n([\s\S]*)\n<\/untrusted-tool-output>$/;

/** Every tool_result of the transcript by tool_use id (a list: there must be one). */
export function transcriptResults(
  lines: readonly TranscriptLine[],
): Map<string, TranscriptResult[]> {
  const out = new Map<string, TranscriptResult[]>();
  for (const t of lines) {
    for (const block of t.message?.content ?? []) {
      if (block.type !== 'tool_result') continue;
      const list = out.get(block.tool_use_id) ?? [];
      list.push({ line: t.line, isError: block.is_error, status: statusOf(block.content) });
      out.set(block.tool_use_id, list);
    }
  }
  return out;
}

function statusOf(content: string): string | undefined {
  const m = FENCED.exec(content);
  if (m?.[1] === undefined) return undefined;
  try {
    const parsed = ObservationStatus.safeParse((JSON.parse(m[1]) as { status?: unknown }).status);
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The tool_use blocks of the transcript, in order, with the line each is on. */
export function transcriptUses(
  lines: readonly TranscriptLine[],
): { id: string; name: string; line: number }[] {
  const out: { id: string; name: string; line: number }[] = [];
  for (const t of lines)
    for (const block of t.message?.content ?? [])
      if (block.type === 'tool_use') out.push({ id: block.id, name: block.name, line: t.line });
  return out;
}
