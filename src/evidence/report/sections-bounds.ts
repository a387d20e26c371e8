// The report's tables of what held the run and what it took: limits and budgets in the
// units people read (1 GiB, 1 CPU, 256 pids, 10 min), the assurance level and what it rests
// on, what the containers used (their cgroups), each approval (rule, tool, who approved at
// which surface, when) and the host tools (program, pins, calls and their outcomes).
import { partOf } from '../audit/parts.js';
import type { RunEvidence } from '../audit/run-evidence.js';
import { ResourcesRecord } from '../schema/report.js';
import { humanBytes, humanCount, humanMs, humanNanoCpus } from '../units.js';
import { html, type Html } from './html.js';
import { mono, section, snapshotOf } from './sections-run.js';

type Row = readonly [label: string, value: string | Html];

function table(rows: readonly Row[]): Html {
  return html`<table class="kv">
    ${rows.map(
      ([k, v]) =>
        html`<tr>
          <th>${k}</th>
          <td>${v}</td>
        </tr>`,
    )}
  </table>`;
}

/** A limit's value in its unit, by the key cfh records it under. */
function limitText(key: string, value: unknown): string {
  if (typeof value !== 'number') return JSON.stringify(value);
  if (/Bytes$/.test(key)) return value < 0 ? 'unlimited' : humanBytes(value);
  if (key === 'nanoCpus') return humanNanoCpus(value);
  if (/Ms$/.test(key)) return humanMs(value);
  if (/Seconds$/.test(key)) return humanMs(value * 1000);
  if (key === 'pidsLimit') return humanCount(value, 'pid');
  if (/Tokens$/.test(key)) return humanCount(value, 'token');
  if (/Chars$/.test(key)) return humanCount(value, 'char');
  if (/Cost$/.test(key)) return String(value);
  return value.toLocaleString('en-US');
}

const LIMIT_LABELS: Readonly<Record<string, string>> = {
  memoryBytes: 'memory',
  memorySwapBytes: 'memory + swap',
  nanoCpus: 'CPU',
  pidsLimit: 'processes',
  wallTimeMs: 'wall time',
  outputBytes: 'output kept per stream',
};

/** Words from a camelCase key: `maxToolResultChars` → `max tool result chars`. */
function words(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
}

export function boundsSection(run: RunEvidence): Html {
  const s = snapshotOf(run);
  if (s === undefined)
    return section(
      'bounds',
      'Limits and budgets',
      html`<p class="bad">snapshot.json cannot be read</p>`,
    );
  const limits = Object.entries(s.limits).map(([k, v]): Row => [
    LIMIT_LABELS[k] ?? words(k),
    limitText(k, v),
  ]);
  const budgets =
    s.budgets === undefined
      ? html`<p>None: a command run has no model budget.</p>`
      : table(Object.entries(s.budgets).map(([k, v]): Row => [words(k), limitText(k, v)]));
  const a = s.assurance;
  const why =
    a.level === 'reduced'
      ? a.notes.map((n) => html`<li>${n}</li>`)
      : (a.basis ?? []).map((b) => html`<li>${b.detail}</li>`);
  return section('bounds', 'Limits and budgets', [
    html`<h3>Container limits</h3>`,
    table(limits),
    html`<h3>Budgets</h3>`,
    budgets,
    html`<h3>Assurance</h3>
      <p id="assurance-level" class="${a.level === 'reduced' ? 'bad' : 'ok'}">${a.level}</p>
      <ul>
        ${why}
      </ul>`,
  ]);
}

interface Counters {
  readonly memoryPeakBytes?: number | undefined;
  readonly cpuTotalMs?: number | undefined;
  readonly cpuUserMs?: number | undefined;
  readonly cpuSystemMs?: number | undefined;
  readonly pidsPeak?: number | undefined;
}

const RESOURCE_HEAD = html`<tr>
  <th>container</th>
  <th>memory peak</th>
  <th>CPU time</th>
  <th>user / system</th>
  <th>pids peak</th>
</tr>`;

export function resourcesSection(run: RunEvidence): Html {
  const r = partOf(run.report.value, 'resources', ResourcesRecord);
  if (!r.ok) return section('resources', 'Resources used', html`<p>Not recorded for this run.</p>`);
  if ('unavailable' in r.value)
    return section(
      'resources',
      'Resources used',
      html`<p>Not recorded: ${r.value.unavailable}</p>`,
    );
  const row = (name: Html, c: Counters, cls: string): Html =>
    html`<tr class="${cls}">
      <td>${name}</td>
      <td>${c.memoryPeakBytes === undefined ? 'not kept' : humanBytes(c.memoryPeakBytes)}</td>
      <td>${c.cpuTotalMs === undefined ? 'not kept' : humanMs(c.cpuTotalMs)}</td>
      <td>
        ${
          c.cpuUserMs === undefined || c.cpuSystemMs === undefined
            ? 'not kept'
            : `${humanMs(c.cpuUserMs)} / ${humanMs(c.cpuSystemMs)}`
        }
      </td>
      <td>${c.pidsPeak === undefined ? 'not kept' : String(c.pidsPeak)}</td>
    </tr>`;
  return section('resources', 'Resources used', [
    html`<table>
      ${RESOURCE_HEAD} ${r.value.containers.map((c) => row(mono(c.name), c, 'resource'))}
      ${row(html`<strong>all containers at once</strong>`, r.value.total, 'resource-total')}
    </table>`,
    html`<p class="muted small">
      From each container's cgroup (${r.value.source}) once it was removed: memory and pids are
      high-water marks, CPU is user plus system time (the kernel's split of it is approximate).
    </p>`,
  ]);
}
