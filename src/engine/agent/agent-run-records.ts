// What an agent run's evidence says of its model and prompt slots (agent-run.ts): the
// gateway as the snapshot names it, the slots with an approved plan as context, digests.
import { createHash } from 'node:crypto';
import type { CarriedContext } from '../../cfc/carried.js';
import type { EventRecord } from '../../evidence/event-log.js';
import { modelEvents } from '../../evidence/schema/events-model.js';
import type { ModelGateway } from '../../model/gateway.js';
import type { PromptSlots, UsageRecord } from './agent-loop.js';
import { planContext, type ApprovedPlan } from '../resume/from-plan.js';

/** The adapter of a run whose model side is an MCP client (`cfh mcp`): no gateway of cfh's. */
export const MCP_CLIENT_ADAPTER = 'mcp-client';

export function digest(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

/** The gateway as the evidence names it; a scripted replay says plainly it is not a model. */
export function modelRecord(gateway: ModelGateway): Record<string, unknown> {
  return {
    adapter: gateway.adapter,
    route: gateway.route,
    ...(gateway.adapter === 'scripted'
      ? { languageModel: false, notice: 'scripted replay: no language model took part' }
      : gateway.adapter === MCP_CLIENT_ADAPTER
        ? {
            languageModel: false,
            notice:
              'the calls are proposed by an MCP client (snapshot modelSide); cfh sent no model request',
          }
        : { languageModel: true }),
  };
}

/** The prompt slots, with an approved plan first among the context (never as authority). */
export function slotsOf(request: {
  readonly slots: PromptSlots;
  readonly fromPlan?: ApprovedPlan | undefined;
}): PromptSlots {
  const { slots, fromPlan } = request;
  if (fromPlan === undefined) return slots;
  return { ...slots, context: [planContext(fromPlan), ...(slots.context ?? [])] };
}

/**
 * Every context the run's model starts from that came from elsewhere (cfc/carried.ts): the
 * caller's (resume, restore, delegation), an approved plan's, and the prompt files' places.
 */
export function carriedInto(
  plan: { readonly promptFiles: readonly { readonly carried?: CarriedContext | undefined }[] },
  request: {
    readonly carried?: readonly CarriedContext[] | undefined;
    readonly fromPlan?: ApprovedPlan | undefined;
  },
): CarriedContext[] {
  return [
    ...(request.carried ?? []),
    ...(request.fromPlan === undefined ? [] : [request.fromPlan.carried]),
    ...plan.promptFiles.flatMap((f) => (f.carried === undefined ? [] : [f.carried])),
  ];
}

/**
 * The run's model attempts as its log records them (model_call_completed), for report.json's
 * `usage` (AH-USAGE-1): whatever ends the run, a cancellation mid-turn included, the report
 * counts what the log holds, never what a loop that did not return would have said.
 */
export class AttemptLedger {
  readonly records: UsageRecord[] = [];

  readonly listener = (_line: string, record: EventRecord): void => {
    if (record.type !== 'model_call_completed') return;
    // The log appended it through the same schema: a record that does not parse is a broken
    // harness, not a usage row to guess at.
    const d = modelEvents.model_call_completed.parse(record.data);
    const usage: Record<string, number> = {};
    for (const [k, v] of Object.entries(d.usage)) if (v !== undefined) usage[k] = v;
    this.records.push({ attemptId: d.attemptId, adapter: d.adapter, model: d.model, usage });
  };
}
