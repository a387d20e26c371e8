// Usage and cost evidence (AH-USAGE-1..6): counters kept exactly as reported per attempt,
// the report carrying the same, the estimate kept apart from any charge with its rate card
// and priced again from the counters, and the aggregate omitted, with a typed reason, when
// any attempt lacks a price.
import { z } from 'zod';
import {
  estimateAttempt,
  loadRateCard,
  RATE_CARD_FILE,
  ROUTE_PRICING_FILE,
  routeRateCard,
  type RateCard,
} from '../../model/cost.js';
import { reportedCounters } from '../../model/usage.js';
import { CostEstimate, UsageRecord } from '../schema/report.js';
import { at, fail, inconclusive, notApplicable, pass, warn, type Check } from './check.js';
import { canonicalJson } from '../canonical-json.js';
import { hasKey, partOf } from './parts.js';
import { eventsOf, unreadable, type RunEvidence, type TypedEvent } from './run-evidence.js';

export const usageReportedCheck: Check = {
  id: 'usage.as-reported',
  title: 'usage counters per attempt exactly as reported, and the report keeps the same',
  clauses: ['AH-USAGE-1', 'AH-USAGE-3', 'AH-USAGE-6'],
  run({ run }) {
    const completed = eventsOf(run, 'model_call_completed');
    if (completed.length === 0 && unreadable(run, 'model_call_completed') === 0)
      return notApplicable('no model attempt');
    if (unreadable(run, 'model_call_completed') > 0)
      return inconclusive('a model_call_completed event is unreadable');
    const where: string[] = [];
    const started = new Set(eventsOf(run, 'model_call_started').map((e) => e.data.attemptId));
    const seen = new Set<string>();
    for (const e of completed) {
      if (seen.has(e.data.attemptId))
        where.push(`${at(e)}: attempt ${e.data.attemptId} completed twice`);
      seen.add(e.data.attemptId);
      if (!started.has(e.data.attemptId))
        where.push(`${at(e)}: attempt ${e.data.attemptId} was never started`);
    }
    if (eventsOf(run, 'run_finished').length > 0) {
      const reported = partOf(run.report.value, 'usage', z.array(UsageRecord));
      if (!reported.ok) where.push('report.json usage: missing or unreadable');
      else {
        if (reported.value.length !== completed.length)
          where.push(
            `report.json usage: ${reported.value.length} attempts, the log has ${completed.length}`,
          );
        for (const [i, e] of completed.entries()) {
          const r = reported.value[i];
          if (r === undefined) continue;
          const want = {
            attemptId: e.data.attemptId,
            adapter: e.data.adapter,
            model: e.data.model,
            usage: e.data.usage,
          };
          if (canonicalJson(r) !== canonicalJson(want))
            where.push(
              `report.json usage[${i}]: differs from ${at(e)} (a counter added, dropped or changed)`,
            );
        }
      }
    }
    return where.length === 0
      ? pass(`${completed.length} attempt(s); counters as reported, the same in the report`)
      : fail('usage not kept as reported', where);
  },
};

const Coverage = z.looseObject({ scope: z.string(), attempts: z.number() });

/** A route's own prices, as the snapshot records the route and the resolved profile. */
const RoutePriced = z.looseObject({
  model: z.looseObject({ route: z.looseObject({ model: z.string() }) }),
  profile: z.looseObject({
    resolved: z.looseObject({
      model: z.looseObject({
        pricing: z.looseObject({ inputPerMTok: z.number(), outputPerMTok: z.number() }),
      }),
    }),
  }),
});

/** The card a run priced with from its profile's `model.pricing` (cost.ts routeRateCard), rebuilt. */
function routeCardOf(run: RunEvidence): RateCard | undefined {
  const snapshot = RoutePriced.safeParse(run.snapshot.value);
  if (!snapshot.success) return undefined;
  const { model, profile } = snapshot.data;
  return routeRateCard(model.route.model, profile.resolved.model.pricing);
}

let card: RateCard | undefined;
/** The rate card cfh prices with (model/cost.ts), read once. */
function rateCard(): RateCard {
  card ??= loadRateCard();
  return card;
}

/**
 * Each attempt's estimate priced again from its recorded counters with the card the report
 * names (model/cost.ts estimateAttempt, the function that priced it): a counter dropped from
 * the log and the report alike leaves an estimate that no longer adds up. Undefined: the card
 * is another version than the run's, so nothing can be priced again.
 */
function repriced(
  completed: readonly TypedEvent<'model_call_completed'>[],
  named: { readonly file: string; readonly version: string },
  run: RunEvidence,
): string[] | undefined {
  const now = named.file === ROUTE_PRICING_FILE ? routeCardOf(run) : rateCard();
  if (now === undefined) return undefined;
  if ((now.file ?? RATE_CARD_FILE) !== named.file || named.version !== now.version)
    return undefined;
  const out: string[] = [];
  for (const e of completed) {
    const { attemptId, model, usage, costEstimate } = e.data;
    const again = estimateAttempt(now, attemptId, model, reportedCounters(usage));
    if (costEstimate !== undefined && canonicalJson(costEstimate) !== canonicalJson(again))
      out.push(
        `${at(e)}: estimate ${JSON.stringify(costEstimate)}, its counters price at ${JSON.stringify(again)}`,
      );
  }
  return out;
}

export const costProvenanceCheck: Check = {
  id: 'usage.cost',
  title:
    'cost estimate apart from any charge, each attempt priced again from its counters; no total over incomplete coverage',
  clauses: ['AH-USAGE-2', 'AH-USAGE-4', 'AH-USAGE-5'],
  run({ run }) {
    const completed = eventsOf(run, 'model_call_completed');
    if (completed.length === 0) return notApplicable('no model attempt');
    if (eventsOf(run, 'run_finished').length === 0)
      return inconclusive('no report yet: the run is not finished');
    const where: string[] = [];
    const cost = partOf(run.report.value, 'costEstimate', CostEstimate);
    if (!cost.ok)
      return fail('report.json costEstimate: missing or unreadable', ['report.json costEstimate']);
    const c = cost.value;
    if (!hasKey(run.report.value, 'providerReportedCost'))
      where.push('report.json: no providerReportedCost field apart from the estimate');
    const coverage = partOf(run.report.value, 'usageCoverage', Coverage);
    if (!coverage.ok)
      where.push('report.json usageCoverage: missing (an aggregate must say what it covers)');
    else if (coverage.value.attempts !== completed.length)
      where.push(
        `report.json usageCoverage: ${coverage.value.attempts} attempts, the log has ${completed.length}`,
      );
    const fromEvents = completed.map((e) => e.data.costEstimate);
    if (canonicalJson(fromEvents) !== canonicalJson(c.perAttempt))
      where.push('report.json costEstimate.perAttempt: differs from the attempts in the log');
    const priced = c.perAttempt.every((a) => 'estimated' in a);
    if (c.perAttempt.length === 0) {
      if (c.total !== undefined || c.totalOmitted !== 'no_attempts')
        where.push('report.json costEstimate: no attempts, yet not totalOmitted: no_attempts');
    } else if (!priced) {
      if (c.total !== undefined)
        where.push('report.json costEstimate.total: given although an attempt has no estimate');
      if (c.totalOmitted !== 'incomplete_coverage')
        where.push(
          'report.json costEstimate: an attempt is unpriced, yet totalOmitted is not incomplete_coverage',
        );
    } else {
      const sum = c.perAttempt.reduce((s, a) => s + ('estimated' in a ? a.estimated : 0), 0);
      if (c.total === undefined || Math.abs(c.total - sum) > 1e-6)
        where.push(
          `report.json costEstimate.total: ${String(c.total)}, the attempts add up to ${sum}`,
        );
    }
    const again = repriced(completed, c.rateCard, run);
    where.push(...(again ?? []));
    if (where.length === 0 && again === undefined)
      return warn(
        `estimate from rate card ${c.rateCard.version} (${c.rateCard.file}), which cfh no longer has (it has ${rateCard().version}): its attempts cannot be priced again`,
      );
    return where.length === 0
      ? pass(
          c.total === undefined
            ? `estimate from rate card ${c.rateCard.version}; total omitted (${String(c.totalOmitted)})`
            : `estimate ${c.total} ${c.currency} from rate card ${c.rateCard.version}, never a charge`,
        )
      : fail('cost evidence without its provenance or over incomplete coverage', where);
  },
};
