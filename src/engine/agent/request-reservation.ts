// The reservation before a model request (AH-LIFE-4: budgets are ceilings). The worst case a
// request can cost is its input (counted) plus its max_tokens of output; the budgets must
// hold it before the request is sent, and max_tokens is capped at what they leave. After the
// response, what the provider billed is charged (billedTurn).
import type {
  BilledTurn,
  BudgetExceeded,
  BudgetTracker,
  TokenPrices,
  TurnCost,
} from './budgets.js';
import type { ModelGateway, ModelRequest, ReportedUsage } from '../../model/gateway.js';
import { ratesFor, type RateCard } from '../../model/cost.js';

/**
 * The provider's framing the request's JSON does not show: role markers, the tool-use
 * system prompt the API adds when tools are given (a few hundred tokens), with room to spare.
 */
export const FRAMING_TOKENS = 2048;

/**
 * An upper bound of a request's input tokens without asking anyone: a token covers at least
 * one byte of its text (byte-level BPE), and the JSON of the request carries every byte of
 * its text, and more (keys, quotes, escapes).
 */
export function inputBound(request: Omit<ModelRequest, 'maxOutputTokens'>): number {
  const { system, messages, tools } = request;
  return Buffer.byteLength(JSON.stringify({ system, messages, tools })) + FRAMING_TOKENS;
}

export interface Reserved {
  readonly inputTokens: number;
  /** `provider`: the gateway counted it; `bound`: inputBound (no count was needed or had). */
  readonly counted: 'provider' | 'bound';
  readonly maxTokens: number;
  readonly cost?: number;
}

export function pricesOf(card: RateCard | undefined, model: string): TokenPrices | undefined {
  const rates = card === undefined ? undefined : ratesFor(card, model)?.rates;
  if (rates === undefined) return undefined;
  const per = (r: number): number => r / 1_000_000;
  return {
    input: per(rates.input),
    output: per(rates.output),
    cacheRead: per(rates.cacheRead),
    cacheWrite: per(rates.cacheWrite),
  };
}

/**
 * Reserves the request against the budgets. A gateway whose count is free (the scripted one)
 * is always asked. Otherwise the bound first (no round trip); when it does not fit, the
 * provider's own count; when that cannot be had, the bound stands and the request is refused
 * (fail closed).
 */
export async function reserveRequest(
  request: Omit<ModelRequest, 'maxOutputTokens'>,
  cap: number,
  gateway: ModelGateway,
  budgets: BudgetTracker,
  card: RateCard | undefined,
  signal: AbortSignal,
): Promise<Reserved | BudgetExceeded> {
  const prices = pricesOf(card, gateway.model);
  const bound = inputBound(request);
  const count = async (): Promise<Reserved | BudgetExceeded | undefined> => {
    const counted = await gateway.countInputTokens({ ...request, maxOutputTokens: cap }, signal);
    if (counted === undefined) return undefined;
    const r = budgets.reserve(counted, cap, prices);
    return 'budget' in r ? r : { ...r, counted: 'provider' };
  };
  if (gateway.counting === 'free') {
    const r = await count();
    if (r !== undefined) return r;
  }
  const first = budgets.reserve(bound, cap, prices);
  if (!('budget' in first)) return { ...first, counted: 'bound' };
  // Nothing a count could change: the output, or a model the card cannot price.
  if (gateway.counting === 'free' || first.unpriced === true) return first;
  if (first.budget !== 'max_input_tokens' && first.budget !== 'max_total_cost') return first;
  return (await count()) ?? first;
}

/**
 * What one attempt is charged: every input kind the provider bills (input_tokens,
 * cache_creation_input_tokens, cache_read_input_tokens: the Messages API documents them as
 * separate, so their sum is what was read), and the output. A counter the provider did not
 * report is charged at its reservation, not zero: the usage record keeps it absent
 * (AH-USAGE-1), the budget assumes the worst. An attempt nothing billed (`unbilled`: a
 * scripted turn with no stated usage) is charged nothing.
 */
export function billedTurn(
  usage: ReportedUsage,
  reserved: Reserved,
  cost: TurnCost,
  unbilled = false,
): BilledTurn {
  if (unbilled) return { inputTokens: 0, outputTokens: 0, cost };
  const input =
    usage.input_tokens === undefined
      ? reserved.inputTokens
      : usage.input_tokens +
        (usage.cache_creation_input_tokens ?? 0) +
        (usage.cache_read_input_tokens ?? 0);
  return { inputTokens: input, outputTokens: usage.output_tokens ?? reserved.maxTokens, cost };
}
