// The report's CFC section (AH-CFC-14..19): the mode (observe marked diagnostic, never
// enforcement), the label map planning gave each mount and destination (and which mounts
// were withheld from exec's container), every flow decision with its influence and sinks,
// each endorsement a person gave (who, atoms, digest), and each handle minted: its id,
// label and digest, never its value (the evidence does not hold one).
import { partOf } from '../audit/parts.js';
import { eventsOf, type RunEvidence } from '../audit/run-evidence.js';
import type { LabelRecord } from '../schema/events-cfc.js';
import { ReportCfc } from '../schema/report.js';
import { SnapshotCfc } from '../schema/snapshot.js';
import { html, type Html } from './html.js';
import { kv, section } from './sections-run.js';

/** A label in words: `c[secret] i[repo:untrusted]`; `unlabelled` for none. */
function labelText(label: LabelRecord | null | undefined): string {
  if (label === null || label === undefined) return 'unlabelled';
  const c = label.confidentiality.length === 0 ? '' : `c[${label.confidentiality.join(', ')}]`;
  const i = label.integrity.length === 0 ? '' : `i[${label.integrity.join(', ')}]`;
  return [c, i].filter((x) => x !== '').join(' ') || 'public, no integrity';
}

function modeText(mode: string, enforced: boolean): Html {
  if (mode === 'observe')
    return html`<span class="bad">observe: diagnostic, not enforcement</span>`;
  if (mode === 'disabled') return html`<span class="muted">disabled: no CFC claim</span>`;
  return html`<span class="${enforced ? 'ok' : 'bad'}"
    >${mode}${enforced ? ' (enforced)' : ' (NOT recorded as enforced)'}</span
  >`;
}

export function cfcSection(run: RunEvidence): Html {
  const snap = partOf(run.snapshot.value, 'cfc', SnapshotCfc);
  const rep = partOf(run.report.value, 'cfc', ReportCfc);
  if (!snap.ok && !rep.ok)
    return section(
      'cfc',
      'Information flow (CFC)',
      html`<p>Not recorded: a run from before CFC.</p>`,
    );
  const mode = snap.ok ? snap.value.mode : rep.ok ? rep.value.mode : 'disabled';
  const enforced = rep.ok && rep.value.enforced;
  const f = rep.ok ? rep.value.flows : undefined;
  const head = kv([
    ['mode', modeText(mode, enforced)],
    ['mode from', snap.ok ? snap.value.modeSource : 'not in the snapshot'],
    [
      'fallback',
      snap.ok && snap.value.fallback !== null
        ? `from ${snap.value.fallback.from} to ${snap.value.fallback.to}, owner ${snap.value.fallback.owner}, until ${snap.value.fallback.retireWhen}`
        : 'none',
    ],
    ['model clearance', snap.ok ? `[${snap.value.modelClearance.join(', ')}]` : ''],
    [
      'decisions',
      f === undefined
        ? 'report.json records no cfc'
        : `${f.allowed} allowed, ${f.denied} denied, ${f.wouldDeny} would-deny (observe), ${f.endorsed} endorsed; ${rep.ok ? rep.value.handles : 0} handle(s), ${rep.ok ? rep.value.opaque : 0} opaque; ${rep.ok ? (rep.value.declassified ?? 0) : 0} declassified by the profile; ${rep.ok ? (rep.value.carried ?? 0) : 0} context(s) carried in`,
    ],
    ['unlabelled sources', snap.ok ? snap.value.unlabelled.join(', ') || 'none' : ''],
  ]);
  if (mode === 'disabled') return section('cfc', 'Information flow (CFC)', head);
  return section('cfc', 'Information flow (CFC)', [
    head,
    snap.ok ? labelMap(snap.value) : html``,
    flowsTable(run),
    endorsementsTable(run),
    handlesTable(run),
  ]);
}

function labelMap(cfc: SnapshotCfc): Html {
  return html`<h3>Label map</h3>
    <table class="cfc-mounts">
      <tr>
        <th>source</th>
        <th>label</th>
        <th>writable</th>
        <th>clearance</th>
        <th>in exec's container</th>
      </tr>
      ${cfc.mounts.map(
        (m) =>
          html`<tr>
            <td class="mono any">${m.target}</td>
            <td class="mono">${labelText(m.label)}</td>
            <td>${m.writable ? 'rw' : 'ro'}</td>
            <td class="mono">[${m.clearance.join(', ')}]</td>
            <td class="${m.inWorkload ? '' : 'bad'}">
              ${m.inWorkload ? 'yes' : `withheld: ${m.withheldBecause ?? ''}`}
            </td>
          </tr>`,
      )}
      ${(cfc.env ?? []).map(
        (e) =>
          html`<tr>
            <td class="mono any">env ${e.name}</td>
            <td class="mono">${labelText(e.label)}</td>
            <td>-</td>
            <td>-</td>
            <td class="${e.inWorkload ? '' : 'bad'}">
              ${e.inWorkload ? 'yes' : `withheld: ${e.withheldBecause ?? ''}`}
            </td>
          </tr>`,
      )}
    </table>
    ${
      cfc.destinations.length === 0
        ? html`<p>No allowed destination.</p>`
        : html`<table class="cfc-destinations">
            <tr>
              <th>destination</th>
              <th>label of what it sends</th>
              <th>clearance</th>
              <th>requires integrity</th>
            </tr>
            ${cfc.destinations.map(
              (d) =>
                html`<tr>
                  <td class="mono any">${d.destination}</td>
                  <td class="mono">${labelText(d.label)}</td>
                  <td class="mono">[${d.clearance.join(', ')}]</td>
                  <td class="mono">[${d.requires.join(', ')}]</td>
                </tr>`,
            )}
          </table>`
    }`;
}

const VERDICT_CLASS: Record<string, string> = {
  allow: 'ok',
  deny: 'bad',
  would_deny: 'bad',
  endorsed: '',
};

function flowsTable(run: RunEvidence): Html {
  const flows = eventsOf(run, 'cfc_flow');
  if (flows.length === 0)
    return html`<h3>Flow decisions</h3>
      <p>No call was judged.</p>`;
  return html`<h3>Flow decisions</h3>
    <table class="cfc-flows">
      <tr>
        <th>call</th>
        <th>tool</th>
        <th>verdict</th>
        <th>rule</th>
        <th>reason</th>
        <th>influence</th>
        <th>sinks</th>
      </tr>
      ${flows.map(
        (e) =>
          html`<tr class="cfc-flow">
            <td class="mono nowrap">${e.data.callId}</td>
            <td>${e.data.tool}</td>
            <td class="${VERDICT_CLASS[e.data.verdict] ?? ''}">${e.data.verdict}</td>
            <td class="mono">${e.data.rule}</td>
            <td>${e.data.reason}</td>
            <td class="mono small">
              ${labelText(e.data.influence)}${
                e.data.explicit === null ? '' : html`<br />explicit ${labelText(e.data.explicit)}`
              }${e.data.authority === null ? '' : html`<br />authority ${e.data.authority}`}
            </td>
            <td class="mono small any">${e.data.sinks.map((s) => s.sink).join(', ') || 'none'}</td>
          </tr>`,
      )}
    </table>`;
}

function endorsementsTable(run: RunEvidence): Html {
  const given = eventsOf(run, 'cfc_endorsement');
  if (given.length === 0)
    return html`<h3>Endorsements</h3>
      <p>Nobody endorsed a flow.</p>`;
  return html`<h3>Endorsements</h3>
    <table class="cfc-endorsements">
      <tr>
        <th>call</th>
        <th>kind</th>
        <th>atoms</th>
        <th>who, where</th>
        <th>arguments' digest</th>
      </tr>
      ${given.map(
        (e) =>
          html`<tr>
            <td class="mono nowrap">${e.data.callId}</td>
            <td>${e.data.kind}</td>
            <td class="mono">[${[...e.data.confidentiality, ...e.data.integrity].join(', ')}]</td>
            <td>${e.data.approver.user} at the ${e.data.approver.surface}</td>
            <td class="mono small any">${e.data.argsDigest}</td>
          </tr>`,
      )}
    </table>`;
}

function handlesTable(run: RunEvidence): Html {
  const minted = eventsOf(run, 'cfc_handle').filter((h) => h.data.action === 'minted');
  const resolved = eventsOf(run, 'cfc_handle').filter((h) => h.data.action === 'resolved');
  if (minted.length === 0)
    return html`<h3>Handles</h3>
      <p>No value was held back.</p>`;
  return html`<h3>Handles</h3>
    <p class="small">
      Values held back from the model; the evidence keeps their digest, never the value.
    </p>
    <table class="cfc-handles">
      <tr>
        <th>handle</th>
        <th>minted by</th>
        <th>label</th>
        <th>integrity</th>
        <th>used by</th>
      </tr>
      ${minted.map(
        (h) =>
          html`<tr>
            <td class="mono nowrap">${h.data.handle}</td>
            <td class="mono nowrap">${h.data.callId}</td>
            <td class="mono">${labelText(h.data.label)}</td>
            <td class="small">
              ${h.data.integrityCounts ? 'counts' : 'operator data: not counted'}
            </td>
            <td class="mono">
              ${
                resolved
                  .filter((r) => r.data.handle === h.data.handle)
                  .map((r) => r.data.callId)
                  .join(', ') || 'none'
              }
            </td>
          </tr>`,
      )}
    </table>`;
}
