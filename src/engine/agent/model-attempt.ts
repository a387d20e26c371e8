// One model attempt, as every request of a run is made (AH-LIFE-4, AH-USAGE-1/4): its worst
// case reserved against the budgets before it is sent (a request they cannot hold is never
// sent, and its max_tokens is what they leave), `model_call_started`, the request, the usage
// exactly as reported, the harness's estimate on `model_call_completed`, and what the
// provider billed charged. The loop's turns and compaction's summarising requests share it.
import type { BudgetExceeded, BudgetTracker, TurnCost } from './budgets.js';
import { estimateAttempt, type RateCard } from '../../model/cost.js';
import type {
  ModelGateway,
  ModelRequest,
  ModelResponse,
  ReportedUsage,
} from '../../model/gateway.js';
import type { ToolCallRecorder } from './tool-call-deps.js';
import { billedTurn, reserveRequest } from './request-reservation.js';

export interface AttemptDeps {
  readonly gateway: ModelGateway;
  readonly recorder: Pick<ToolCallRecorder, 'event'>;
  readonly budgets: BudgetTracker;
  readonly card?: RateCard | undefined;
}

export interface AttemptUsage {
  readonly attemptId: string;
  readonly adapter: string;
  readonly model: string;
  readonly usage: ReportedUsage;
}

export interface Attempted {
  readonly response: ModelResponse;
  /** A budget the provider's bill went past (beyond the reservation), else undefined. */
  readonly charged: BudgetExceeded | undefined;
}

/**
 * Sends `request` as attempt `attemptId` with at most `cap` output tokens; `record` gets its
 * usage as soon as it is known. Returns the budget that refused it before it was sent.
 */
export async function modelAttempt(
  request: Omit<ModelRequest, 'maxOutputTokens'>,
  cap: number,
  attemptId: string,
  deps: AttemptDeps,
  record: (usage: AttemptUsage) => void,
  signal: AbortSignal,
): Promise<Attempted | { readonly refused: BudgetExceeded }> {
  const { gateway, budgets, card } = deps;
  const reserved = await reserveRequest(request, cap, gateway, budgets, card, signal);
  if ('budget' in reserved) return { refused: reserved };
  await deps.recorder.event('model_call_started', {
    attemptId,
    adapter: gateway.adapter,
    route: gateway.route,
    maxTokens: reserved.maxTokens,
    reserved: {
      inputTokens: reserved.inputTokens,
      counted: reserved.counted,
      ...(reserved.cost === undefined ? {} : { cost: reserved.cost }),
    },
  });
  const response = await gateway.complete(
    { ...request, maxOutputTokens: reserved.maxTokens },
    signal,
  );
  const usage = { attemptId, adapter: gateway.adapter, model: response.model };
  record({ ...usage, usage: response.usage });
  const estimate =
    card === undefined
      ? undefined
      : estimateAttempt(card, attemptId, response.model, response.usage);
  await deps.recorder.event('model_call_completed', {
    ...usage,
    stopReason: response.stopReason,
    usage: response.usage,
    ...(estimate === undefined ? {} : { costEstimate: estimate }),
  });
  const cost: TurnCost =
    estimate === undefined ? undefined : 'estimated' in estimate ? estimate.estimated : 'unpriced';
  // What the provider billed; past a limit only if it billed past the reservation.
  const charged = budgets.recordModelTurn(
    billedTurn(response.usage, reserved, cost, response.unbilled === true),
  );
  return { response, charged };
}
