// The tool calls of one model turn (governance extension, "Canonical loop"): each
// proposal is checked against the surface and its schema, decided by the mediator (which
// records the decision before anything happens), and the authorized ones run, up to
// max_parallel_tool_calls at once; results are recorded in the order proposed, so the
// evidence is deterministic whatever finished first. Every call gets exactly one
// observation (AH-TOOL-3/5) and one governance record.
import { CfhError, HarnessInvariantError, MediatorError, errorMessage } from '../../errors.js';
import type { AuthorizedCall, Ruling } from '../../mediator/mediator.js';
import type { CheckedCall } from '../../mediator/policy.js';
import type { ProposalFlow } from '../../mediator/flow-gate.js';
import { boundObservation, errorObservation, type Observation } from '../../tools/observation.js';
import type { ToolOutcome } from '../../tools/runner.js';
import { governanceOf } from '../run/governance-of.js';
import type { Label } from '../../cfc/label.js';
import { labelExecuted, labelRefused } from '../cfc/cfc-observations.js';
import { replayForbidden } from '../../mediator/risk.js';
import { checkWithCfc } from '../cfc/cfc-calls.js';
import { mentionsReference } from '../../tools/host/opaque-refs.js';
import { callIdOf, type TextScrubber, type ToolCallDeps, type ToolUse } from './tool-call-deps.js';

export {
  callIdOf,
  type ToolCallDeps,
  type ToolCallRecorder,
  type ToolUse,
} from './tool-call-deps.js';
export { abortUnanswered } from '../run/governance-of.js';

export interface AnsweredCall {
  readonly use: ToolUse;
  readonly observation: Observation;
  /** CFC: the label the loop joins into the context once the turn is answered (AH-CFC-7). */
  readonly expose?: Label | undefined;
}

interface RunnableCall {
  readonly use: ToolUse;
  readonly callId: string;
  readonly call: AuthorizedCall;
  readonly limit: number;
  /** CFC: the labels of the handles the call used (its explicit inputs). */
  readonly explicit: readonly Label[];
  /** CFC: a call that used handles and may not run once resolved (cfc-calls.ts): why. */
  readonly unfit?: string | undefined;
}

interface Executed {
  readonly outcome: ToolOutcome;
  readonly observation: Observation;
  readonly retries: readonly { attempt: number; reason: string; durationMs: number }[];
}

/**
 * Answers every call of a turn. `firstCall` numbers the calls across the run. Each answer
 * is also put in `settled` (by tool_use id) as soon as it is recorded, so when the turn is
 * interrupted (cancellation, the deadline, an engine, containment or invariant failure,
 * which end the run: AH-TOOL-6) the caller knows which calls were answered: the calls that
 * had finished are still recorded, with their outputs, before the error propagates.
 */
export async function answerTurn(
  uses: readonly ToolUse[],
  firstCall: number,
  deps: ToolCallDeps,
  signal: AbortSignal,
  settled: Map<string, Observation> = new Map(),
  decided: Map<string, Ruling> = new Map(),
): Promise<AnsweredCall[]> {
  const prepared: (AnsweredCall | RunnableCall)[] = [];
  // AH-CFC-7/9: every call of one model turn carries the context's label when it was proposed.
  const influence = deps.cfc?.context();
  for (const [i, use] of uses.entries()) {
    const p = await prepare(use, callIdOf(firstCall + i), deps, signal, decided, influence);
    if (!('call' in p)) settled.set(use.id, p.observation);
    prepared.push(p);
  }
  const runnable = prepared.filter((p): p is RunnableCall => 'call' in p);
  const done = new Map<RunnableCall, Executed>();
  try {
    await executeAll(runnable, deps, signal, done);
  } catch (error) {
    for (const p of runnable) {
      const finished = done.get(p);
      if (finished !== undefined) await recordSettled(p, finished, deps, settled);
    }
    throw error;
  }
  const answers: AnsweredCall[] = [];
  for (const p of prepared) {
    if (!('call' in p)) {
      answers.push(p);
      continue;
    }
    const finished = done.get(p);
    if (finished === undefined) throw new Error(`unreachable: ${p.callId} did not execute`);
    answers.push({ use: p.use, ...(await recordSettled(p, finished, deps, settled)) });
  }
  return answers;
}

/** Records one executed call and puts its answer in `settled`, also when recording fails. */
async function recordSettled(
  call: RunnableCall,
  finished: Executed,
  deps: ToolCallDeps,
  settled: Map<string, Observation>,
): Promise<{ observation: Observation; expose?: Label | undefined }> {
  try {
    const answer = await record(call, finished, deps);
    settled.set(call.use.id, answer.observation);
    return answer;
  } catch (error) {
    settled.set(
      call.use.id,
      errorObservation('aborted', 'the result was withheld: the run failed (see the evidence)'),
    );
    throw error;
  }
}

/**
 * A call that used value handles, or a host-tool call that named opaque references, is
 * digested as the model sent it: a digest of the resolved arguments would be one of values
 * the model was not shown, and a short value is found by trying candidates against it
 * (AH-REF-4). The executor still gets `checked.args`.
 */
function digestedAsSent(
  checked: CheckedCall,
  input: unknown,
  flow: ProposalFlow | undefined,
): { modelArgs?: unknown } {
  const handles = flow !== undefined && flow.handles.length > 0;
  const references =
    checked.kind === 'valid' &&
    checked.tool.executor === 'host' &&
    mentionsReference(JSON.stringify(input));
  return handles || references ? { modelArgs: input } : {};
}

async function prepare(
  use: ToolUse,
  callId: string,
  deps: ToolCallDeps,
  signal: AbortSignal,
  decided: Map<string, Ruling>,
  influence: Label | undefined,
): Promise<AnsweredCall | RunnableCall> {
  await deps.recorder.event('tool_requested', {
    callId,
    toolUseId: use.id,
    tool: use.name,
    input: summarize(use.input, deps.disclosure),
  });
  // Handles resolved before the check (AH-CFC-18); the flow's inputs when CFC is on.
  const { checked, flow, policyArgs, unfit } = await checkWithCfc(use, callId, deps, influence);
  // Every proposal is decided, the unknown and the invalid too: one decision each.
  const ruling = await decide(
    deps,
    {
      callId,
      toolUseId: use.id,
      checked,
      ...(flow === undefined ? {} : { flow }),
      ...(policyArgs === undefined ? {} : { policyArgs }),
      ...digestedAsSent(checked, use.input, flow),
    },
    signal,
  );
  decided.set(use.id, ruling);
  if (ruling.kind === 'authorized') {
    const tool = ruling.call.tool;
    const limit = Math.min(tool.resultSizeLimitChars, deps.budgets.budgets.maxToolResultChars);
    return { use, callId, call: ruling.call, limit, explicit: flow?.explicit ?? [], unfit };
  }
  // Bounded like any observation: a refusal can echo what the model sent (an unknown key).
  const limit = Math.min(
    checked.kind === 'unknown' ? Number.MAX_SAFE_INTEGER : checked.tool.resultSizeLimitChars,
    deps.budgets.budgets.maxToolResultChars,
  );
  // cfh's words about a call that used handles come from the model's form of it only.
  const observation = boundObservation(await refusal(use, callId, checked, ruling, deps), limit);
  await labelRefused(deps, callId, observation.status);
  await deps.recorder.governance(governanceOf(callId, checked, ruling, observation, deps, false));
  return { use, observation };
}

/** The evidence and the typed observation of a call that does not run (AH-CFC-11). */
async function refusal(
  use: ToolUse,
  callId: string,
  checked: CheckedCall,
  ruling: Extract<Ruling, { kind: 'refused' }>,
  deps: ToolCallDeps,
): Promise<Observation> {
  const base = { callId, toolUseId: use.id, tool: use.name };
  if (checked.kind === 'unknown') {
    // Outside the parent surface: nothing widens it, no container starts (AH-TOOL-2).
    await deps.recorder.event('tool_rejected', { ...base, reason: 'unknown_tool' });
    return errorObservation(
      'error',
      "unknown tool (not on this run's surface)",
      deps.registry.names(),
    );
  }
  if (checked.kind === 'invalid') {
    await deps.recorder.event('tool_rejected', { ...base, reason: 'invalid_arguments' });
    return errorObservation('error', `invalid arguments: ${checked.issues}`, [checked.tool.name]);
  }
  await deps.recorder.event('tool_denied', {
    ...base,
    rule: ruling.decision.policy_rule,
    decision: ruling.decision.decision,
    status: ruling.status,
  });
  return errorObservation(ruling.status, ruling.reason);
}

/**
 * Calls without side effects run side by side (at most max_parallel_tool_calls, which the
 * turn was already checked against); a call that changes anything (or must: runsAlone)
 * runs alone, after
 * everything proposed before it and before everything proposed after it.
 */
async function executeAll(
  calls: readonly RunnableCall[],
  deps: ToolCallDeps,
  signal: AbortSignal,
  done: Map<RunnableCall, Executed>,
): Promise<void> {
  const width = deps.budgets.budgets.maxParallelToolCalls;
  let batch: RunnableCall[] = [];
  const flush = async (): Promise<void> => {
    const settled = await Promise.allSettled(batch.map((c) => executeOne(c, deps, signal)));
    let failure: { reason: unknown } | undefined;
    for (const [i, s] of settled.entries()) {
      if (s.status === 'fulfilled') done.set(batch[i] as RunnableCall, s.value);
      else failure ??= { reason: s.reason };
    }
    batch = [];
    if (failure !== undefined) throw failure.reason;
  };
  for (const c of calls) {
    if (c.call.tool.sideEffectClass !== 'none' || c.call.tool.runsAlone === true) {
      await flush();
      batch = [c];
      await flush();
    } else {
      batch.push(c);
      if (batch.length >= width) await flush();
    }
  }
  await flush();
}

/**
 * One call, retried only when its contract says a replay is safe (safe_retry, or
 * idempotent_only) and it ran out of time, at most min(its max retries,
 * max_retries_per_tool_call) times, and never a high-risk commit nor a tool of a class a
 * replay could act twice for (communication, external or internal writes...: AH-LIFE-5).
 */
async function executeOne(
  runnable: RunnableCall,
  deps: ToolCallDeps,
  signal: AbortSignal,
): Promise<Executed> {
  const { call, limit } = runnable;
  const tool = call.tool;
  if (runnable.unfit !== undefined) return unfitExecuted(runnable.unfit, tool.name);
  const replayable =
    tool.retryPolicy !== 'no_auto_retry' &&
    call.idempotencyKey === undefined &&
    !replayForbidden(tool);
  const maxRetries = replayable
    ? Math.min(tool.maxRetries, deps.budgets.budgets.maxRetriesPerToolCall)
    : 0;
  const runner = deps.runners[tool.executor];
  if (runner === undefined) throw new Error(`unreachable: no runner for ${tool.executor}`);
  // What it may write is in its trees' labels before it can write it (cfc/written-notes.ts).
  // Another live run reading one of its trees under less refuses it (written-leases.ts).
  if (call.judged !== undefined) {
    const refused = await deps.written?.call(call.callId, call.judged, signal);
    if (refused !== undefined) return unfitExecuted(refused, tool.name);
  }
  const retries: { attempt: number; reason: string; durationMs: number }[] = [];
  for (;;) {
    const outcome = await runner.run(call, limit, signal);
    const observation = boundObservation(outcome.observation, limit);
    if (observation.status !== 'timeout' || retries.length >= maxRetries)
      return { outcome, observation, retries };
    retries.push({
      attempt: retries.length + 1,
      reason: 'timeout',
      durationMs: outcome.durationMs,
    });
  }
}

/**
 * A call that used handles and is unfit once resolved (cfc-calls.ts) does not run: its
 * answer is an error observation labelled like the call's result (its handles' labels join,
 * so the model gets the opaque answer a run would give), its reason held behind it.
 */
function unfitExecuted(reason: string, tool: string): Executed {
  const observation = errorObservation('error', `not run: ${reason}`);
  return {
    outcome: {
      observation,
      stdout: Buffer.alloc(0),
      stderr: Buffer.alloc(0),
      exitCode: null,
      durationMs: 0,
      where: `cfh:${tool}`,
      timedOut: false,
    },
    observation,
    retries: [],
  };
}

async function record(
  runnable: RunnableCall,
  done: Executed,
  deps: ToolCallDeps,
): Promise<{ observation: Observation; expose?: Label | undefined }> {
  const { call, callId, use } = runnable;
  const tool = call.tool;
  for (const retry of done.retries) {
    await deps.recorder.event('tool_retry', {
      callId,
      toolUseId: use.id,
      tool: tool.name,
      ...retry,
    });
  }
  const { outcome } = done;
  const refs: string[] = [];
  // audit_policy: full structured events keep the raw output; the others its size only.
  const full = tool.auditPolicy === 'full_structured_event';
  if (full && outcome.stdout.length > 0)
    refs.push(await deps.recorder.output(`${callId}.stdout`, outcome.stdout));
  if (full && outcome.stderr.length > 0)
    refs.push(await deps.recorder.output(`${callId}.stderr`, outcome.stderr));
  // CFC (AH-CFC-6/7/18): labelled by provenance; opaque (a handle) when the model may not see it.
  const { observation, expose } = await labelExecuted(
    deps,
    callId,
    tool,
    call.args,
    { ...done.observation, evidence_refs: refs },
    runnable.explicit,
    outcome.label,
  );
  const base = {
    callId,
    toolUseId: use.id,
    tool: tool.name,
    exitCode: outcome.exitCode,
    containerId: outcome.where,
    outputs: refs,
    ...(full
      ? {}
      : { outputBytes: { stdout: outcome.stdout.length, stderr: outcome.stderr.length } }),
    ...(call.idempotencyKey === undefined ? {} : { idempotencyKey: call.idempotencyKey }),
  };
  // The tool's declared output schema holds, or the harness is broken: the run fails and
  // the model hears nothing of it (AH-TOOL-6).
  const checked = tool.output.safeParse(observation);
  if (!checked.success) {
    await deps.recorder.event('tool_executed', {
      ...base,
      status: 'withheld',
      reason: 'output_schema_violation',
    });
    throw new HarnessInvariantError(
      'tool_output_invalid',
      `${tool.name} produced an observation outside its output schema: ${checked.error.message}`,
      { callId, tool: tool.name },
    );
  }
  await deps.recorder.event('tool_executed', {
    ...base,
    status: observation.status,
    durationMs: outcome.durationMs,
    attempts: done.retries.length + 1,
    ...(observation.truncated === undefined ? {} : { truncated: observation.truncated }),
  });
  const checkedCall: CheckedCall = { kind: 'valid', tool, args: call.args };
  const ruling: Ruling = { kind: 'authorized', decision: call.decision, call };
  await deps.recorder.governance(
    governanceOf(callId, checkedCall, ruling, observation, deps, true),
  );
  return { observation, expose };
}

/**
 * A bounded input summary for the evidence (AH-TOOL-3): scrubbed, then cut, and the cut
 * never inside a credential (AH-TOOL-7).
 */
function summarize(input: unknown, scrubber: TextScrubber | undefined): string {
  const raw = input === undefined ? 'undefined' : JSON.stringify(input);
  const text = scrubber === undefined ? raw : scrubber.text(raw);
  if (text.length <= 500) return text;
  return `${scrubber === undefined ? text.slice(0, 500) : scrubber.cutText(raw, 500)}…`;
}

/**
 * The mediator's ruling. A failure inside it that is not already classified (a policy bug,
 * an approval surface that broke while a person was asked) names the mediator (AH-DIAG-1);
 * a cancellation stays a cancellation.
 */
async function decide(
  deps: ToolCallDeps,
  proposal: Parameters<ToolCallDeps['mediator']['decide']>[0],
  signal: AbortSignal,
): Promise<Ruling> {
  try {
    return await deps.mediator.decide(proposal, signal);
  } catch (error) {
    if (signal.aborted || error instanceof CfhError) throw error;
    throw new MediatorError(
      'mediation_failed',
      `deciding ${proposal.callId} failed: ${errorMessage(error)}`,
      { callId: proposal.callId },
      error,
    );
  }
}
