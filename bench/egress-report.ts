// The egress gateway bench's report (bench/egress-gateway.ts measures): latency and
// throughput through the gateway against direct, the targets, the event check, one JSON line.
import os from 'node:os';
import { table } from './bench-util.js';
import { MODES, SMALL_BYTES, TARGETS, type Layout, type Mode, type Target } from './egress-load.js';
import { mean, median, percentile, round1, round3 } from './stats.js';

/**
 * The targets (issue 21): at most 0.3 ms added per fresh connection at p50; a large download
 * at least 0.8 of direct throughput.
 */
export const ADDED_P50_MAX_MS = 0.3;
export const THROUGHPUT_MIN_RATIO = 0.8;

export const GATEWAY_TARGETS = ['pinned', 'name'] as const;
export type GatewayTarget = (typeof GATEWAY_TARGETS)[number];

export interface LatencySummary {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

export function summarizeLatency(samples: readonly number[]): LatencySummary {
  return {
    n: samples.length,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    mean: mean(samples),
    min: samples.length === 0 ? Number.NaN : Math.min(...samples),
    max: samples.length === 0 ? Number.NaN : Math.max(...samples),
  };
}

export interface ThroughputSummary {
  readonly reps: readonly number[];
  readonly median: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

export function summarizeThroughput(reps: readonly number[]): ThroughputSummary {
  return {
    reps,
    median: median(reps),
    mean: mean(reps),
    min: Math.min(...reps),
    max: Math.max(...reps),
  };
}

export function ms3(x: number): string {
  return Number.isFinite(x) ? x.toFixed(3) : '-';
}

export function signed3(x: number): string {
  return `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;
}

function seriesName(target: Target): string {
  return target === 'direct' ? 'direct' : `gateway-${target}`;
}

function roundLatency(s: LatencySummary): Record<string, number> {
  return {
    n: s.n,
    p50: round3(s.p50),
    p99: round3(s.p99),
    mean: round3(s.mean),
    min: round3(s.min),
    max: round3(s.max),
  };
}

/** What one run of the bench measured. */
export interface EgressResults {
  readonly layout: Layout;
  readonly requests: number;
  readonly warmup: number;
  readonly batch: number;
  readonly downloads: number;
  readonly downloadWarmup: number;
  readonly largeMiB: number;
  readonly largeBytes: number;
  readonly lat: Record<Mode, Record<Target, LatencySummary>>;
  readonly thr: Record<Target, ThroughputSummary>;
  /** The gateway's events checked against the client's connections. */
  readonly events: {
    readonly seen: number;
    readonly expected: number;
    readonly stray: number;
    readonly lines: readonly string[];
    readonly problems: readonly string[];
    readonly verification: Record<string, unknown>;
  };
}

/** The gateway against direct: added latency, ratios, and whether the targets are met. */
export function judge(r: EgressResults) {
  const { lat, thr } = r;
  const added = Object.fromEntries(
    MODES.map((mode) => [
      mode,
      Object.fromEntries(
        GATEWAY_TARGETS.map((t) => [
          t,
          {
            p50: round3(lat[mode][t].p50 - lat[mode].direct.p50),
            p99: round3(lat[mode][t].p99 - lat[mode].direct.p99),
          },
        ]),
      ),
    ]),
  ) as Record<Mode, Record<GatewayTarget, { p50: number; p99: number }>>;
  const latencyRatio = Object.fromEntries(
    MODES.map((mode) => [
      mode,
      Object.fromEntries(
        GATEWAY_TARGETS.map((t) => [
          t,
          {
            p50: round3(lat[mode][t].p50 / lat[mode].direct.p50),
            p99: round3(lat[mode][t].p99 / lat[mode].direct.p99),
          },
        ]),
      ),
    ]),
  );
  const throughputRatio = Object.fromEntries(
    GATEWAY_TARGETS.map((t) => [
      t,
      {
        median: round3(thr[t].median / thr.direct.median),
        mean: round3(thr[t].mean / thr.direct.mean),
      },
    ]),
  ) as Record<GatewayTarget, { median: number; mean: number }>;
  // Judged on a fresh connection per request: the cost a transparent connection pays.
  const latencyMet = GATEWAY_TARGETS.every((t) => added.close[t].p50 <= ADDED_P50_MAX_MS);
  const throughputMet = GATEWAY_TARGETS.every(
    (t) => throughputRatio[t].median >= THROUGHPUT_MIN_RATIO,
  );
  return { added, latencyRatio, throughputRatio, latencyMet, throughputMet };
}

export function report(r: EgressResults): void {
  const { lat, thr, layout, requests, warmup, batch, downloads, downloadWarmup } = r;
  const { largeMiB, largeBytes } = r;
  const { seen, expected, stray, lines: eventLines, problems, verification } = r.events;
  const { added, latencyRatio, throughputRatio, latencyMet, throughputMet } = judge(r);

  console.log('');
  console.log(
    `latency per request, ms (${requests} per series after ${warmup} warm-up; added and ratio against direct, same mode)`,
  );
  const latencyRows: string[][] = [];
  for (const mode of MODES) {
    const base = lat[mode].direct;
    for (const target of TARGETS) {
      const s = lat[mode][target];
      latencyRows.push([
        `${mode}/${seriesName(target)}`,
        String(s.n),
        ms3(s.p50),
        ms3(s.p99),
        ms3(s.mean),
        ms3(s.min),
        ms3(s.max),
        target === 'direct' ? '-' : signed3(s.p50 - base.p50),
        target === 'direct' ? '-' : signed3(s.p99 - base.p99),
        (s.p50 / base.p50).toFixed(3),
        (s.p99 / base.p99).toFixed(3),
      ]);
    }
  }
  table(
    ['series', 'n', 'p50', 'p99', 'mean', 'min', 'max', 'added p50', 'added p99', 'p50 x', 'p99 x'],
    latencyRows,
  );

  console.log('');
  console.log(
    `large download throughput, MB/s of body (${largeMiB} MiB, 1 MB = 10^6 B; ${downloads} reps after ${downloadWarmup} warm-up)`,
  );
  table(
    ['series', 'median', 'mean', 'min', 'max', 'median x', 'reps'],
    TARGETS.map((t) => {
      const s = thr[t];
      return [
        seriesName(t),
        s.median.toFixed(0),
        s.mean.toFixed(0),
        s.min.toFixed(0),
        s.max.toFixed(0),
        (s.median / thr.direct.median).toFixed(3),
        s.reps.map((r) => r.toFixed(0)).join(' '),
      ];
    }),
  );

  console.log('');
  for (const mode of MODES) {
    console.log(
      `gateway adds (${mode}): ` +
        GATEWAY_TARGETS.map(
          (t) =>
            `${t} ${signed3(added[mode][t].p50)} ms at p50, ${signed3(added[mode][t].p99)} ms at p99`,
        ).join('; '),
    );
  }
  console.log(
    `gateway / direct throughput (median): ` +
      GATEWAY_TARGETS.map((t) => `${t} ${throughputRatio[t].median.toFixed(3)}`).join('; '),
  );
  console.log(
    `target added p50 <= ${ADDED_P50_MAX_MS} ms (fresh connection per request): ${latencyMet ? 'met' : 'NOT met'}` +
      ` (${GATEWAY_TARGETS.map((t) => `${t} ${signed3(added.close[t].p50)}`).join(', ')}; reported only, not asserted)`,
  );
  console.log(
    `target throughput >= ${THROUGHPUT_MIN_RATIO.toFixed(2)} x direct (large download): ${throughputMet ? 'met' : 'NOT met'}` +
      ` (${GATEWAY_TARGETS.map((t) => `${t} ${throughputRatio[t].median.toFixed(3)}`).join(', ')}; reported only, not asserted)`,
  );

  console.log('');
  console.log(
    `gateway events: ${seen} seen, ${expected} expected (one per gateway connection), ${stray} stray`,
  );
  for (const l of eventLines) console.log(l);
  console.log(`event check: ${problems.length === 0 ? 'ok' : `${problems.length} PROBLEM(S)`}`);
  for (const p of problems) console.log(`  problem: ${p}`);

  console.log('');
  console.log(
    JSON.stringify({
      bench: 'egress-gateway',
      node: process.version,
      cpus: os.cpus().length,
      layout,
      requests,
      warmup,
      batch,
      smallBytes: SMALL_BYTES,
      largeBytes,
      downloads,
      unit: { latency: 'ms', throughput: 'MB/s' },
      latency: Object.fromEntries(
        MODES.map((mode) => [
          mode,
          Object.fromEntries(TARGETS.map((t) => [t, roundLatency(lat[mode][t])])),
        ]),
      ),
      addedMs: added,
      latencyRatio,
      throughput: Object.fromEntries(
        TARGETS.map((t) => [
          t,
          {
            median: round1(thr[t].median),
            mean: round1(thr[t].mean),
            min: round1(thr[t].min),
            max: round1(thr[t].max),
            reps: thr[t].reps.map(round1),
          },
        ]),
      ),
      throughputRatio,
      target: {
        addedP50MaxMs: ADDED_P50_MAX_MS,
        throughputMinRatio: THROUGHPUT_MIN_RATIO,
        latencyMet,
        throughputMet,
        met: latencyMet && throughputMet,
      },
      events: {
        seen,
        expected,
        stray,
        ok: problems.length === 0,
        ...verification,
      },
    }),
  );
}
