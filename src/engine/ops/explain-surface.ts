// The surface `cfh policy explain` (and `profiles show --resolved`) decides over: what a run
// of a profile offers, made by the run's own builder (tool-surface.ts) from the parts as a
// run plans them before it opens anything. A run's host tools are opened (an MCP server's
// `*` lists its tools only then); here they are as the profile declares them, a `*` tool by
// the name asked about.
import type { Profile } from '../../config/profile-schema.js';
import type { RunFacts } from '../../mediator/policy.js';
import { WORKSPACE_TARGET } from '../../sandbox/mount-policy.js';
import { ToolRegistry, type ToolDefinition } from '../../tools/contract.js';
import { delegateToolOf } from '../children/delegate-offer.js';
import { planRunCfc } from '../cfc/cfc-plan.js';
import {
  SURFACE_FRONTS,
  declaredHostTools,
  draftPart,
  toolSurface,
  type SurfaceFront,
  type SurfaceParts,
} from '../agent/tool-surface.js';

/**
 * Every part a top-level run of `profile` with `facts` plans: `delegate` with the profile's
 * whole delegation depth (as agent-delegation.ts offers it), the declared host tools, and a
 * draft session's tools when the workspace is a draft (labelled from the profile's CFC plan).
 */
function plannedParts(profile: Profile, facts: RunFacts, wanted?: string): SurfaceParts {
  const cfc = planRunCfc(profile, [], [], WORKSPACE_TARGET, { describing: true });
  return {
    delegate: delegateToolOf(profile, profile.budgets.maxDelegationDepth, () => false)?.tool,
    host: declaredHostTools(profile, wanted),
    draft: draftPart(facts.workspaceMode, cfc),
  };
}

/** What `front` of a run of `profile` with `facts` offers (with `wanted`, a `*` MCP tool). */
export function surfaceOf(
  profile: Profile,
  facts: RunFacts,
  front: SurfaceFront,
  wanted?: string,
): ToolRegistry {
  return toolSurface(profile.tools, front, plannedParts(profile, facts, wanted));
}

export interface KnownTools {
  /** Every tool some front of such a run offers. */
  readonly registry: ToolRegistry;
  /** The fronts that offer `name` (none: not a tool of such a run). */
  offeredBy(name: string): SurfaceFront[];
}

/** Every tool a run of `profile` with `facts` can have, on whichever front offers it. */
export function knownTools(profile: Profile, facts: RunFacts, wanted?: string): KnownTools {
  const parts = plannedParts(profile, facts, wanted);
  const fronts = SURFACE_FRONTS.map((front) => ({
    front,
    surface: toolSurface(profile.tools, front, parts),
  }));
  const byName = new Map<string, ToolDefinition>();
  for (const { surface } of fronts) for (const t of surface.all()) byName.set(t.name, t);
  return {
    registry: new ToolRegistry([...byName.values()], [...byName.keys()]),
    offeredBy: (name) =>
      fronts.filter(({ surface }) => surface.get(name) !== undefined).map((f) => f.front),
  };
}
