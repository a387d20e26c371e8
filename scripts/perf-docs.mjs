#!/usr/bin/env node
// Regenerates the issue-21 table in docs/operators.md ("Performance") from `make bench-all`:
// runs `bench/run.sh all --markdown` (or reads its output from the file given as the first
// argument) and replaces what stands between the two marker comments, dated. Nothing
// outside the markers is touched: the notes beside the figures are written by hand.
//   node scripts/perf-docs.mjs [BENCH_ALL_MARKDOWN_FILE]
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const doc = path.join(root, 'docs', 'operators.md');
const BEGIN = '<!-- bench-all:begin (scripts/perf-docs.mjs writes this table) -->';
const END = '<!-- bench-all:end -->';

const table =
  process.argv[2] !== undefined
    ? readFileSync(process.argv[2], 'utf8')
    : execFileSync(path.join(root, 'bench', 'run.sh'), ['all', '--markdown'], {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      });
// bench output before the table (leftover checks) is not part of it.
const start = table.indexOf('| figure |');
if (start < 0) throw new Error('perf-docs: no table in the bench-all output');
const text = readFileSync(doc, 'utf8');
const i = text.indexOf(BEGIN);
const j = text.indexOf(END);
if (i < 0 || j < i) throw new Error(`perf-docs: ${doc} has no ${BEGIN} ... ${END}`);
const day = new Date().toISOString().slice(0, 10);
const body = `${BEGIN}\nMeasured ${day} by \`make bench-all\` on one machine (2 cores shared with other work).\n\n${table.slice(start).trim()}\n`;
writeFileSync(doc, text.slice(0, i) + body + text.slice(j));
// The table as prettier lays it out, so `prettier --check .` stays clean.
execFileSync(path.join(root, 'node_modules', '.bin', 'prettier'), ['--write', doc], {
  stdio: 'ignore',
});
console.log(`perf-docs: ${path.relative(root, doc)} updated`);
