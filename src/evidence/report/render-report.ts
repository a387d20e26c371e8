// `cfh runs report`: one self-contained HTML page for a run. No external asset, no script,
// no fetch: inline CSS only, and a Content-Security-Policy that forbids scripts and every
// network load, so even a rendering bug could not run what a sandbox, a model or a DNS name
// put in the evidence. Every value is escaped by construction (html.ts).
import type { AuditResult } from '../audit/audit.js';
import { eventsOf, type RunEvidence } from '../audit/run-evidence.js';
import { Html, html } from './html.js';
import { loadPreviews } from './previews.js';
import { approvalsSection, hostToolsSection } from './sections-authority.js';
import { boundsSection, resourcesSection } from './sections-bounds.js';
import { cfcSection } from './sections-cfc.js';
import { childrenSection } from './sections-children.js';
import { loadChildTree } from './children.js';
import {
  auditSection,
  egressSection,
  timelineSection,
  toolCallsSection,
  usageSection,
} from './sections-activity.js';
import {
  containersSection,
  identitySection,
  outcomeSection,
  profileSection,
  promptSection,
} from './sections-run.js';

const CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; script-src 'none'; form-action 'none'; base-uri 'none'";

// Text wraps at words (a cell too narrow for a word grows, or its section scrolls); only
// digests, paths and data (`.any`, `pre`) may break anywhere: their "words" are unreadable
// as wholes anyway, and would otherwise widen every narrow column.
const CSS = `
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:1rem 2rem;color:#1c1c1c;background:#fafafa}
h1{font-size:1.4rem;margin:.2rem 0 1rem}h2{font-size:1.15rem;border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
h3{font-size:1rem;margin:1rem 0 .3rem}section{overflow-x:auto}table{border-collapse:collapse;width:100%;margin:.3rem 0;background:#fff}
th,td{border:1px solid #e2e2e2;padding:.25rem .45rem;text-align:left;vertical-align:top;overflow-wrap:break-word;word-break:normal;hyphens:none}th{background:#f0f0f0;font-weight:600}
table.kv th{width:12rem}.mono{font-family:ui-monospace,monospace}.any{overflow-wrap:anywhere}td.any{min-width:10rem}.small{font-size:12px}.nowrap{white-space:nowrap}
td ul{margin:.2rem 0;padding-left:1.1rem}ul.budget{list-style:none;padding-left:0}ul.budget li{white-space:nowrap}
td.d2{padding-left:1.6rem}td.d3{padding-left:2.8rem}td.d4{padding-left:4rem}td.d2,td.d3,td.d4{border-left:3px solid #ccc}pre.child-return{max-height:8rem}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f4f4f4;padding:.5rem;max-height:24rem;overflow:auto;margin:.2rem 0}
details>summary{cursor:pointer}.ok{color:#0a6b2b}.bad{color:#a4161a;font-weight:600}.muted{color:#888}
tr.v-fail td:first-child{background:#fde2e1;color:#a4161a;font-weight:700}tr.v-pass td:first-child{background:#e3f5e8}
tr.v-warn td:first-child,tr.v-inconclusive td:first-child{background:#fff3cd}tr.v-not-applicable td:first-child{color:#888}
nav a{margin-right:.8rem;display:inline-block}#summary{font-size:1.05rem;padding:.6rem .8rem;border-radius:6px;background:#fff;border:1px solid #ddd}
@media (max-width:640px){body{padding:.5rem .6rem}table.kv th{width:auto}th,td{padding:.2rem .3rem}}`;

/** The page's own stylesheet: a constant of this file, never data, so not escaped. */
const STYLE = new Html(CSS);

export async function renderRunReport(run: RunEvidence, audit: AuditResult): Promise<string> {
  const previews = await loadPreviews(run);
  const children = await loadChildTree(run, previews);
  const sections = [
    ['identity', 'run'],
    ['prompt', 'who asked'],
    ['profile', 'profile'],
    ['bounds', 'limits'],
    ['containers', 'containers'],
    ['resources', 'resources'],
    ['tool-calls', 'tool calls'],
    ['host-tools', 'host tools'],
    ['egress', 'egress'],
    ['approvals', 'approvals'],
    ['cfc', 'information flow'],
    ['usage', 'usage'],
    ['children', 'child runs'],
    ['audit', 'audit'],
    ['outcome', 'outcome'],
    ['timeline', 'timeline'],
  ];
  const page = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta http-equiv="Content-Security-Policy" content="${CSP}" />
        <meta name="referrer" content="no-referrer" />
        <title>cfh run ${run.runId}</title>
        <style>
          ${STYLE}
        </style>
      </head>
      <body>
        <h1>cfh run <span class="mono">${run.runId}</span></h1>
        <p id="summary">${summaryLine(run, audit)}</p>
        <nav>${sections.map(([id, label]) => html`<a href="#${id ?? ''}">${label}</a>`)}</nav>
        ${identitySection(run)}${promptSection(run)}${profileSection(run)}${boundsSection(run)}${containersSection(run)}${resourcesSection(run)}${toolCallsSection(run, previews)}${hostToolsSection(run)}${egressSection(run)}${approvalsSection(run)}${cfcSection(run)}${usageSection(run)}${childrenSection(run, children)}${auditSection(audit)}${outcomeSection(run, previews)}${timelineSection(run)}
        <footer class="muted small">
          Generated by cfh from the run directory; the raw files are linked where shown. Text from
          the sandbox, the model and the network is shown as text.
        </footer>
      </body>
    </html> `;
  return page.toString();
}

function summaryLine(run: RunEvidence, audit: AuditResult): Html {
  const end = eventsOf(run, 'run_finished').at(-1);
  const n = audit.counts;
  return html`<span class="${end?.data.status === 'completed' ? 'ok' : 'bad'}"
      >${end === undefined ? 'not finished' : `${end.data.status} (${end.data.terminalReason}), exit ${end.data.exitCode}`}</span
    >
    · audit:
    <span class="${audit.ok ? 'ok' : 'bad'}"
      >${audit.ok ? 'nothing fails' : `${n.fail} check(s) FAIL`}</span
    >
    (${n.pass} pass, ${n.warn} warn, ${n.inconclusive} inconclusive, ${n['not-applicable']} n/a)`;
}
