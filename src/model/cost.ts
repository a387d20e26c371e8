// Harness-estimated cost (AH-USAGE-4/5): from a versioned rate card in the repository,
// currency and source named, kept apart from any provider-reported cost. An attempt whose
// counters or model the card cannot price gets no estimate and a typed reason; the total
// is omitted when any attempt lacks one.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PACKAGE_ROOT } from '../paths.js';
import type { ModelGateway, ReportedUsage, RoutePricing } from './gateway.js';

const Rates = z.strictObject({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  cacheRead: z.number().nonnegative(),
  cacheWrite: z.number().nonnegative(),
});

export const RateCard = z.strictObject({
  schema: z.literal('cfh.rate-card/1'),
  version: z.string().min(1),
  currency: z.string().min(3),
  unit: z.literal('per million tokens'),
  source: z.string().min(1),
  /** When and against which published prices the card was last checked, and what was found. */
  checked: z
    .strictObject({
      on: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
      against: z.array(z.string().min(1)).min(1),
      notes: z.array(z.string()).default([]),
    })
    .optional(),
  models: z.record(z.string(), Rates),
  /**
   * A route's own card (routeRateCard): where it came from, instead of RATE_CARD_FILE, and
   * the prices that hold whatever model id the endpoint answers with (`as`: the route's).
   */
  file: z.string().min(1).optional(),
  anyModel: z.strictObject({ as: z.string().min(1), rates: Rates }).optional(),
});
export type RateCard = z.infer<typeof RateCard>;

export const RATE_CARD_FILE = 'rate-cards/anthropic.json';

/** What a route's own card names as its file: the profile section it was written in. */
export const ROUTE_PRICING_FILE = 'profile model.pricing';

/**
 * The card of a route whose profile states its prices (`model.pricing`): the operator's own
 * figures, for input and output (an endpoint of the openai-compatible family reports no
 * cache counters apart). Its version names the figures, so the audit, rebuilding it from the
 * snapshot, knows it has the same card.
 */
export function routeRateCard(model: string, pricing: RoutePricing): RateCard {
  const rates = {
    input: pricing.inputPerMTok,
    output: pricing.outputPerMTok,
    cacheRead: 0,
    cacheWrite: 0,
  };
  return {
    schema: 'cfh.rate-card/1',
    version: `${model}: ${String(rates.input)} in, ${String(rates.output)} out`,
    currency: 'USD',
    unit: 'per million tokens',
    source: "the profile's model.pricing: the operator's own prices for this route",
    models: { [model]: rates },
    file: ROUTE_PRICING_FILE,
    anyModel: { as: model, rates },
  };
}

export function loadRateCard(file = path.join(PACKAGE_ROOT, RATE_CARD_FILE)): RateCard {
  return RateCard.parse(JSON.parse(readFileSync(file, 'utf8')));
}

/** The card a gateway's attempts are priced with: its route's own, else the repository's. */
export function rateCardOf(gateway: Pick<ModelGateway, 'model' | 'pricing'>): RateCard {
  return gateway.pricing === undefined
    ? loadRateCard()
    : routeRateCard(gateway.model, gateway.pricing);
}

export type NoEstimateReason =
  'unsupported_pricing' | 'missing_provider_detail' | 'invalid_counters';

export type AttemptEstimate =
  | {
      readonly attemptId: string;
      readonly estimated: number;
      /** The rate-card entry used, when it is not the model id the provider answered with. */
      readonly pricedAs?: string;
    }
  | { readonly attemptId: string; readonly omitted: NoEstimateReason };

export interface CostEstimate {
  readonly kind: 'harness-estimate';
  readonly currency: string;
  readonly rateCard: { readonly file: string; readonly version: string; readonly source: string };
  readonly perAttempt: readonly AttemptEstimate[];
  readonly total?: number;
  readonly totalOmitted?: 'incomplete_coverage' | 'no_attempts';
}

/** A dated snapshot id (`claude-sonnet-4-5-20250929`) ends in `-YYYYMMDD`. */
const DATED_SUFFIX = /-\d{8}$/;

/**
 * The card's entry for `model`: the exact id, else the id without a trailing `-YYYYMMDD`
 * (the provider answers a request for `claude-sonnet-4-5` with the dated snapshot id).
 */
export function ratesFor(
  card: RateCard,
  model: string,
): { readonly rates: RateCard['models'][string]; readonly pricedAs: string } | undefined {
  const exact = Object.hasOwn(card.models, model) ? card.models[model] : undefined;
  if (exact !== undefined) return { rates: exact, pricedAs: model };
  if (!DATED_SUFFIX.test(model)) return anyModel(card);
  const undated = model.replace(DATED_SUFFIX, '');
  const rates = Object.hasOwn(card.models, undated) ? card.models[undated] : undefined;
  if (rates !== undefined) return { rates, pricedAs: undated };
  return anyModel(card);
}

function anyModel(card: RateCard): ReturnType<typeof ratesFor> {
  return card.anyModel === undefined
    ? undefined
    : { rates: card.anyModel.rates, pricedAs: card.anyModel.as };
}

export function estimateAttempt(
  card: RateCard,
  attemptId: string,
  model: string,
  usage: ReportedUsage,
): AttemptEstimate {
  const priced = ratesFor(card, model);
  if (priced === undefined) return { attemptId, omitted: 'unsupported_pricing' };
  const { rates } = priced;
  // Input and output must be reported; cache counters count when reported. The provider
  // documents cache tokens as separate from input_tokens, so they are priced separately.
  if (usage.input_tokens === undefined || usage.output_tokens === undefined) {
    return { attemptId, omitted: 'missing_provider_detail' };
  }
  const counters = [
    usage.input_tokens,
    usage.output_tokens,
    usage.cache_read_input_tokens ?? 0,
    usage.cache_creation_input_tokens ?? 0,
  ];
  if (counters.some((c) => !Number.isFinite(c) || c < 0))
    return { attemptId, omitted: 'invalid_counters' };
  const perToken = (rate: number): number => rate / 1_000_000;
  const estimated =
    usage.input_tokens * perToken(rates.input) +
    usage.output_tokens * perToken(rates.output) +
    (usage.cache_read_input_tokens ?? 0) * perToken(rates.cacheRead) +
    (usage.cache_creation_input_tokens ?? 0) * perToken(rates.cacheWrite);
  return {
    attemptId,
    estimated: Math.round(estimated * 1e8) / 1e8,
    ...(priced.pricedAs === model ? {} : { pricedAs: priced.pricedAs }),
  };
}

export function estimateRun(
  card: RateCard,
  attempts: readonly {
    readonly attemptId: string;
    readonly model: string;
    readonly usage: ReportedUsage;
  }[],
): CostEstimate {
  const perAttempt = attempts.map((a) => estimateAttempt(card, a.attemptId, a.model, a.usage));
  const base = {
    kind: 'harness-estimate' as const,
    currency: card.currency,
    rateCard: { file: card.file ?? RATE_CARD_FILE, version: card.version, source: card.source },
    perAttempt,
  };
  if (perAttempt.length === 0) return { ...base, totalOmitted: 'no_attempts' };
  if (perAttempt.some((a) => 'omitted' in a))
    return { ...base, totalOmitted: 'incomplete_coverage' };
  const total = perAttempt.reduce((sum, a) => sum + ('estimated' in a ? a.estimated : 0), 0);
  return { ...base, total: Math.round(total * 1e8) / 1e8 };
}
