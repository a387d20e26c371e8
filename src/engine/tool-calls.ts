// The tool calls of one model turn (issue 5): each is validated and put to the mediator in
// the order proposed; the allowed ones execute, up to max_parallel_tool_calls at once; the
// results are recorded in the order proposed again, so the evidence is deterministic
// whatever finished first. Every call gets exactly one observation (AH-TOOL-3/5).
import type { BudgetTracker } from './budgets.js';
import { HarnessInvariantError } from '../errors.js';
import type { EventInput, EventType } from '../evidence/schema/registry.js';
import type { Mediator } from '../mediator/mediator.js';
import type { BuiltinTool } from '../tools/builtins.js';
import type { ToolRegistry } from '../tools/contract.js';
import { boundObservation, errorObservation, type Observation } from '../tools/observation.js';
import type { ToolExecution } from '../tools/tool-container.js';

export interface ToolUse {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

export interface ToolCallRecorder {
  /** One event of the registry (src/evidence/schema/registry.ts), of its type's shape. */
  event<T extends EventType>(type: T, data: EventInput<T>, durable?: boolean): Promise<void>;
  /** Keeps a tool's raw output under outputs/; returns its reference (`outputs/NAME`). */
  output(name: string, data: Buffer): Promise<string>;
}

export interface ToolCallDeps {
  readonly registry: ToolRegistry;
  readonly builtin: (name: string) => BuiltinTool | undefined;
  readonly mediator: Mediator;
  readonly budgets: BudgetTracker;
  readonly runTool: (
    tool: BuiltinTool,
    argv: string[],
    stdin: Buffer | undefined,
    signal: AbortSignal,
  ) => Promise<ToolExecution>;
  readonly recorder: ToolCallRecorder;
}

export interface AnsweredCall {
  readonly use: ToolUse;
  readonly observation: Observation;
}

interface RunnableCall {
  readonly use: ToolUse;
  readonly callId: string;
  readonly tool: BuiltinTool;
  readonly input: unknown;
  readonly limit: number;
}

interface Executed {
  readonly execution: ToolExecution;
  readonly observation: Observation;
  readonly retries: readonly { attempt: number; reason: string; durationMs: number }[];
}

/** `call-0001`…: numbers a run's calls across turns; names their outputs. */
export function callIdOf(n: number): string {
  return `call-${String(n).padStart(4, '0')}`;
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
): Promise<AnsweredCall[]> {
  const prepared: (AnsweredCall | RunnableCall)[] = [];
  for (const [i, use] of uses.entries()) {
    const p = await prepare(use, callIdOf(firstCall + i), deps);
    if (!('tool' in p)) settled.set(use.id, p.observation);
    prepared.push(p);
  }
  const runnable = prepared.filter((p): p is RunnableCall => 'tool' in p);
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
    if (!('tool' in p)) {
      answers.push(p);
      continue;
    }
    const finished = done.get(p);
    if (finished === undefined) throw new Error(`unreachable: ${p.callId} did not execute`);
    answers.push({ use: p.use, observation: await recordSettled(p, finished, deps, settled) });
  }
  return answers;
}

/** Records one executed call and puts its answer in `settled`, also when recording fails. */
async function recordSettled(
  call: RunnableCall,
  finished: Executed,
  deps: ToolCallDeps,
  settled: Map<string, Observation>,
): Promise<Observation> {
  try {
    const observation = await record(call, finished, deps);
    settled.set(call.use.id, observation);
    return observation;
  } catch (error) {
    settled.set(
      call.use.id,
      errorObservation('aborted', 'the result was withheld: the run failed (see the evidence)'),
    );
    throw error;
  }
}

async function prepare(
  use: ToolUse,
  callId: string,
  deps: ToolCallDeps,
): Promise<AnsweredCall | RunnableCall> {
  await deps.recorder.event('tool_requested', {
    callId,
    toolUseId: use.id,
    tool: use.name,
    input: summarize(use.input),
  });
  const contract = deps.registry.get(use.name);
  const tool = contract === undefined ? undefined : deps.builtin(use.name);
  if (contract === undefined || tool === undefined) {
    // Outside the parent surface: nothing widens it, no container starts (AH-TOOL-2).
    await deps.recorder.event('tool_rejected', {
      callId,
      toolUseId: use.id,
      tool: use.name,
      reason: 'unknown_tool',
    });
    const known = deps.registry.names();
    return { use, observation: errorObservation('error', `unknown tool '${use.name}'`, known) };
  }
  const parsed = contract.inputSchema.safeParse(use.input);
  if (!parsed.success) {
    await deps.recorder.event('tool_rejected', {
      callId,
      toolUseId: use.id,
      tool: use.name,
      reason: 'invalid_arguments',
    });
    const issues = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`)
      .join('; ');
    return {
      use,
      observation: errorObservation('error', `invalid arguments: ${issues}`, [use.name]),
    };
  }
  const decision = deps.mediator.decide(contract, parsed.data);
  await deps.recorder.event(
    'permission_decision',
    { callId, toolUseId: use.id, tool: use.name, ...decision },
    true,
  );
  if (decision.decision !== 'allow') {
    await deps.recorder.event('tool_denied', {
      callId,
      toolUseId: use.id,
      tool: use.name,
      rule: decision.rule,
    });
    const status = decision.decision === 'deny' ? 'denied' : 'approval_required';
    return { use, observation: errorObservation(status, decision.reason) };
  }
  const limit = Math.min(contract.resultSizeLimitChars, deps.budgets.budgets.maxToolResultChars);
  return { use, callId, tool, input: parsed.data, limit };
}

/**
 * Calls without side effects run side by side (at most max_parallel_tool_calls, which the
 * turn was already checked against); a call that changes the sandbox runs alone, after
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
  for (const call of calls) {
    if (call.tool.sideEffectClass !== 'none') {
      await flush();
      batch = [call];
      await flush();
    } else {
      batch.push(call);
      if (batch.length >= width) await flush();
    }
  }
  await flush();
}

/**
 * One call, retried only when its contract declares it idempotent and it ran out of time,
 * at most min(its retry policy, max_retries_per_tool_call) times (AH-LIFE-5).
 */
async function executeOne(
  call: RunnableCall,
  deps: ToolCallDeps,
  signal: AbortSignal,
): Promise<Executed> {
  const { tool, input, limit } = call;
  const maxRetries = tool.retryPolicy.idempotent
    ? Math.min(tool.retryPolicy.maxRetries, deps.budgets.budgets.maxRetriesPerToolCall)
    : 0;
  const retries: { attempt: number; reason: string; durationMs: number }[] = [];
  for (;;) {
    const { argv, stdin } = tool.command(input, { maxChars: limit });
    const execution = await deps.runTool(tool, argv, stdin, signal);
    const observation = boundObservation(tool.observe(execution, input), limit);
    if (observation.status !== 'timeout' || retries.length >= maxRetries)
      return { execution, observation, retries };
    retries.push({
      attempt: retries.length + 1,
      reason: 'timeout',
      durationMs: execution.durationMs,
    });
  }
}

async function record(
  call: RunnableCall,
  done: Executed,
  deps: ToolCallDeps,
): Promise<Observation> {
  for (const retry of done.retries) {
    await deps.recorder.event('tool_retry', {
      callId: call.callId,
      toolUseId: call.use.id,
      tool: call.tool.name,
      ...retry,
    });
  }
  const { execution } = done;
  const refs: string[] = [];
  if (execution.stdout.length > 0)
    refs.push(await deps.recorder.output(`${call.callId}.stdout`, execution.stdout));
  if (execution.stderr.length > 0)
    refs.push(await deps.recorder.output(`${call.callId}.stderr`, execution.stderr));
  const observation: Observation = { ...done.observation, evidence_refs: refs };
  // The tool's declared output schema holds, or the harness is broken: the run fails and
  // the model hears nothing of it (AH-TOOL-6).
  const checked = call.tool.outputSchema.safeParse(observation);
  if (!checked.success) {
    await deps.recorder.event('tool_executed', {
      callId: call.callId,
      toolUseId: call.use.id,
      tool: call.tool.name,
      status: 'withheld',
      reason: 'output_schema_violation',
      exitCode: execution.exitCode,
      containerId: execution.containerId,
      outputs: refs,
    });
    throw new HarnessInvariantError(
      'tool_output_invalid',
      `${call.tool.name} produced an observation outside its output schema: ${checked.error.message}`,
      { callId: call.callId, tool: call.tool.name },
    );
  }
  await deps.recorder.event('tool_executed', {
    callId: call.callId,
    toolUseId: call.use.id,
    tool: call.tool.name,
    status: observation.status,
    exitCode: execution.exitCode,
    durationMs: execution.durationMs,
    containerId: execution.containerId,
    attempts: done.retries.length + 1,
    outputs: refs,
    ...(observation.truncated === undefined ? {} : { truncated: observation.truncated }),
  });
  return observation;
}

/** A bounded input summary for the evidence (AH-TOOL-3). */
function summarize(input: unknown): string {
  const text = input === undefined ? 'undefined' : JSON.stringify(input);
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
