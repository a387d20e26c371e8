// Context compaction in the loop (AH-LIFE-6/7): before each model request the context is
// measured against the profile's threshold (context.compactAt); past it, the older part is
// replaced by a summary the model writes in a summarising request through the same gateway,
// reserved, recorded and charged like any request (compaction-context.ts decides what is
// kept). Each compaction is `compaction_started` then `compaction_completed` or
// `compaction_failed`; a failure leaves the context as it was and is tried again before the
// next request, and a second failure in a row fails the run: the guard is never left off.
//
// Why not the provider's own compaction: the installed SDK's beta `compact_20260112` edit
// returns a signed, partly encrypted `compaction` block that must stand first in the
// conversation in place of what it summarises, prompt slots included; cfh must keep the
// direct command verbatim (AH-LIFE-6) and label the summary (AH-CFC-7), so it summarises
// itself and records the mechanism (snapshot `context`, capabilities `contextCompaction`).
import { CfhError } from '../../errors.js';
import type { BudgetExceeded } from './budgets.js';
import type { ModelGateway, ModelMessage, ReportedUsage } from '../../model/gateway.js';
import type { CfcRuntime } from '../../cfc/runtime.js';
import type { ToolCallRecorder } from './tool-call-deps.js';
import { modelAttempt, type AttemptDeps, type AttemptUsage } from './model-attempt.js';
import {
  compactedMessages,
  contextProblems,
  estimateTokens,
  planCompaction,
  sha256,
  summaryMessage,
  summaryRequest,
} from './compaction-context.js';
import type { CompactAt } from '../../config/context-schema.js';

/** The most a summary may be: a fraction of any window, and of the default output cap. */
export const SUMMARY_OUTPUT_CAP = 4096;
/** Consecutive failures before the run fails (AH-LIFE-7: retried once, then explicit). */
export const MAX_COMPACTION_FAILURES = 2;
/** The recent assistant turns (with their tool results) kept as they are. */
export const KEEP_RECENT_TURNS = 1;

/** The guard as armed for a run: compaction when the context reaches `thresholdTokens`. */
export interface CompactionConfig {
  readonly thresholdTokens: number;
  readonly keepRecent: number;
}

/** What the snapshot and capabilities say of a run's compaction (AH-LIFE-7). */
export interface CompactionSetup {
  readonly compactAt: CompactAt;
  readonly windowTokens: number | null;
  readonly windowSource: 'profile' | 'model' | 'unknown';
  readonly thresholdTokens: number | null;
  /** `armed`: compacts past the threshold; `disabled`: asked; `unavailable`: a fraction of an unknown window. */
  readonly state: 'armed' | 'disabled' | 'unavailable';
  readonly mechanism: 'summary-request' | null;
  readonly keepRecentTurns: number;
  readonly provider: {
    readonly adapter: string;
    readonly native: readonly string[];
    readonly used: false;
    readonly why: string;
  };
}

/** The provider's own context-management strategies the installed SDK offers, per adapter. */
export const NATIVE_STRATEGIES: Readonly<Record<string, readonly string[]>> = {
  anthropic: ['compact_20260112 (beta)', 'clear_tool_uses_20250919 (beta)'],
};

export const NATIVE_NOT_USED =
  'the provider compaction block replaces the prompt slots and is opaque (encrypted, signed), so the direct command could not stay verbatim nor the summary be labelled; cfh summarises with a request of its own';

/** The threshold a profile's `context` section arms for a gateway, and why not when not. */
export function compactionSetup(
  context: { readonly compactAt: CompactAt; readonly windowTokens?: number | undefined },
  gateway: Pick<ModelGateway, 'adapter' | 'contextWindowTokens'>,
): CompactionSetup {
  const window = context.windowTokens ?? gateway.contextWindowTokens;
  const windowSource =
    context.windowTokens !== undefined ? 'profile' : window !== undefined ? 'model' : 'unknown';
  const { compactAt } = context;
  const threshold =
    compactAt === 'disabled'
      ? null
      : compactAt >= 1
        ? compactAt
        : window === undefined
          ? null
          : Math.floor(compactAt * window);
  const state =
    compactAt === 'disabled' ? 'disabled' : threshold === null ? 'unavailable' : 'armed';
  return {
    compactAt,
    windowTokens: window ?? null,
    windowSource,
    thresholdTokens: threshold,
    state,
    mechanism: state === 'armed' ? 'summary-request' : null,
    keepRecentTurns: KEEP_RECENT_TURNS,
    provider: {
      adapter: gateway.adapter,
      native: NATIVE_STRATEGIES[gateway.adapter] ?? [],
      used: false,
      why: NATIVE_NOT_USED,
    },
  };
}

/** The loop's config of an armed guard; undefined: nothing is ever compacted. */
export function compactionConfigOf(setup: CompactionSetup): CompactionConfig | undefined {
  return setup.state === 'armed' && setup.thresholdTokens !== null
    ? { thresholdTokens: setup.thresholdTokens, keepRecent: setup.keepRecentTurns }
    : undefined;
}

/** A conversation's compaction state: carried with it across loops (a session's turns). */
export interface ContextState {
  attempts: number;
  completed: number;
  failures: number;
  /** The last response's reported size, and how many messages it covered. */
  baseline?: { readonly messages: number; readonly tokens: number } | undefined;
}

export interface CompactableConversation {
  readonly messages: ModelMessage[];
  context?: ContextState;
}

function stateOf(conversation: CompactableConversation): ContextState {
  conversation.context ??= { attempts: 0, completed: 0, failures: 0 };
  return conversation.context;
}

/** After a response: the context's size as the provider counted it (input and output). */
export function noteResponse(conversation: CompactableConversation, usage: ReportedUsage): void {
  const state = stateOf(conversation);
  if (usage.input_tokens === undefined) {
    state.baseline = undefined;
    return;
  }
  const tokens =
    usage.input_tokens +
    (usage.cache_creation_input_tokens ?? 0) +
    (usage.cache_read_input_tokens ?? 0) +
    (usage.output_tokens ?? 0);
  state.baseline = { messages: conversation.messages.length, tokens };
}

export interface CompactionDeps extends AttemptDeps {
  readonly recorder: ToolCallRecorder & { transcript(message: ModelMessage): Promise<void> };
  readonly cfc?: CfcRuntime | undefined;
  readonly compaction?: CompactionConfig | undefined;
}

type RequestFrame = { readonly system: string; readonly tools: unknown };

function measure(
  conversation: CompactableConversation,
  state: ContextState,
  frame: RequestFrame,
): { tokens: number; measured: 'reported' | 'estimate' } {
  const b = state.baseline;
  if (b !== undefined && b.messages <= conversation.messages.length)
    return {
      tokens: b.tokens + estimateTokens(conversation.messages.slice(b.messages)),
      measured: 'reported',
    };
  return {
    tokens: estimateTokens({ ...frame, messages: conversation.messages }),
    measured: 'estimate',
  };
}

/**
 * The hook before a model request: compacts when the context is past the threshold and
 * there is something to summarise. Returns the budget a summarising request could not fit
 * or exceeded (the run stops on it, like any request's), else undefined.
 */
export async function compactIfDue(
  conversation: CompactableConversation,
  deps: CompactionDeps,
  frame: RequestFrame,
  record: (usage: AttemptUsage) => void,
  signal: AbortSignal,
): Promise<BudgetExceeded | undefined> {
  const config = deps.compaction;
  if (config === undefined) return undefined;
  const state = stateOf(conversation);
  const size = measure(conversation, state, frame);
  if (size.tokens < config.thresholdTokens) return undefined;
  const plan = planCompaction(conversation.messages, config.keepRecent);
  if (plan === undefined) return undefined;
  state.attempts += 1;
  const n = state.attempts;
  const attemptId = `compact-${n}`;
  await deps.recorder.event(
    'compaction_started',
    {
      n,
      measuredTokens: size.tokens,
      measured: size.measured,
      thresholdTokens: config.thresholdTokens,
      messages: conversation.messages.length,
      retryOf: state.failures,
    },
    true,
  );
  let sent = false;
  try {
    const before = deps.budgets.beforeModelTurn();
    if (before !== undefined) return await failOnBudget(deps, n, state, before);
    const request = { ...summaryRequest(plan), purpose: 'compaction' as const };
    sent = true;
    const attempt = await modelAttempt(
      request,
      SUMMARY_OUTPUT_CAP,
      attemptId,
      deps,
      record,
      signal,
    );
    if ('refused' in attempt) {
      sent = false;
      return await failOnBudget(deps, n, state, attempt.refused);
    }
    const { response, charged } = attempt;
    const summary = response.content
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join('\n')
      .trim();
    if (response.content.some((b) => b.type === 'tool_use'))
      throw new CompactionError('the summarising request answered with a tool call');
    if (summary === '') throw new CompactionError('the summarising request returned no summary');
    if (response.stopReason === 'max_tokens')
      throw new CompactionError('the summary was cut at max_tokens');
    const next = compactedMessages(plan, n, summary);
    const problems = contextProblems(next);
    if (problems.length > 0)
      throw new CompactionError(`the compacted context is not valid: ${problems.join('; ')}`);
    const messagesBefore = conversation.messages.length;
    conversation.messages.splice(0, conversation.messages.length, ...next);
    state.failures = 0;
    state.completed += 1;
    state.baseline = undefined;
    // What the model is sent from now on in place of the summarised messages.
    await deps.recorder.transcript(summaryMessage(n, summary));
    const l = deps.cfc?.mode === 'disabled' ? undefined : deps.cfc?.context();
    await deps.recorder.event(
      'compaction_completed',
      {
        n,
        mechanism: 'summary-request',
        attemptId,
        summarised: plan.summarised.length,
        keptSlots: plan.slots.length,
        keptTail: plan.tail.length,
        messagesBefore,
        messagesAfter: next.length,
        estimatedTokensAfter: estimateTokens({ ...frame, messages: next }),
        summary: { chars: summary.length, sha256: sha256(summary) },
        // AH-CFC-7: the summary carries the join of what it summarises: the context's label,
        // which compaction never lowers; the authority the context carries is unchanged.
        ...(l === undefined || deps.cfc === undefined
          ? {}
          : {
              label: { confidentiality: [...l.confidentiality], integrity: [...l.integrity] },
              authority: deps.cfc.authority(),
            }),
      },
      true,
    );
    return charged;
  } catch (error) {
    const outcome = await failed(deps, n, state, sent ? attemptId : undefined, error, signal);
    // The context stays as it was; the request goes on and the next one tries again.
    if (outcome === 'retry') return undefined;
    if (outcome === 'aborted') throw error;
    throw new CompactionError(
      `context compaction failed ${state.failures} times in a row (${reasonOf(error)})`,
      error,
    );
  }
}

/** The summarising request failed in a way the run survives until the next retry. */
class CompactionError extends CfhError {
  constructor(message: string, cause?: unknown) {
    super('compaction_failed', message, { boundary: 'model-gateway', exitCode: 1, cause });
  }
}

async function failOnBudget(
  deps: CompactionDeps,
  n: number,
  state: ContextState,
  budget: BudgetExceeded,
): Promise<BudgetExceeded> {
  state.failures += 1;
  await deps.recorder.event(
    'compaction_failed',
    { n, reason: `budget_exceeded:${budget.budget}`, failures: state.failures, retry: 'none' },
    true,
  );
  return budget;
}

function reasonOf(error: unknown): string {
  return error instanceof CfhError ? `${error.code}: ${error.message}`.slice(0, 300) : 'error';
}

/**
 * Records the failure: cancelled (or past the deadline), said and the abort goes on; else
 * retried before the next request, or the run fails after MAX_COMPACTION_FAILURES in a row.
 */
async function failed(
  deps: CompactionDeps,
  n: number,
  state: ContextState,
  attemptId: string | undefined,
  error: unknown,
  signal: AbortSignal,
): Promise<'retry' | 'fail' | 'aborted'> {
  state.failures += 1;
  const aborted = signal.aborted;
  const retry = !aborted && state.failures < MAX_COMPACTION_FAILURES ? 'next_request' : 'none';
  await deps.recorder.event(
    'compaction_failed',
    {
      n,
      ...(attemptId === undefined ? {} : { attemptId }),
      reason: aborted ? 'aborted' : reasonOf(error),
      failures: state.failures,
      retry,
    },
    true,
  );
  return aborted ? 'aborted' : retry === 'next_request' ? 'retry' : 'fail';
}
