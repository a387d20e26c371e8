// `make bench-audit`: cfh audit and cfh runs report on a large agent run (1,000 tool calls,
// 10,000 events; BENCH_AUDIT_CALLS, BENCH_AUDIT_EVENTS), made through the real writer
// classes (bench/synthetic-run.ts). Every figure is a ratio against a baseline in the same
// process: writing the run against appending the same lines raw; the audit against reading
// and hashing every file of the run and parsing every line; the report's load time in
// headless Chromium against a plain page of the same size.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile, appendFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { auditEvidence, auditRunDirectory } from '../src/evidence/audit/audit.js';
import { loadRunEvidence } from '../src/evidence/audit/run-evidence.js';
import { renderRunReport } from '../src/evidence/report/render-report.js';
import { escapeText } from '../src/evidence/report/html.js';
import { intFromEnv, table } from './bench-util.js';
import { median } from './stats.js';
import { writeSyntheticRun } from './synthetic-run.js';

const CALLS = intFromEnv('BENCH_AUDIT_CALLS', 1000, 1);
const EVENTS = intFromEnv('BENCH_AUDIT_EVENTS', 10_000, 100);
const ROUNDS = intFromEnv('BENCH_AUDIT_ROUNDS', 5, 1);

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function baselineRead(dir: string, files: readonly string[]): Promise<void> {
  for (const f of files)
    createHash('sha256')
      .update(await readFile(path.join(dir, f)))
      .digest('hex');
  for (const l of (await readFile(path.join(dir, 'events.jsonl'), 'utf8')).split('\n'))
    if (l !== '') JSON.parse(l);
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'cfh-bench-audit-'));
  try {
    const ws = path.join(scratch, 'ws');
    await mkdir(ws);
    const write: number[] = [];
    const raw: number[] = [];
    let run = await writeSyntheticRun(path.join(scratch, 'runs-0'), ws, CALLS, EVENTS);
    const lines = (await readFile(path.join(run.dir, 'events.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l !== '');
    for (let i = 1; i <= Math.min(ROUNDS, 3); i += 1) {
      write.push(
        await timed(async () => {
          run = await writeSyntheticRun(path.join(scratch, `runs-${i}`), ws, CALLS, EVENTS);
        }),
      );
      const file = path.join(scratch, `raw-${i}.jsonl`);
      raw.push(
        await timed(async () => {
          for (const l of lines) await appendFile(file, `${l}\n`);
        }),
      );
    }
    const evidence = await loadRunEvidence(run.dir);
    const files = evidence.files.map((f) => f.rel);
    const audit: number[] = [];
    const base: number[] = [];
    let verdicts = '';
    for (let i = 0; i < ROUNDS; i += 1) {
      base.push(await timed(() => baselineRead(run.dir, files)));
      audit.push(
        await timed(async () => {
          const r = await auditRunDirectory(run.dir);
          verdicts = `${r.counts.pass} pass, ${r.counts.fail} fail, ${r.counts.warn} warn, ${r.counts.inconclusive} inconclusive, ${r.counts['not-applicable']} n/a`;
        }),
      );
    }
    const page = await renderRunReport(evidence, auditEvidence(evidence));
    const reportFile = path.join(scratch, 'report.html');
    await writeFile(reportFile, page);
    const plain = `<!doctype html><meta charset="utf-8"><pre>${escapeText(lines.join('\n')).slice(0, page.length)}</pre>`;
    const plainFile = path.join(scratch, 'plain.html');
    await writeFile(plainFile, plain);
    const profile = path.join(scratch, 'chromium');
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CFH_CHROMIUM ?? '/usr/bin/chromium',
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-dev-shm-usage',
      ],
    });
    const load: number[] = [];
    const loadPlain: number[] = [];
    try {
      for (let i = 0; i < ROUNDS; i += 1) {
        for (const [file, into] of [
          [plainFile, loadPlain],
          [reportFile, load],
        ] as const) {
          const p = await context.newPage();
          into.push(await timed(() => p.goto(pathToFileURL(file).href, { waitUntil: 'load' })));
          await p.close();
        }
      }
    } finally {
      await context.close();
    }
    const ms = (n: number): string => `${n.toFixed(1)} ms`;
    console.log(
      `synthetic run: ${CALLS} tool calls, ${run.events} events, ${evidence.files.length} files; audit: ${verdicts}`,
    );
    table(
      ['measure (p50)', 'cfh', 'baseline', 'ratio'],
      [
        [
          'write the run (RunDirectory, schema-checked) / raw appends',
          ms(median(write)),
          ms(median(raw)),
          (median(write) / median(raw)).toFixed(2),
        ],
        [
          'cfh audit / read + hash every file + parse every line',
          ms(median(audit)),
          ms(median(base)),
          (median(audit) / median(base)).toFixed(2),
        ],
        [
          `report load in Chromium (${(page.length / 1024 / 1024).toFixed(2)} MiB) / plain page`,
          ms(median(load)),
          ms(median(loadPlain)),
          (median(load) / median(loadPlain)).toFixed(2),
        ],
      ],
    );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
