// bench/bench-all.ts: every figure of issue 21 in one table of ratios (`make bench-all`).
//
// The convention: a bench that contributes figures exports
//
//     export async function rows(): Promise<readonly BenchRow[]>   (BenchRow: bench-util.ts)
//
// which measures its figures, each against a baseline run side by side in the same call
// (the baseline named in the row), and cleans up after itself (throwing if it left an engine
// object behind). It may also run alone (bench/run.sh NAME) and print its rows with
// printRows. To add a figure, add the module to SOURCES below: a source whose module is
// absent (another workstream's bench not merged yet) is reported as missing, not failed.
//
//   bench/run.sh all              the table, as text
//   bench/run.sh all --markdown   the same as a Markdown table, for docs/operators.md
//                                 (scripts/perf-docs.mjs puts it between the markers)
// BENCH_ONLY=startup,load runs a subset.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { printRows, runBench, valueDigits, type BenchRow } from './bench-util.js';

interface Source {
  readonly name: string;
  /** Module beside this one (compiled: dist-bench/bench/NAME.js). */
  readonly module: string;
}

const SOURCES: readonly Source[] = [
  { name: 'startup', module: 'startup' }, // P1: whole-process start-up
  { name: 'cold-path', module: 'cold-path' }, // P1: in-process cold path
  { name: 'load', module: 'load' }, // P1: 16 command + 8 agent runs at once
  { name: 'flood', module: 'flood' }, // P1: RSS under a 1 GiB flood
  { name: 'pool', module: 'tool-pool' }, // P2: per-call tool call with the warm pool
  { name: 'posture', module: 'posture-setup' }, // P3: allowlist/open set-up
  { name: 'egress', module: 'egress-gateway' }, // P3: egress throughput and latency
  { name: 'session', module: 'session' }, // sessions: turn overhead, MCP sandbox_exec
  { name: 'children', module: 'children' }, // delegation: a child's cost, 8 side by side
  { name: 'model-gateways', module: 'model-gateways' }, // openai-compatible vs anthropic turn
];

function markdown(list: readonly (BenchRow & { source: string })[]): string {
  const cell = (s: string): string => s.replaceAll('|', '\\|');
  const lines = [
    '| figure | value | goal | met | baseline (same run) |',
    '| --- | ---: | --- | --- | --- |',
  ];
  for (const r of list) {
    const v =
      r.unit === 'x' ? `×${r.value.toFixed(2)}` : `${r.value.toFixed(valueDigits(r))} ${r.unit}`;
    lines.push(
      `| ${cell(r.figure)} | ${v} | ${cell(r.goal)} | ${r.met ? 'yes' : '**no**'} | ${cell(r.baseline)} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<number> {
  const only = process.env.BENCH_ONLY?.split(',').filter((s) => s !== '');
  const all: (BenchRow & { source: string })[] = [];
  const missing: string[] = [];
  let failed = 0;
  for (const source of SOURCES) {
    if (only !== undefined && !only.includes(source.name)) continue;
    const url = new URL(`./${source.module}.js`, import.meta.url);
    if (!existsSync(fileURLToPath(url))) {
      missing.push(source.name);
      continue;
    }
    try {
      const mod = (await import(url.href)) as { rows?: () => Promise<readonly BenchRow[]> };
      if (mod.rows === undefined) throw new Error(`${source.module}.js exports no rows()`);
      for (const r of await mod.rows()) all.push({ ...r, source: source.name });
    } catch (error) {
      failed += 1;
      console.error(
        `bench-all: ${source.name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    }
  }
  if (process.argv.includes('--markdown')) {
    console.log(markdown(all));
    if (missing.length > 0)
      console.log(`\nNot measured here (no bench yet): ${missing.join(', ')}.`);
  } else {
    printRows('issue 21 figures (medians; baselines run side by side in the same process)', all);
    if (missing.length > 0) console.log(`\nno bench yet: ${missing.join(', ')}`);
  }
  return failed === 0 ? 0 : 1;
}

runBench(main);
