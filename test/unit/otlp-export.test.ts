// `cfh runs export --format otlp-json` exports no model text (src/evidence/export/otlp.ts):
// the tool name a model proposed is model text, so a span names a tool only when the run's
// tool surface (the snapshot's tools and host tools) holds it, else `unknown_tool`, and every
// exported name is bounded. Pure logic over synthetic evidence: the model proposes a 100 KiB
// name, a name with control characters and a surface name with a control character appended,
// next to a name of the surface.
import { describe, expect, it } from 'vitest';
import { parseEvents, type RunEvidence } from '../../src/evidence/audit/run-evidence.js';
import {
  EXPORTED_NAME_MAX,
  UNKNOWN_TOOL,
  runToOtlp,
  type OtlpSpan,
} from '../../src/evidence/export/otlp.js';

const RUN_ID = '20260101T000000Z-0123abcd';
const none = { present: false, value: undefined } as const;

function evidence(tools: readonly string[], snapshot: Record<string, unknown>): RunEvidence {
  const events = [
    { type: 'run_created', data: { kind: 'agent', profile: 'p', imageId: 'sha256:0' } },
    ...tools.map((tool, i) => ({
      type: 'tool_requested',
      data: { callId: `call-000${i + 1}`, toolUseId: `toolu_${i + 1}`, tool, input: '{}' },
    })),
  ];
  const body = events
    .map((e, i) =>
      JSON.stringify({ seq: i + 1, ts: '2026-01-01T00:00:00.000Z', type: e.type, data: e.data }),
    )
    .join('\n');
  const { events: loaded, badLines } = parseEvents(body);
  return {
    dir: `/runs/${RUN_ID}`,
    runId: RUN_ID,
    eventLog: { present: true },
    eventsBody: body,
    events: loaded,
    badLines,
    snapshot: { present: true, value: snapshot },
    report: none,
    state: none,
    signature: none,
    transcript: undefined,
    files: [],
    listProblems: [],
    locked: false,
  };
}

function toolSpans(run: RunEvidence): OtlpSpan[] {
  const doc = runToOtlp(run, '0.0.0-test') as {
    resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
  };
  return (doc.resourceSpans[0]?.scopeSpans[0]?.spans ?? []).filter((s) =>
    s.name.startsWith('execute_tool'),
  );
}

const toolNameOf = (s: OtlpSpan): unknown =>
  s.attributes.find((a) => a.key === 'gen_ai.tool.name')?.value;

describe('OTLP export: tool names only from the run tool surface, bounded', () => {
  it('exports a surface name, and unknown_tool for a 100 KiB name and names with control characters', () => {
    const huge = 'x'.repeat(100 * 1024);
    const run = evidence(['read_file', huge, 'evil\u001b[31m\nname', 'read_file\u0007', 'exec'], {
      tools: ['read_file'],
      hostTools: [{ name: 'exec', kind: 'exec' }],
    });
    const spans = toolSpans(run);
    expect(spans.map((s) => s.name)).toEqual([
      'execute_tool read_file',
      `execute_tool ${UNKNOWN_TOOL}`,
      `execute_tool ${UNKNOWN_TOOL}`,
      `execute_tool ${UNKNOWN_TOOL}`,
      'execute_tool exec',
    ]);
    expect(spans.map(toolNameOf)).toEqual([
      { stringValue: 'read_file' },
      { stringValue: UNKNOWN_TOOL },
      { stringValue: UNKNOWN_TOOL },
      { stringValue: UNKNOWN_TOOL },
      { stringValue: 'exec' },
    ]);
    const text = JSON.stringify(runToOtlp(run, '0.0.0-test'));
    expect(text).not.toContain('xxxxxxxx');
    expect(text).not.toContain('\\u001b');
    expect(text).not.toContain('\\u0007');
  });

  it('a surface name a snapshot carries past the bound, or with a control character, is not exported either', () => {
    const long = `t${'a'.repeat(EXPORTED_NAME_MAX)}`;
    const run = evidence([long, 'bad\tname'], { tools: [long, 'bad\tname'] });
    expect(toolSpans(run).map((s) => s.name)).toEqual([
      `execute_tool ${UNKNOWN_TOOL}`,
      `execute_tool ${UNKNOWN_TOOL}`,
    ]);
  });
});
