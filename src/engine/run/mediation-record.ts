// What the mediator decides with, fixed before the first call and kept in snapshot.json
// (`mediation`): the run's facts as policy reads them and the contract of every tool known at
// the start. The run's Policy is made from the same facts (agent-surface.ts), so the audit
// re-derives each decision from exactly what the mediator had (audit/checks-policy.ts).
import { hostToolLabels, type HostToolLabels } from '../../cfc/host-tool-labels.js';
import type { Profile } from '../../config/profile-schema.js';
import type { HostToolLabelsRecord, SnapshotMediation } from '../../evidence/schema/snapshot.js';
import type { RunFacts } from '../../mediator/policy.js';
import type { ToolDefinition } from '../../tools/contract.js';
import { mountChannelOf } from '../agent/agent-tool-setup.js';
import { declaredHostTools } from '../agent/tool-surface.js';
import type { RunPlan } from './run-plan.js';

/** The run's facts (agent runs): what policy's rules and defaults depend on. */
export function runFactsFor(
  plan: RunPlan,
  request: { readonly mode: 'run' | 'plan'; readonly fromPlan?: unknown },
): RunFacts {
  return {
    // Planning mode: policy denies every mutation (rule planning_mode, policy.ts).
    mode: request.mode,
    // Writes in a draft workspace are draft-only (the copy; the host is written by `runs apply`).
    workspaceMode: plan.workspaceMode,
    network: plan.profile.network.mode,
    rwMounts: plan.spec.mounts.some((m) => m.mode === 'rw'),
    ...mountChannelOf(plan.mountChecks.specialFiles),
    // Executing an approved plan: calls with risk ask for approval (rule from_plan).
    fromPlan: request.fromPlan !== undefined,
  };
}

function labelsRecord(l: HostToolLabels): HostToolLabelsRecord {
  return {
    result:
      l.result === undefined
        ? null
        : { confidentiality: [...l.result.confidentiality], integrity: [...l.result.integrity] },
    clearance: [...l.clearance],
    requires: [...l.requires],
    readsBeforeWrite: l.readsBeforeWrite,
    declassifies: l.declassifies,
  };
}

/**
 * snapshot.json `mediation`: `surface` is the run's surface as planned before any host tool
 * opens (tool-surface.ts: the built-ins on the allowlist, `delegate`, an MCP draft session's
 * tools); the host tools a profile declares are added as a run defines them (exec tools,
 * named MCP tools). A name is recorded once, as the surface has it.
 */
export function mediationRecord(
  facts: RunFacts,
  surface: readonly ToolDefinition[],
  profile: Profile,
): SnapshotMediation {
  const byName = new Map<string, ToolDefinition>();
  for (const t of [...surface, ...declaredHostTools(profile)])
    if (!byName.has(t.name)) byName.set(t.name, t);
  const tools = [...byName.values()];
  return {
    facts: {
      mode: facts.mode,
      workspaceMode: facts.workspaceMode,
      network: facts.network,
      rwMounts: facts.rwMounts,
      mountChannel: facts.mountChannel ?? null,
      fromPlan: facts.fromPlan,
    },
    tools: tools.map((t) => ({
      name: t.name,
      executor: t.executor,
      riskClass: t.riskClass,
      sideEffectClass: t.sideEffectClass,
      resourceScope: t.resourceScope,
      permissionPolicy: t.permissionPolicy,
      cfc: t.cfc === undefined ? null : labelsRecord(t.cfc),
    })),
    // A tool `*` exposes is labelled by its entry (hostToolLabels without a name it declares).
    unnamedMcpLabels: Object.fromEntries(
      profile.hostTools
        .filter((e) => e.kind === 'mcp' && e.tools.some((t) => t.name === '*'))
        .map((e) => [e.name, labelsRecord(hostToolLabels(e))]),
    ),
  };
}
