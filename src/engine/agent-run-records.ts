// What an agent run's evidence says of its model and prompt slots (agent-run.ts): the
// gateway as the snapshot names it, the slots with an approved plan as context, digests.
import { createHash } from 'node:crypto';
import type { ModelGateway } from '../model/gateway.js';
import type { PromptSlots } from './agent-loop.js';
import { planContext, type ApprovedPlan } from './from-plan.js';

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
