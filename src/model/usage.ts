// Usage counters as a provider reported them (AH-USAGE-1, AH-USAGE-3). A counter is kept
// only when the provider sent it as a number; a missing or null counter stays absent, never
// zero. Nothing here adds, subtracts or relates counters to each other: cache reads and
// writes keep the provider's own semantics.
import type { ReportedUsage } from './gateway.js';

export const USAGE_COUNTERS = [
  'input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation_input_tokens',
] as const satisfies readonly (keyof ReportedUsage)[];

type Counter = (typeof USAGE_COUNTERS)[number];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The counters of one provider usage object that were sent as finite numbers. */
export function reportedCounters(raw: unknown): ReportedUsage {
  return overlayReported({}, raw);
}

/**
 * `base` with every counter `raw` reports as a finite number written over it. A counter that
 * `raw` leaves out (or sends as null) keeps its value in `base`, or stays absent.
 */
export function overlayReported(base: ReportedUsage, raw: unknown): ReportedUsage {
  const out: Partial<Record<Counter, number>> = { ...base };
  if (!isRecord(raw)) return out;
  for (const counter of USAGE_COUNTERS) {
    const value = raw[counter];
    if (typeof value === 'number' && Number.isFinite(value)) out[counter] = value;
  }
  return out;
}
