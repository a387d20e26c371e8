// The report's section on delegation (AH-DEL-5, AH-USAGE-2): each child run as a row of a
// tree (its own children indented below it), with its profile, id, state, what reached the
// parent (the validated return, or the typed failure), its budget slice beside what it
// used, and how long it took; then the run's usage with its descendants'. A child's return
// is model output: shown as text, and only its start.
import { partOf } from '../audit/parts.js';
import { Report } from '../schema/report.js';
import type { RunEvidence } from '../audit/run-evidence.js';
import { humanMs } from '../units.js';
import { CHILD_DEPTH, RETURN_CHARS, type ChildNode } from './children.js';
import { fileLink, html, type Html } from './html.js';
import { mono, section } from './sections-run.js';

const UsageWithDescendants = Report.shape.usageWithDescendants.unwrap();

const HEAD = html`<tr>
  <th>child</th>
  <th>state</th>
  <th>outcome</th>
  <th>used / slice</th>
  <th>duration</th>
  <th>return or error</th>
</tr>`;

const count = (n: number): string => n.toLocaleString('en-US');
const cost = (c: number | null | undefined): string =>
  c === null || c === undefined ? 'not priced' : String(c);

function budgetCell(node: ChildNode): Html {
  const u = node.end?.usage;
  const s = node.slice;
  if (u === undefined && s === undefined) return html`<span class="muted">none</span>`;
  const line = (label: string, used: number | undefined, max: number | undefined): Html =>
    html`<li>
      ${label} ${used === undefined ? '?' : count(used)} / ${max === undefined ? '?' : count(max)}
    </li>`;
  return html`<ul class="budget">
    ${line('turns', u?.modelTurns, s?.maxModelTurns)}
    ${line('tool calls', u?.toolCalls, s?.maxToolCalls)}
    ${line('input tokens', u?.inputTokens, s?.maxInputTokens)}
    ${line('output tokens', u?.outputTokens, s?.maxOutputTokens)}
    <li>
      cost ${u === undefined ? '?' : cost(u.estimatedCost)} /
      ${s === undefined ? '?' : s.maxTotalCost === null ? 'no cap' : String(s.maxTotalCost)}
    </li>
  </ul>`;
}

function stateCell(node: ChildNode): Html {
  if (node.refused !== undefined) return html`<span class="bad">refused</span>`;
  if (node.end === undefined) return html`<span class="bad">not finished</span>`;
  return html`<span class="${node.end.status === 'completed' ? 'ok' : 'bad'}"
      >${node.end.status}</span
    >
    <span class="small">(${node.end.terminalReason})</span>`;
}

function outcomeCell(node: ChildNode): Html {
  if (node.refused !== undefined) return html`<span class="mono">${node.refused.code}</span>`;
  const e = node.end;
  if (e === undefined) return html`<span class="muted">none recorded</span>`;
  return html`<span class="${e.outcome === 'returned' ? 'ok' : 'bad'}">${e.outcome}</span>
    ${e.error === null ? '' : html`<span class="mono small">${e.error.code}</span>`}`;
}

function returnCell(node: ChildNode): Html {
  const error = node.refused ?? node.end?.error ?? undefined;
  if (error !== undefined) return html`<span class="mono">${error.code}</span>: ${error.message}`;
  const r = node.returned;
  if (r === undefined)
    return html`<span class="muted"
      >${node.problem === undefined ? 'nothing recorded' : node.problem}</span
    >`;
  return html`<pre class="child-return">${r.text}${r.truncated ? '…' : ''}</pre>
    <span class="muted small"
      >${r.truncated ? `first ${RETURN_CHARS} characters of ` : ''}${r.from}</span
    >`;
}

function childCell(parent: RunEvidence, node: ChildNode): Html {
  return html`<strong>${node.profile}</strong> <span class="small">${node.callId}</span><br />
    ${
      node.childId === undefined || node.rel === undefined
        ? html`<span class="muted">no child run</span>`
        : html`<span class="mono small">${fileLink(parent.dir, node.rel, node.childId)}</span>`
    }
    ${node.problem === undefined ? '' : html`<br /><span class="bad small">${node.problem}</span>`}`;
}

function rows(parent: RunEvidence, nodes: readonly ChildNode[]): Html[] {
  return nodes.flatMap((node) => [
    html`<tr class="child" data-child-id="${node.childId ?? ''}" data-depth="${node.depth}">
      <td class="child-name d${Math.min(node.depth, CHILD_DEPTH)}">${childCell(parent, node)}</td>
      <td>${stateCell(node)}</td>
      <td>${outcomeCell(node)}</td>
      <td>${budgetCell(node)}</td>
      <td class="nowrap">${node.end === undefined ? '' : humanMs(node.end.ms)}</td>
      <td>${returnCell(node)}</td>
    </tr>`,
    ...(node.run === undefined ? [] : rows(node.run, node.children)),
    ...(node.notShown === 0
      ? []
      : [
          html`<tr class="child-more">
            <td class="d${CHILD_DEPTH}" colspan="6">
              ${node.notShown} more child run(s) below, deeper than ${CHILD_DEPTH} levels: see
              ${mono(node.run?.dir ?? '')}
            </td>
          </tr>`,
        ]),
  ]);
}

function descendantsTable(run: RunEvidence): Html {
  const u = partOf(run.report.value, 'usageWithDescendants', UsageWithDescendants);
  if (!u.ok) return html`<p class="muted">No usage with descendants in report.json.</p>`;
  const d = u.value.descendants;
  const row = (label: string, v: typeof d): Html =>
    html`<tr class="usage-descendants">
      <th>${label}</th>
      <td>${count(v.modelTurns)}</td>
      <td>${count(v.toolCalls)}</td>
      <td>${count(v.inputTokens)}</td>
      <td>${count(v.outputTokens)}</td>
      <td>${cost(v.estimatedCost)}</td>
    </tr>`;
  return html`<table id="usage-with-descendants">
      <tr>
        <th></th>
        <th>turns</th>
        <th>tool calls</th>
        <th>input tokens</th>
        <th>output tokens</th>
        <th>estimated cost</th>
      </tr>
      ${row('descendants', d)} ${row('this run with its descendants', u.value)}
    </table>
    <p class="muted small">
      From report.json; coverage ${u.value.coverage}. Each child's own use is in its row above.
    </p>`;
}

export function childrenSection(run: RunEvidence, tree: readonly ChildNode[]): Html {
  if (tree.length === 0)
    return section(
      'children',
      'Child runs',
      html`<p>No child run: this run delegated nothing.</p>`,
    );
  return section('children', 'Child runs', [
    html`<table id="child-tree">
      ${HEAD} ${rows(run, tree)}
    </table>`,
    html`<p class="muted small">
      Each child is a run directory of its own (linked); its page:
      <span class="mono">cfh runs report</span> with that directory. A return is model output, shown
      as text.
    </p>`,
    html`<h3>Usage with descendants</h3>`,
    descendantsTable(run),
  ]);
}
