// `cfh runs export --format otlp-json`: a run as OpenTelemetry spans in the OTLP/JSON
// encoding (an ExportTraceServiceRequest an operator can POST to a collector's
// /v1/traces): one span for the run, one per model call, tool call and container, all
// children of the run's. Attribute names follow the GenAI semantic conventions where they
// exist (gen_ai.*), container.* for containers, cfh.* otherwise. No prompt, model text or
// tool payload is exported: only digests and sizes. The tool name a model proposed is model
// text too: a span names a tool only when the run's tool surface (the snapshot's `tools` and
// host tools) holds that name, else `unknown_tool`, and every name is bounded.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { partOf } from '../audit/parts.js';
import type { RunEvidence } from '../audit/run-evidence.js';
import { eventsOf } from '../audit/run-evidence.js';
import { toolCalls } from '../audit/tool-calls.js';
import { recordedFiles } from '../audit/checks-integrity.js';

type AnyValue =
  | { stringValue: string }
  | { intValue: string }
  | { boolValue: boolean }
  | { arrayValue: { values: AnyValue[] } };
interface KeyValue {
  readonly key: string;
  readonly value: AnyValue;
}

export interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  /** 1 internal, 3 client. */
  readonly kind: number;
  readonly startTimeUnixNano: string;
  readonly endTimeUnixNano: string;
  readonly attributes: KeyValue[];
  readonly status: { readonly code: number; readonly message?: string };
}

const SPAN_INTERNAL = 1;
const SPAN_CLIENT = 3;
const STATUS_OK = 1;
const STATUS_ERROR = 2;

function attr(
  key: string,
  value: string | number | boolean | readonly string[] | undefined,
): KeyValue[] {
  if (value === undefined) return [];
  if (Array.isArray(value))
    return [
      { key, value: { arrayValue: { values: value.map((v: string) => ({ stringValue: v })) } } },
    ];
  if (typeof value === 'number')
    return [
      {
        key,
        value: Number.isInteger(value)
          ? { intValue: String(value) }
          : { stringValue: String(value) },
      },
    ];
  if (typeof value === 'boolean') return [{ key, value: { boolValue: value } }];
  return [{ key, value: { stringValue: String(value) } }];
}

const hex = (text: string, chars: number): string =>
  createHash('sha256').update(text).digest('hex').slice(0, chars);
const nanos = (ts: string | undefined): string =>
  ts === undefined || ts === '' ? '0' : `${BigInt(Date.parse(ts)) * 1_000_000n}`;
const sha = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

/** What a span may carry of a name: a short identifier, nothing a model could fill. */
export const EXPORTED_NAME_MAX = 64;
const EXPORTABLE_NAME = new RegExp(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,${EXPORTED_NAME_MAX - 1}}$`);
export const UNKNOWN_TOOL = 'unknown_tool';

const HostToolNames = z.array(z.looseObject({ name: z.string() }).or(z.unknown()));

/** The names of the run's tool surface as its snapshot recorded them, each exportable. */
export function toolSurfaceOf(run: RunEvidence): ReadonlySet<string> {
  const names = new Set<string>();
  const tools = partOf(run.snapshot.value, 'tools', z.array(z.string()));
  if (tools.ok) for (const t of tools.value) names.add(t);
  const host = partOf(run.snapshot.value, 'hostTools', HostToolNames);
  if (host.ok)
    for (const h of host.value) {
      const named = z.looseObject({ name: z.string() }).safeParse(h);
      if (named.success) names.add(named.data.name);
    }
  return new Set([...names].filter((n) => EXPORTABLE_NAME.test(n)));
}

/** A name the evidence holds, as a span may carry it: bounded, printable, or a placeholder. */
function boundedName(name: string, fallback: string): string {
  return EXPORTABLE_NAME.test(name) ? name : fallback;
}

export function runToOtlp(run: RunEvidence, cfhVersion: string): Record<string, unknown> {
  const surface = toolSurfaceOf(run);
  const toolName = (proposed: string): string => (surface.has(proposed) ? proposed : UNKNOWN_TOOL);
  const traceId = hex(`trace:${run.runId}`, 32);
  const rootId = hex(`span:${run.runId}:run`, 16);
  const created = eventsOf(run, 'run_created')[0];
  const end = eventsOf(run, 'run_finished').at(-1);
  const last = run.events.at(-1);
  const agent = created?.data.kind === 'agent';
  const egress = eventsOf(run, 'egress');
  const spans: OtlpSpan[] = [
    {
      traceId,
      spanId: rootId,
      name: agent ? 'invoke_agent cfh' : 'cfh.run',
      kind: SPAN_INTERNAL,
      startTimeUnixNano: nanos(run.events[0]?.ts),
      endTimeUnixNano: nanos(end?.ts ?? last?.ts),
      attributes: [
        ...attr('gen_ai.operation.name', agent ? 'invoke_agent' : undefined),
        ...attr('cfh.run.id', run.runId),
        ...attr('cfh.run.kind', created?.data.kind),
        ...attr('cfh.profile', created?.data.profile),
        ...attr('container.image.id', created?.data.imageId),
        ...attr('cfh.run.status', end?.data.status ?? 'unfinished'),
        ...attr('cfh.run.terminal_reason', end?.data.terminalReason),
        ...attr('cfh.run.exit_code', end?.data.exitCode),
        ...attr('cfh.events', run.events.length),
        ...attr('cfh.egress.attempts', egress.length),
        ...attr('cfh.egress.allowed', egress.filter((e) => e.data.allowed).length),
      ],
      status:
        end?.data.status === 'completed'
          ? { code: STATUS_OK }
          : { code: STATUS_ERROR, message: end?.data.terminalReason ?? 'unfinished' },
    },
  ];
  const child = (key: string): { traceId: string; spanId: string; parentSpanId: string } => ({
    traceId,
    spanId: hex(`span:${run.runId}:${key}`, 16),
    parentSpanId: rootId,
  });

  const started = new Map(eventsOf(run, 'model_call_started').map((e) => [e.data.attemptId, e]));
  for (const c of eventsOf(run, 'model_call_completed')) {
    const u = c.data.usage;
    spans.push({
      ...child(`model:${c.data.attemptId}`),
      name: `chat ${boundedName(c.data.model, 'unknown_model')}`,
      kind: SPAN_CLIENT,
      startTimeUnixNano: nanos(started.get(c.data.attemptId)?.ts ?? c.ts),
      endTimeUnixNano: nanos(c.ts),
      attributes: [
        ...attr('gen_ai.operation.name', 'chat'),
        ...attr('gen_ai.provider.name', c.data.adapter),
        ...attr('gen_ai.response.model', boundedName(c.data.model, 'unknown_model')),
        ...attr('gen_ai.response.finish_reasons', [c.data.stopReason]),
        ...attr('gen_ai.usage.input_tokens', u.input_tokens),
        ...attr('gen_ai.usage.output_tokens', u.output_tokens),
        ...attr('gen_ai.usage.cache_read.input_tokens', u.cache_read_input_tokens),
        ...attr('gen_ai.usage.cache_creation.input_tokens', u.cache_creation_input_tokens),
        ...attr('cfh.model.attempt_id', c.data.attemptId),
        ...attr(
          'cfh.cost.estimate',
          c.data.costEstimate !== undefined && 'estimated' in c.data.costEstimate
            ? c.data.costEstimate.estimated
            : undefined,
        ),
      ],
      status: { code: STATUS_OK },
    });
  }

  const { files } = recordedFiles(run);
  for (const call of toolCalls(run).values()) {
    const req = call.requests[0];
    const result = call.results[0];
    if (req === undefined) continue;
    const decision = call.decisions[0]?.data;
    const outputs = result?.type === 'tool_executed' ? result.data.outputs : [];
    const failed =
      result === undefined || result.type !== 'tool_executed' || result.data.status !== 'success';
    spans.push({
      ...child(`tool:${call.callId}`),
      name: `execute_tool ${toolName(req.data.tool)}`,
      kind: SPAN_INTERNAL,
      startTimeUnixNano: nanos(req.ts),
      endTimeUnixNano: nanos(result?.ts ?? req.ts),
      attributes: [
        ...attr('gen_ai.operation.name', 'execute_tool'),
        ...attr('gen_ai.tool.name', toolName(req.data.tool)),
        ...attr('gen_ai.tool.call.id', boundedName(req.data.toolUseId, 'unknown_id')),
        ...attr('cfh.tool.call_id', call.callId),
        ...attr('cfh.tool.input.sha256', sha(req.data.input)),
        ...attr('cfh.tool.input.chars', req.data.input.length),
        ...attr('cfh.tool.decision', decision?.decision),
        ...attr('cfh.tool.rule', decision?.policy_rule),
        ...attr(
          'cfh.tool.outcome',
          result === undefined
            ? 'none'
            : result.type === 'tool_executed'
              ? result.data.status
              : result.type,
        ),
        ...attr(
          'cfh.tool.exit_code',
          result?.type === 'tool_executed' ? (result.data.exitCode ?? undefined) : undefined,
        ),
        ...attr(
          'cfh.tool.attempts',
          result?.type === 'tool_executed' && 'attempts' in result.data
            ? result.data.attempts
            : undefined,
        ),
        ...attr('cfh.tool.output.files', outputs),
        ...attr(
          'cfh.tool.output.bytes',
          outputs.reduce((n, o) => n + (files.get(o)?.bytes ?? 0), 0),
        ),
        ...attr(
          'cfh.tool.output.sha256',
          outputs.map((o) => files.get(o)?.sha256 ?? ''),
        ),
      ],
      status: failed
        ? { code: STATUS_ERROR, message: result?.type ?? 'no result' }
        : { code: STATUS_OK },
    });
  }

  const removedAt = new Map<string, string>();
  for (const e of eventsOf(run, 'container_removed')) removedAt.set(e.data.containerId, e.ts);
  for (const e of eventsOf(run, 'tool_container_removed')) removedAt.set(e.data.containerId, e.ts);
  const containers = [
    ...eventsOf(run, 'container_created').map((e) => ({
      id: e.data.containerId,
      name: e.data.name,
      kind: 'command',
      ts: e.ts,
      seccomp: e.data.seccompSha256,
    })),
    ...eventsOf(run, 'tool_container_started').map((e) => ({
      id: e.data.containerId,
      name: e.data.name,
      kind: e.data.kind,
      ts: e.ts,
      seccomp: undefined,
    })),
  ];
  for (const c of containers) {
    const removed = removedAt.get(c.id);
    spans.push({
      ...child(`container:${c.id}`),
      name: `container ${c.name}`,
      kind: SPAN_INTERNAL,
      startTimeUnixNano: nanos(c.ts),
      endTimeUnixNano: nanos(removed ?? end?.ts ?? c.ts),
      attributes: [
        ...attr('container.id', c.id),
        ...attr('container.name', c.name),
        ...attr('cfh.container.kind', c.kind),
        ...attr('cfh.container.removed', removed !== undefined),
        ...attr('cfh.seccomp.sha256', c.seccomp),
      ],
      status:
        removed === undefined
          ? { code: STATUS_ERROR, message: 'not recorded removed' }
          : { code: STATUS_OK },
    });
  }
  return {
    resourceSpans: [
      {
        resource: {
          attributes: [
            ...attr('service.name', 'cfh'),
            ...attr('service.version', cfhVersion),
            ...attr('cfh.run.id', run.runId),
          ],
        },
        scopeSpans: [{ scope: { name: 'cfh', version: cfhVersion }, spans }],
      },
    ],
  };
}
