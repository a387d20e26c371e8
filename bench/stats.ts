// Small order statistics for the benches. Percentiles interpolate linearly between the
// closest ranks (the same definition as numpy's default), so p50 of an even count is the
// mean of the two middle samples.

export interface Summary {
  readonly n: number;
  readonly min: number;
  readonly p50: number;
  readonly p90: number;
  readonly mean: number;
  readonly max: number;
}

export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo] ?? Number.NaN;
  const b = sorted[hi] ?? Number.NaN;
  return a + (b - a) * (rank - lo);
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

export function mean(samples: readonly number[]): number {
  if (samples.length === 0) return Number.NaN;
  return samples.reduce((sum, x) => sum + x, 0) / samples.length;
}

export function summarize(samples: readonly number[]): Summary {
  return {
    n: samples.length,
    min: samples.length === 0 ? Number.NaN : Math.min(...samples),
    p50: percentile(samples, 50),
    p90: percentile(samples, 90),
    mean: mean(samples),
    max: samples.length === 0 ? Number.NaN : Math.max(...samples),
  };
}

/** One decimal, for tables and the JSON line. */
export function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/** Three decimals, for ratios. */
export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** A number for a table cell: one decimal, `-` when there is none. */
export function fmt(x: number): string {
  return Number.isFinite(x) ? x.toFixed(1) : '-';
}

/** A summary with one decimal, for the JSON line. */
export function rounded(s: Summary): Record<string, number> {
  return {
    n: s.n,
    p50: round1(s.p50),
    p90: round1(s.p90),
    mean: round1(s.mean),
    min: round1(s.min),
    max: round1(s.max),
  };
}
