// The cold-path bench's report (bench/cold-path.ts measures): the per-series table, the
// ratios against raw dockerode, where cfh's time goes, and one JSON line.
import type { RunTimings } from '../src/engine/command/sandbox-run.js';
import { table } from './bench-util.js';
import { fmt, median, round1, round3, rounded, summarize, type Summary } from './stats.js';

/** The goal (issue 21): cfh's cold path at most 5% over raw dockerode of its own request. */
export const TARGET_RATIO = 1.05;

export const SERIES = ['raw', 'raw+spec', 'cfh', 'docker-cli'] as const;
export type Series = (typeof SERIES)[number];

export interface RawSample {
  readonly totalMs: number;
  readonly createMs: number;
  readonly startMs: number;
  readonly waitMs: number;
  readonly removeMs: number;
}

export interface CfhSample {
  readonly wallMs: number;
  readonly planMs: number;
  readonly timings: RunTimings;
}

export interface Results {
  readonly rounds: number;
  readonly warmup: number;
  readonly image: string;
  readonly engine: string;
  readonly raw: readonly RawSample[];
  readonly spec: readonly RawSample[];
  readonly cfh: readonly CfhSample[];
  readonly cli: readonly number[];
  readonly leftovers: number;
}

/** Wall time per command of each series. */
export function seriesSummaries(r: Results): Record<Series, Summary> {
  return {
    raw: summarize(r.raw.map((s) => s.totalMs)),
    'raw+spec': summarize(r.spec.map((s) => s.totalMs)),
    cfh: summarize(r.cfh.map((s) => s.wallMs)),
    'docker-cli': summarize(r.cli),
  };
}

export function report(r: Results): void {
  const summaries = seriesSummaries(r);
  const base = summaries.raw;

  console.log('');
  console.log(`per-command wall time, ms (${r.rounds} rounds after ${r.warmup} warm-up)`);
  table(
    ['series', 'p50', 'p90', 'mean', 'min', 'max', 'p50/raw', 'mean/raw'],
    SERIES.map((name) => {
      const s = summaries[name];
      return [
        name,
        fmt(s.p50),
        fmt(s.p90),
        fmt(s.mean),
        fmt(s.min),
        fmt(s.max),
        (s.p50 / base.p50).toFixed(3),
        (s.mean / base.mean).toFixed(3),
      ];
    }),
  );

  const cfhS = summaries.cfh;
  const specS = summaries['raw+spec'];
  const cliS = summaries['docker-cli'];
  const ratios = {
    cfhOverRawP50: round3(cfhS.p50 / base.p50),
    cfhOverRawMean: round3(cfhS.mean / base.mean),
    cliOverRawP50: round3(cliS.p50 / base.p50),
    cliOverRawMean: round3(cliS.mean / base.mean),
    cfhOverRawSpecP50: round3(cfhS.p50 / specS.p50),
    cfhOverRawSpecMean: round3(cfhS.mean / specS.mean),
    rawSpecOverRawP50: round3(specS.p50 / base.p50),
  };
  const cfhAddedMsP50 = round1(cfhS.p50 - base.p50);
  const cfhAddedOverSpecMsP50 = round1(cfhS.p50 - specS.p50);
  // The target is judged against the same container request sent raw: the engine's cost of
  // cfh's settings is not cfh's overhead, and the plain request is not cheaper (see note).
  const targetMet = ratios.cfhOverRawSpecP50 <= TARGET_RATIO;

  console.log('');
  console.log(
    `cfh / raw:          p50 ${ratios.cfhOverRawP50.toFixed(3)}  mean ${ratios.cfhOverRawMean.toFixed(3)}  (cfh adds ${fmt(cfhAddedMsP50)} ms at p50)`,
  );
  console.log(
    `docker-cli / raw:   p50 ${ratios.cliOverRawP50.toFixed(3)}  mean ${ratios.cliOverRawMean.toFixed(3)}`,
  );
  console.log(
    `cfh / raw+spec:     p50 ${ratios.cfhOverRawSpecP50.toFixed(3)}  mean ${ratios.cfhOverRawSpecMean.toFixed(3)}  (cfh's own work beyond its engine request: ${fmt(cfhAddedOverSpecMsP50)} ms at p50)`,
  );
  console.log(
    `target cfh/raw+spec p50 <= ${TARGET_RATIO.toFixed(2)}: ${targetMet ? 'met' : 'NOT met'} (reported only, not asserted)`,
  );
  if (ratios.rawSpecOverRawP50 < 1) {
    // Seen on Docker 20.10: NetworkMode none without NetworkDisabled still has the engine
    // set up (and tear down) a network sandbox at start; cfh's request sets NetworkDisabled.
    console.log(
      `note: cfh's own create request (raw+spec) is cheaper for the engine than the plain one` +
        ` (${ratios.rawSpecOverRawP50.toFixed(3)}x raw at p50; see the start phase), so cfh/raw` +
        ` understates cfh's overhead; cfh/raw+spec measures it.`,
    );
  }

  // Where cfh's time goes. Medians per field: they need not add up to the median total.
  // executeSandboxRun's fields: preflight = orphan sweep + engine info/version + image
  // inspect; create = run directory, snapshot, events, state, container create; start =
  // event, attach, start; run = event + state + wait + inspect; cleanup = remove + event.
  // Between run and cleanup (inside totalMs, in no field): output drain + exit event.
  // After totalMs: run_finished event, report, state, close.
  const cfhMed = (f: (s: CfhSample) => number): number => median(r.cfh.map(f));
  const rawMed = (xs: readonly RawSample[], f: (s: RawSample) => number): number =>
    median(xs.map(f));
  const t = (s: CfhSample): RunTimings => s.timings;
  const inGap = (s: CfhSample): number =>
    t(s).totalMs - (t(s).preflightMs + t(s).createMs + t(s).startMs + t(s).runMs + t(s).cleanupMs);
  const afterTotal = (s: CfhSample): number => s.wallMs - s.planMs - t(s).totalMs;
  const breakdown = {
    planMs: cfhMed((s) => s.planMs),
    preflightMs: cfhMed((s) => t(s).preflightMs),
    createMs: cfhMed((s) => t(s).createMs),
    startMs: cfhMed((s) => t(s).startMs),
    runMs: cfhMed((s) => t(s).runMs),
    drainAndExitEventMs: cfhMed(inGap),
    cleanupMs: cfhMed((s) => t(s).cleanupMs),
    totalMs: cfhMed((s) => t(s).totalMs),
    finalEvidenceMs: cfhMed(afterTotal),
    wallMs: cfhMed((s) => s.wallMs),
  };
  const rawPhase = (xs: readonly RawSample[]) => ({
    createMs: rawMed(xs, (s) => s.createMs),
    startMs: rawMed(xs, (s) => s.startMs),
    waitMs: rawMed(xs, (s) => s.waitMs),
    removeMs: rawMed(xs, (s) => s.removeMs),
    totalMs: rawMed(xs, (s) => s.totalMs),
  });
  const rawPhases = rawPhase(r.raw);
  const specPhases = rawPhase(r.spec);

  console.log('');
  console.log('where the time goes, medians per phase, ms (cfh: outcome.timings + bench clocks)');
  table(
    ['phase', 'cfh', 'raw', 'raw+spec', 'cfh contains'],
    [
      ['plan', fmt(breakdown.planMs), '-', '-', 'planSandboxRun (profile, mounts, spec)'],
      [
        'preflight',
        fmt(breakdown.preflightMs),
        '-',
        '-',
        'engine version (ping headers) + image inspect; sweep runs beside',
      ],
      [
        'create',
        fmt(breakdown.createMs),
        fmt(rawPhases.createMs),
        fmt(specPhases.createMs),
        'run dir + lock, snapshot, 1 event, state; container create',
      ],
      [
        'start',
        fmt(breakdown.startMs),
        fmt(rawPhases.startMs),
        fmt(specPhases.startMs),
        '1 event, attach, start',
      ],
      [
        'run / wait',
        fmt(breakdown.runMs),
        fmt(rawPhases.waitMs),
        fmt(specPhases.waitMs),
        '1 event, state, wait, inspect; orphan sweep overlaps',
      ],
      ['drain + exit event', fmt(breakdown.drainAndExitEventMs), '-', '-', 'in totalMs, no field'],
      [
        'cleanup / remove',
        fmt(breakdown.cleanupMs),
        fmt(rawPhases.removeMs),
        fmt(specPhases.removeMs),
        'container remove, 1 event',
      ],
      ['timings.totalMs', fmt(breakdown.totalMs), '-', '-', ''],
      [
        'final evidence',
        fmt(breakdown.finalEvidenceMs),
        '-',
        '-',
        'run_finished event, report, state, close',
      ],
      ['wall', fmt(breakdown.wallMs), fmt(rawPhases.totalMs), fmt(specPhases.totalMs), ''],
    ],
  );

  const roundAll = (o: Record<string, number>): Record<string, number> =>
    Object.fromEntries(Object.entries(o).map(([k, v]) => [k, round1(v)]));
  console.log('');
  console.log(
    JSON.stringify({
      bench: 'cold-path',
      rounds: r.rounds,
      warmup: r.warmup,
      image: r.image,
      engine: r.engine,
      node: process.version,
      unit: 'ms',
      series: Object.fromEntries(SERIES.map((name) => [name, rounded(summaries[name])])),
      ratios,
      cfhAddedMsP50,
      cfhAddedOverRawSpecMsP50: cfhAddedOverSpecMsP50,
      target: { cfhOverRawSpecP50Max: TARGET_RATIO, met: targetMet },
      cfhTimingsMedian: roundAll(breakdown),
      rawPhasesMedian: roundAll(rawPhases),
      rawSpecPhasesMedian: roundAll(specPhases),
      leftovers: r.leftovers,
    }),
  );
}
