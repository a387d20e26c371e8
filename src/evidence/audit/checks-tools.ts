// Tool calls, joined by call id (AH-TOOL-1..6 and the governance extension's loop
// invariants): the surface they came from, exactly one result each, a permission decision
// before every side effect, typed failures, and the transcript keeping every tool_use with
// its one tool_result.
import { z } from 'zod';
import { carriedOver } from './checks-session.js';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { partOf } from './parts.js';
import { eventsOf, unreadable } from './run-evidence.js';
import { toolCalls, transcriptResults, transcriptUses } from './tool-calls.js';
import { ALLOWING_DECISIONS } from '../schema/events-tools.js';

/** The tool a profile with children has (tools/delegate-tool.ts). */
export const DELEGATE_TOOL = 'delegate';

const TOOL_TYPES = [
  'tool_requested',
  'permission_decision',
  'tool_rejected',
  'tool_denied',
  'tool_executed',
  'tool_call_aborted',
  'tool_retry',
] as const;

export const surfaceCheck: Check = {
  id: 'tools.surface',
  title: "tools come from the profile's allowlist and nothing widens it",
  clauses: ['AH-TOOL-1', 'AH-TOOL-2'],
  run({ run }) {
    const tools = partOf(run.snapshot.value, 'tools', z.array(z.string()));
    const requested = eventsOf(run, 'tool_requested');
    if (!tools.ok) return inconclusive('snapshot.json tools cannot be read');
    if (tools.value.length === 0 && requested.length === 0)
      return notApplicable('no tool surface: a command run');
    const profile = partOf(
      run.snapshot.value,
      'profile',
      z.looseObject({
        resolved: z.looseObject({
          tools: z.array(z.string()).optional(),
          children: z.record(z.string(), z.unknown()).optional(),
        }),
      }),
    );
    const allow = new Set(profile.ok ? (profile.value.resolved.tools ?? []) : []);
    // `delegate` is on the surface of a profile with child profiles (AH-DEL-1), only then.
    if (profile.ok && Object.keys(profile.value.resolved.children ?? {}).length > 0)
      allow.add(DELEGATE_TOOL);
    else allow.delete(DELEGATE_TOOL);
    // Host tools are a surface of their own, advertised apart (AH-TOOL-7): the ones the
    // run exposed are those host_tools_ready lists.
    const hostTools = eventsOf(run, 'host_tools_ready').flatMap((e) => e.data.tools);
    // A draft session's runs_diff/runs_apply likewise, and only in a draft run.
    const draft = partOf(run.snapshot.value, 'workspace', z.looseObject({ mode: z.string() }));
    const draftTools =
      draft.ok && draft.value.mode === 'draft'
        ? eventsOf(run, 'draft_tools_ready').flatMap((e) => e.data.tools)
        : [];
    const surface = new Set([...tools.value, ...hostTools, ...draftTools]);
    const where: string[] = [];
    for (const t of tools.value)
      if (!allow.has(t)) where.push(`snapshot.json tools: ${t} is not in the profile's allowlist`);
    const calls = toolCalls(run);
    for (const call of calls.values()) {
      const tool = call.requests[0]?.data.tool;
      if (tool === undefined || surface.has(tool)) continue;
      const rejected = call.results.some(
        (r) => r.type === 'tool_rejected' && r.data.reason === 'unknown_tool',
      );
      const allowed = call.decisions.some((d) => ALLOWING_DECISIONS.includes(d.data.decision));
      if (!rejected || allowed)
        where.push(
          `${call.callId}: '${tool}' is outside the surface and was not rejected as unknown`,
        );
    }
    for (const e of eventsOf(run, 'tool_executed'))
      if (!surface.has(e.data.tool))
        where.push(`${at(e)}: ${e.data.tool} is not on the run's surface`);
    return where.length === 0
      ? pass(
          `${tools.value.length} sandbox tool(s) from the allowlist${hostTools.length > 0 ? ` and ${hostTools.length} host tool(s)` : ''}; ${calls.size} call(s) within them`,
        )
      : fail('the tool surface was widened', where);
  },
};

export const oneResultCheck: Check = {
  id: 'tools.one-result',
  title: 'every tool call proposed once and answered by exactly one result',
  clauses: ['AH-TOOL-3', 'AHGE-LOOP-1'],
  run({ run }) {
    const calls = toolCalls(run);
    if (calls.size === 0) return notApplicable('no tool call');
    if (unreadable(run, ...TOOL_TYPES) > 0) return inconclusive('a tool event is unreadable');
    const where: string[] = [];
    for (const call of calls.values()) {
      const req = call.requests[0];
      if (call.requests.length !== 1)
        where.push(`${call.callId}: proposed ${call.requests.length} times`);
      if (call.results.length !== 1)
        where.push(
          `${call.callId}: ${call.results.length} results (${call.results.map((r) => r.type).join(', ') || 'none'})`,
        );
      for (const r of call.results) {
        if (req === undefined) continue;
        if (r.seq < req.seq) where.push(`${at(r)}: answers ${call.callId} before it was proposed`);
        if (r.data.tool !== req.data.tool || r.data.toolUseId !== req.data.toolUseId)
          where.push(`${at(r)}: answers ${call.callId} with another tool or tool_use id`);
      }
    }
    return where.length === 0
      ? pass(`${calls.size} call(s), one result each`)
      : fail('tool calls without exactly one result', where);
  },
};

export const decisionFirstCheck: Check = {
  id: 'tools.decision-first',
  title: 'one permission decision per call, recorded before its result and any side effect',
  clauses: ['AHGE-LOOP-2', 'AHGE-LOOP-3', 'AH-TOOL-4', 'AH-TOOL-8'],
  run({ run }) {
    const calls = toolCalls(run);
    if (calls.size === 0) return notApplicable('no tool call');
    if (unreadable(run, ...TOOL_TYPES) > 0) return inconclusive('a tool event is unreadable');
    const outputsAt = new Map<string, number>();
    for (const a of eventsOf(run, 'artifact_written')) {
      const m = /^outputs\/(call-\d+)\./.exec(a.data.file);
      if (m?.[1] !== undefined && !outputsAt.has(m[1])) outputsAt.set(m[1], a.seq);
    }
    const where: string[] = [];
    for (const call of calls.values()) {
      const kinds = new Set(call.results.map((r) => r.type));
      const d = call.decisions[0];
      if (call.decisions.length !== 1 || d === undefined) {
        // A call the run's stop left unanswered may never have reached the mediator.
        if (!(call.decisions.length === 0 && kinds.has('tool_call_aborted')))
          where.push(
            `${call.callId}: ${call.decisions.length} permission decisions (one expected)`,
          );
        continue;
      }
      const allowing = ALLOWING_DECISIONS.includes(d.data.decision);
      const effects = [
        ...call.retries.map((r) => r.seq),
        ...call.results.map((r) => r.seq),
        ...(outputsAt.has(call.callId) ? [outputsAt.get(call.callId) ?? 0] : []),
      ];
      const first = Math.min(...effects);
      if (effects.length > 0 && d.seq > first)
        where.push(`${at(d)}: decides ${call.callId} after its result or effect (seq ${first})`);
      const req = call.requests[0];
      if (req !== undefined && d.data.tool_name !== req.data.tool)
        where.push(`${at(d)}: decides ${d.data.tool_name}, the call proposed ${req.data.tool}`);
      if (kinds.has('tool_rejected') && allowing)
        where.push(
          `${at(d)}: ${call.callId} failed validation, yet was decided '${d.data.decision}'`,
        );
      // An asking decision may run once a person granted it: approvals.paired checks that.
      if (kinds.has('tool_executed') && d.data.decision === 'deny')
        where.push(`${at(d)}: ${call.callId} executed on a 'deny' decision`);
      for (const r of call.results)
        if (r.type === 'tool_denied' && (allowing || r.data.rule !== d.data.policy_rule))
          where.push(
            `${at(r)}: denial does not match the decision (${d.data.decision}, ${d.data.policy_rule})`,
          );
    }
    return where.length === 0
      ? pass('every call decided once, before its result and anything it did')
      : fail('a result or side effect without its prior decision', where);
  },
};

export const failuresTypedCheck: Check = {
  id: 'tools.failures-typed',
  title: 'rejections, denials and aborts reach the model as typed failures, never as success',
  clauses: ['AH-TOOL-5', 'AH-CFC-11', 'AHGE-LOOP-7'],
  run({ run }) {
    const calls = toolCalls(run);
    if (calls.size === 0) return notApplicable('no tool call');
    if (run.transcript === undefined)
      return inconclusive('no transcript.jsonl to read the observations from');
    const results = transcriptResults(run.transcript);
    const where: string[] = [];
    let typed = 0;
    for (const call of calls.values()) {
      const r = call.results[0];
      const req = call.requests[0];
      if (r === undefined || req === undefined) continue;
      const seen = results.get(req.data.toolUseId)?.[0];
      if (seen === undefined) continue; // tools.transcript-paired says so
      const want =
        r.type === 'tool_rejected'
          ? ['error']
          : r.type === 'tool_denied'
            ? ['denied', 'approval_required']
            : r.type === 'tool_call_aborted'
              ? ['aborted']
              : r.data.status === 'withheld'
                ? ['aborted']
                : [r.data.status];
      if (seen.status === undefined || !want.includes(seen.status))
        where.push(
          `transcript.jsonl:${seen.line}: ${call.callId} (${r.type}) answered '${String(seen.status)}', not ${want.join('/')}`,
        );
      else if (seen.isError !== (seen.status !== 'success'))
        where.push(
          `transcript.jsonl:${seen.line}: ${call.callId} is_error ${String(seen.isError)} with status ${seen.status}`,
        );
      if (r.type !== 'tool_executed') typed += 1;
    }
    return where.length === 0
      ? pass(`${typed} failure(s) returned typed; every observation's status matches its event`)
      : fail('a failure masqueraded as another outcome', where);
  },
};

export const transcriptPairedCheck: Check = {
  id: 'tools.transcript-paired',
  title: 'the transcript keeps every tool_use with exactly one tool_result, in proposal order',
  clauses: ['AHGE-LOOP-1'],
  run({ run }) {
    const requested = eventsOf(run, 'tool_requested');
    if (run.transcript === undefined)
      return requested.length === 0
        ? notApplicable('no transcript: a command run')
        : inconclusive('tool calls, but no transcript.jsonl');
    const uses = transcriptUses(run.transcript);
    const results = transcriptResults(run.transcript);
    const where: string[] = [];
    for (const u of uses) {
      const n = results.get(u.id)?.length ?? 0;
      if (n !== 1) where.push(`transcript.jsonl:${u.line}: tool_use ${u.id} has ${n} tool_results`);
    }
    const useIds = new Set(uses.map((u) => u.id));
    for (const [id, list] of results)
      if (!useIds.has(id))
        where.push(
          `transcript.jsonl:${list[0]?.line ?? 0}: tool_result for unknown tool_use ${id}`,
        );
    const fromEvents = requested.map((e) => e.data.toolUseId).join(',');
    // A restored session's run carries the conversation it continues first: those calls
    // were requested in the run it restored (checks-session.ts).
    const carried = carriedOver(run);
    const own = uses.filter((u) => u.line > carried);
    if (fromEvents !== own.map((u) => u.id).join(','))
      where.push(
        'events.jsonl tool_requested: tool_use ids differ from the transcript’s, or their order does',
      );
    return where.length === 0
      ? uses.length === 0
        ? pass('no tool_use in the transcript')
        : pass(`${uses.length} tool_use(s), each answered once`)
      : fail('tool_use and tool_result are not paired', where);
  },
};
