// The report's sections about what happened: the timeline, each tool call with its
// decision, rule and outcome, each egress attempt with its decision, approvals, usage and
// cost with their provenance, and the audit's verdicts.
import { z } from 'zod';
import type { AuditResult } from '../audit/audit.js';
import { partOf } from '../audit/parts.js';
import { eventsOf, type RunEvidence } from '../audit/run-evidence.js';
import { toolCalls } from '../audit/tool-calls.js';
import { CostEstimate } from '../schema/report.js';
import { html, type Html } from './html.js';
import type { Preview } from './previews.js';
import { outputBlock, section } from './sections-run.js';

/** Above this many events the timeline starts collapsed. */
const OPEN_TIMELINE_EVENTS = 300;

function summaryOf(data: Readonly<Record<string, unknown>>): string {
  const text = JSON.stringify(data);
  return text.length > 240 ? `${text.slice(0, 240)}…` : text;
}

export function timelineSection(run: RunEvidence): Html {
  const rows = run.events.map(
    (e) =>
      html`<tr class="event" data-type="${e.type}">
        <td>${e.seq}</td>
        <td class="mono">${e.ts}</td>
        <td>${e.type}</td>
        <td class="mono any small">${summaryOf(e.data)}</td>
      </tr>`,
  );
  return section(
    'timeline',
    'Timeline',
    html`<details ${run.events.length <= OPEN_TIMELINE_EVENTS ? html`open` : html``}>
      <summary>${run.events.length} events</summary>
      <table>
        <tr>
          <th>seq</th>
          <th>time</th>
          <th>event</th>
          <th>data</th>
        </tr>
        ${rows}
      </table>
    </details>`,
  );
}

export function toolCallsSection(run: RunEvidence, previews: ReadonlyMap<string, Preview>): Html {
  const calls = [...toolCalls(run).values()].sort((a, b) => (a.callId < b.callId ? -1 : 1));
  if (calls.length === 0)
    return section(
      'tool-calls',
      'Tool calls',
      html`<p>
        No tool call: ${run.transcript === undefined ? 'a command run' : 'the model called none'}.
      </p>`,
    );
  const rows = calls.map((c) => {
    const req = c.requests[0]?.data;
    const d = c.decisions[0]?.data;
    const r = c.results[0];
    const outcome =
      r === undefined
        ? 'no result recorded'
        : r.type === 'tool_executed'
          ? `${r.data.status}, exit ${r.data.exitCode}${'durationMs' in r.data ? `, ${r.data.durationMs} ms, ${r.data.attempts} attempt(s)` : ''}`
          : r.type === 'tool_rejected'
            ? `rejected: ${r.data.reason}`
            : r.type === 'tool_denied'
              ? `denied: ${r.data.rule}`
              : `aborted: ${r.data.reason}`;
    const outputs = r?.type === 'tool_executed' ? r.data.outputs : [];
    return html`<tr class="tool-call" data-call-id="${c.callId}">
      <td>${c.callId}</td>
      <td>${req?.tool ?? ''}</td>
      <td class="mono any small">${req?.input ?? ''}</td>
      <td>${d === undefined ? 'none' : d.decision}</td>
      <td class="mono small">${d?.policy_rule ?? ''}</td>
      <td>${outcome}</td>
      <td>${outputs.map((o) => outputBlock(run, previews.get(o), o))}</td>
    </tr>`;
  });
  return section(
    'tool-calls',
    'Tool calls',
    html`<table>
      <tr>
        <th>call</th>
        <th>tool</th>
        <th>input (bounded)</th>
        <th>decision</th>
        <th>rule</th>
        <th>outcome</th>
        <th>outputs</th>
      </tr>
      ${rows}
    </table>`,
  );
}

export function egressSection(run: RunEvidence): Html {
  const egress = eventsOf(run, 'egress');
  if (egress.length === 0) return section('egress', 'Egress', html`<p>No egress attempt.</p>`);
  const rows = egress.map(
    (e) =>
      html`<tr class="egress ${e.data.allowed ? 'ok' : 'bad'}">
        <td>${e.data.allowed ? 'allow' : 'deny'}</td>
        <td>${e.data.protocol}</td>
        <td class="mono any">${e.data.name ?? ''}</td>
        <td class="mono">${e.data.address ?? ''}</td>
        <td>${e.data.port ?? ''}</td>
        <td>${e.data.reason}</td>
        <td class="mono">${e.data.rule ?? ''}</td>
        <td>${e.data.bytesOut} / ${e.data.bytesIn}</td>
      </tr>`,
  );
  return section(
    'egress',
    'Egress',
    html`<table>
      <tr>
        <th>decision</th>
        <th>protocol</th>
        <th>name</th>
        <th>address</th>
        <th>port</th>
        <th>reason</th>
        <th>rule</th>
        <th>bytes out / in</th>
      </tr>
      ${rows}
    </table>`,
  );
}

export function usageSection(run: RunEvidence): Html {
  const attempts = eventsOf(run, 'model_call_completed');
  if (attempts.length === 0)
    return section('usage', 'Usage and cost', html`<p>No model attempt: no usage, no cost.</p>`);
  const counters = [
    'input_tokens',
    'output_tokens',
    'cache_read_input_tokens',
    'cache_creation_input_tokens',
  ] as const;
  const rows = attempts.map(
    (a) =>
      html`<tr class="attempt">
        <td>${a.data.attemptId}</td>
        <td>${a.data.adapter}</td>
        <td>${a.data.model}</td>
        ${counters.map((c) => html`<td>${a.data.usage[c] ?? html`<span class="muted">not reported</span>`}</td>`)}
        <td>
          ${a.data.costEstimate === undefined ? '' : 'estimated' in a.data.costEstimate ? a.data.costEstimate.estimated : `omitted: ${a.data.costEstimate.omitted}`}
        </td>
      </tr>`,
  );
  const cost = partOf(run.report.value, 'costEstimate', CostEstimate);
  const provider = partOf(run.report.value, 'providerReportedCost', z.unknown());
  return section('usage', 'Usage and cost', [
    html`<p>
      Counters exactly as the provider reported them (source:
      <span class="mono">model_call_completed</span> events); an absent counter is said, never zero.
    </p>`,
    html`<table>
      <tr>
        <th>attempt</th>
        <th>adapter</th>
        <th>model</th>
        ${counters.map((c) => html`<th>${c}</th>`)}
        <th>estimate</th>
      </tr>
      ${rows}
    </table>`,
    cost.ok
      ? html`<p id="cost">
          Harness estimate, not a charge:
          ${cost.value.total === undefined ? `total omitted (${cost.value.totalOmitted ?? ''})` : `${cost.value.total} ${cost.value.currency}`};
          rate card ${cost.value.rateCard.file} version ${cost.value.rateCard.version}
          (${cost.value.rateCard.source}). Provider-reported cost:
          ${provider.ok && provider.value !== null ? JSON.stringify(provider.value) : 'none reported'}.
        </p>`
      : html`<p class="bad">No cost estimate in report.json.</p>`,
  ]);
}

export function auditSection(audit: AuditResult): Html {
  const rows = audit.checks.map(
    (c) =>
      html`<tr class="verdict v-${c.verdict}" data-check="${c.id}">
        <td>${c.verdict}</td>
        <td class="mono">${c.id}</td>
        <td>${c.clauses.join(' ')}</td>
        <td>
          ${c.detail}${
            c.where.length > 0
              ? html`<ul>
                  ${c.where.map((w) => html`<li class="mono any small">${w}</li>`)}
                </ul>`
              : html``
          }
        </td>
      </tr>`,
  );
  const n = audit.counts;
  return section('audit', 'Audit', [
    html`<p id="audit-summary" class="${audit.ok ? 'ok' : 'bad'}">
      ${audit.ok ? 'Nothing fails' : 'Something FAILS'}: ${n.pass} pass, ${n.fail} fail, ${n.warn}
      warn, ${n.inconclusive} inconclusive, ${n['not-applicable']} not applicable.
    </p>`,
    html`<table>
      <tr>
        <th>verdict</th>
        <th>check</th>
        <th>clauses</th>
        <th>detail</th>
      </tr>
      ${rows}
    </table>`,
  ]);
}
