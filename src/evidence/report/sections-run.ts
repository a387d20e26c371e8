// The report's sections about the run itself: who asked what, under which profile and
// image, in which containers, and how it ended. Every value goes through `html`.
import type { z } from 'zod';
import { partOf, recordOf } from '../audit/parts.js';
import { eventsOf, type RunEvidence } from '../audit/run-evidence.js';
import { PromptSlotsRecord, Snapshot, SnapshotContainerSpec } from '../schema/snapshot.js';
import { Report } from '../schema/report.js';
import { bytesText, fileLink, Html, html } from './html.js';

/** Digests, paths and command lines: the only text the page may break anywhere (CSS `.any`). */
export const mono = (text: string): Html => html`<span class="mono any">${text}</span>`;
import type { Preview } from './previews.js';

export function section(id: string, title: string, body: Html | Html[]): Html {
  return html`<section id="${id}">
    <h2>${title}</h2>
    ${body}
  </section>`;
}

export function kv(rows: readonly (readonly [string, unknown])[]): Html {
  return html`<table class="kv">
    ${rows.map(
      ([k, v]) =>
        html`<tr>
          <th>${k}</th>
          <td>
            ${
              typeof v === 'string' || v instanceof Html
                ? v
                : v === undefined
                  ? ''
                  : JSON.stringify(v)
            }
          </td>
        </tr>`,
    )}
  </table>`;
}

export function snapshotOf(run: RunEvidence): z.infer<typeof Snapshot> | undefined {
  const parsed = Snapshot.safeParse(run.snapshot.value);
  return parsed.success ? parsed.data : undefined;
}

export function reportOf(run: RunEvidence): z.infer<typeof Report> | undefined {
  const parsed = Report.safeParse(run.report.value);
  return parsed.success ? parsed.data : undefined;
}

export function identitySection(run: RunEvidence): Html {
  const s = snapshotOf(run);
  const end = eventsOf(run, 'run_finished').at(-1);
  return section(
    'identity',
    'Run',
    kv([
      ['run id', mono(run.runId)],
      ['kind', s?.kind ?? '(snapshot unreadable)'],
      ['created', s?.createdAt ?? ''],
      ['cfh version', s?.cfhVersion ?? ''],
      [
        'caller',
        s === undefined
          ? ''
          : `${s.caller.user ?? ''} uid ${String(s.caller.uid ?? '')} pid ${s.caller.pid} on ${s.caller.host}`,
      ],
      [
        'state',
        end === undefined
          ? 'not finished'
          : `${end.data.status} (${end.data.terminalReason}), exit ${end.data.exitCode}`,
      ],
      ['directory', mono(run.dir)],
    ]),
  );
}

export function promptSection(run: RunEvidence): Html {
  const s = snapshotOf(run);
  const slots = partOf(run.snapshot.value, 'promptSlots', PromptSlotsRecord);
  if (!slots.ok) {
    return section(
      'prompt',
      'Who asked what',
      kv([
        // A command line is code: it may break anywhere, like an id.
        ['command', mono((s?.command ?? []).join(' '))],
        ['model', 'none: a command run'],
      ]),
    );
  }
  const rows: [string, number, string][] = [
    ['direct command', slots.value.directCommand.chars, slots.value.directCommand.digest],
    ...slots.value.context.map((c, i): [string, number, string] => [
      `context ${i + 1}`,
      c.chars,
      c.digest,
    ]),
    ...slots.value.quoted.map((q, i): [string, number, string] => [
      `quoted ${i + 1}`,
      q.chars,
      q.digest,
    ]),
  ];
  const model = s?.model;
  return section('prompt', 'Who asked what', [
    html`<table>
      <tr>
        <th>slot (role)</th>
        <th>chars</th>
        <th>digest</th>
      </tr>
      ${rows.map(
        ([role, chars, digest]) =>
          html`<tr class="slot">
            <td>${role}</td>
            <td>${chars}</td>
            <td class="mono any">${digest}</td>
          </tr>`,
      )}
    </table>`,
    kv([
      ['model adapter', model?.adapter ?? ''],
      [
        'route',
        model === null || model === undefined
          ? ''
          : Object.entries(model.route)
              .map(([k, v]) => `${k}=${v}`)
              .join(', '),
      ],
      ['language model', model?.languageModel === false ? 'no: scripted replay' : 'yes'],
    ]),
  ]);
}

export function profileSection(run: RunEvidence): Html {
  const s = snapshotOf(run);
  if (s === undefined)
    return section(
      'profile',
      'Profile and image',
      html`<p class="bad">snapshot.json cannot be read</p>`,
    );
  return section(
    'profile',
    'Profile and image',
    kv([
      ['profile', `${s.profile.name} (${s.profile.sources.join(' → ')})`],
      ['profile digest', mono(s.profile.digest)],
      ['overrides', s.profile.overrides],
      ['image', html`${s.image.ref} <span class="mono any">${s.image.id}</span>`],
      [
        'engine',
        `${s.engine.serverVersion} (API ${s.engine.apiVersion}), runtime ${s.runtime.engineRuntime}`,
      ],
      [
        'network',
        `${s.network.mode}; allow [${s.network.allow.join(', ')}]; deny [${s.network.deny.join(', ')}]; ${s.network.enforcement.kind}`,
      ],
      ['tools', s.tools.join(', ') || 'none'],
      // The limits, budgets and what the level rests on: the next section, in units.
      ['assurance', s.assurance.level],
    ]),
  );
}

export function containersSection(run: RunEvidence): Html {
  const spec = partOf(run.snapshot.value, 'containerSpec', SnapshotContainerSpec);
  const hardening = spec.ok
    ? kv([
        ['user', spec.value.user],
        [
          'capabilities',
          `drop ${spec.value.capDrop.join(', ')}; add ${spec.value.capAdd.join(', ') || 'none'}`,
        ],
        ['no-new-privileges', String(spec.value.noNewPrivileges)],
        ['read-only root', String(spec.value.readOnlyRootfs)],
        ['init', String(spec.value.init)],
        ['privileged', String(spec.value.privileged)],
        ['network mode', spec.value.networkMode],
        [
          'seccomp',
          html`<span class="mono any">sha256:${spec.value.seccomp.sha256}</span>
            (${spec.value.seccomp.enforcement})`,
        ],
        ['env names', spec.value.envNames.join(', ')],
      ])
    : html`<p class="bad">containerSpec cannot be read</p>`;
  const mounts = spec.ok
    ? html`<table>
        <tr>
          <th>source</th>
          <th>target</th>
          <th>mode</th>
        </tr>
        ${spec.value.mounts.map(
          (m) =>
            html`<tr class="mount">
              <td class="mono any">${m.source}</td>
              <td class="mono">${m.target}</td>
              <td>${m.mode}</td>
            </tr>`,
        )}
      </table>`
    : html``;
  const removed = new Set([
    ...eventsOf(run, 'container_removed').map((e) => e.data.containerId),
    ...eventsOf(run, 'tool_container_removed').map((e) => e.data.containerId),
  ]);
  const rows = [
    ...eventsOf(run, 'container_created').map((e) => ({
      id: e.data.containerId,
      name: e.data.name,
      kind: 'command',
    })),
    ...eventsOf(run, 'tool_container_started').map((e) => ({
      id: e.data.containerId,
      name: e.data.name,
      kind: `${e.data.kind}, ${e.data.lifetime}`,
    })),
  ];
  const list = html`<table>
    <tr>
      <th>container</th>
      <th>kind</th>
      <th>id</th>
      <th>removed</th>
    </tr>
    ${rows.map(
      (c) =>
        html`<tr class="container">
          <td class="mono">${c.name}</td>
          <td>${c.kind}</td>
          <td class="mono">${c.id.slice(0, 12)}</td>
          <td class="${removed.has(c.id) ? 'ok' : 'bad'}">
            ${removed.has(c.id) ? 'removed' : 'NOT recorded removed'}
          </td>
        </tr>`,
    )}
  </table>`;
  return section('containers', 'Containers', [
    list,
    html`<h3>Hardening (every container of the run)</h3>`,
    hardening,
    html`<h3>Mounts</h3>`,
    mounts,
  ]);
}

export function outputBlock(run: RunEvidence, preview: Preview | undefined, rel: string): Html {
  if (preview === undefined) return html`<span class="mono">${rel}</span> (not in the directory)`;
  return html`<details class="output" data-file="${rel}">
    <summary>
      ${rel} · ${bytesText(preview.bytes)}${preview.truncated ? ' (first part shown)' : ''} ·
      ${fileLink(run.dir, rel, 'raw file')}
    </summary>
    <pre>${preview.text}</pre>
  </details>`;
}

export function outcomeSection(run: RunEvidence, previews: ReadonlyMap<string, Preview>): Html {
  const end = eventsOf(run, 'run_finished').at(-1);
  const report = reportOf(run);
  const error = recordOf(recordOf(run.report.value)?.error);
  const outputs = ['outputs/stdout', 'outputs/stderr'].filter((f) => previews.has(f));
  return section('outcome', 'How it ended', [
    kv([
      ['status', end?.data.status ?? 'not finished'],
      ['reason', end?.data.terminalReason ?? ''],
      ['exit status', end?.data.exitCode ?? ''],
      [
        'error',
        error === undefined
          ? 'none'
          : `${String(error.code)} at the ${String(error.boundary)} boundary: ${String(error.message)}`,
      ],
      ['budget', report?.budget ?? 'none reached'],
    ]),
    report?.finalAnswer === undefined || report.finalAnswer === null
      ? html``
      : html`<h3>Final answer (model output, shown as text)</h3>
          <pre id="final-answer">${report.finalAnswer}</pre>`,
    outputs.length === 0
      ? html``
      : html`<h3>Command output</h3>
          ${outputs.map((f) => outputBlock(run, previews.get(f), f))}`,
  ]);
}
