// The report's tables of authority granted during the run: each approval asked (rule, tool,
// arguments' digest) with who answered it, at which surface, when and how long it waited;
// and the host tools, which run outside the sandbox (AH-TOOL-7): their programs and pins,
// and every call they answered with its outcome.
import { z } from 'zod';
import { partOf } from '../audit/parts.js';
import { eventsOf, type RunEvidence } from '../audit/run-evidence.js';
import { humanMs } from '../units.js';
import { html, type Html } from './html.js';
import { section } from './sections-run.js';

export function approvalsSection(run: RunEvidence): Html {
  const asked = eventsOf(run, 'approval_requested');
  const answered = eventsOf(run, 'approval_received');
  if (asked.length === 0 && answered.length === 0)
    return section('approvals', 'Approvals', html`<p>No approval was asked for.</p>`);
  const answerOf = new Map(answered.map((e) => [`${e.data.callId} ${e.data.rule}`, e]));
  return section(
    'approvals',
    'Approvals',
    html`<table>
      <tr>
        <th>call</th>
        <th>tool</th>
        <th>rule</th>
        <th>answer</th>
        <th>who, where</th>
        <th>when</th>
        <th>waited</th>
      </tr>
      ${asked.map((q) => {
        const a = answerOf.get(`${q.data.callId} ${q.data.rule}`);
        const who =
          a?.data.approver === null || a?.data.approver === undefined
            ? 'nobody'
            : `${a.data.approver.user} at the ${a.data.approver.surface}`;
        return html`<tr class="approval">
          <td class="mono">${q.data.callId}</td>
          <td>${q.data.tool}</td>
          <td class="mono">${q.data.rule}</td>
          <td class="${a?.data.outcome === 'granted' ? 'ok' : 'bad'}">
            ${
              a === undefined
                ? 'not answered'
                : `${a.data.outcome}${a.data.scope === undefined ? '' : ` (${a.data.scope})`}`
            }
          </td>
          <td>${who}</td>
          <td class="nowrap">${a?.ts ?? q.ts}</td>
          <td>${a === undefined ? '' : humanMs(a.data.waitedMs)}</td>
        </tr>`;
      })}
    </table>`,
  );
}

const HostToolRecord = z.array(
  z.looseObject({
    name: z.string(),
    kind: z.string(),
    program: z.string().optional(),
    tool: z.string().optional(),
    pinned: z
      .looseObject({
        files: z.array(
          z.looseObject({ role: z.string(), path: z.string(), sha256: z.string().nullable() }),
        ),
      })
      .optional(),
  }),
);

export function hostToolsSection(run: RunEvidence): Html {
  const tools = partOf(run.snapshot.value, 'hostTools', HostToolRecord);
  if (!tools.ok || tools.value.length === 0)
    return section('host-tools', 'Host tools', html`<p>None: nothing ran outside the sandbox.</p>`);
  const calls = eventsOf(run, 'tool_executed');
  return section('host-tools', 'Host tools', [
    html`<p>These run on the host, outside the sandbox, with their declared authority.</p>`,
    html`<table>
      <tr>
        <th>host tool</th>
        <th>kind</th>
        <th>program and pins</th>
        <th>calls</th>
        <th>outcomes</th>
      </tr>
      ${tools.value.map((t) => {
        const mine = calls.filter((c) => c.data.containerId === `host:${t.name}`);
        const outcomes = new Map<string, number>();
        for (const c of mine) outcomes.set(c.data.status, (outcomes.get(c.data.status) ?? 0) + 1);
        const pins = t.pinned?.files ?? [];
        return html`<tr class="host-tool">
          <td>${t.name}</td>
          <td>${t.kind}</td>
          <td>
            <span class="mono any">${t.program ?? ''}</span>
            ${
              pins.length === 0
                ? html``
                : html`<ul class="small">
                    ${pins.map(
                      (p) =>
                        html`<li>
                          ${p.role}: <span class="mono any">${p.path}</span>
                          <span class="mono any muted"
                            >${p.sha256 === null ? 'by identity' : `sha256:${p.sha256}`}</span
                          >
                        </li>`,
                    )}
                  </ul>`
            }
          </td>
          <td>${mine.length}</td>
          <td>${[...outcomes].map(([status, n]) => `${status} ${n}`).join(', ') || 'no call'}</td>
        </tr>`;
      })}
    </table>`,
  ]);
}
