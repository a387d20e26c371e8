// The `delegate` tool a run offers when its profile lists children (AH-DEL-1): made here for
// the run (agent-delegation.ts, beside its runner) and for `policy explain` alike
// (explain-surface.ts), from the resolved child profiles only: nothing of how a child runs.
import { resolveChildren, type ResolvedChild } from '../../config/child-profiles.js';
import type { Profile } from '../../config/profile-schema.js';
import type { ToolDefinition } from '../../tools/contract.js';
import { delegateTool } from '../../tools/delegate-tool.js';

/**
 * The `delegate` tool a run of `profile` offers with `depthLeft` levels of delegation left,
 * or none (no children, or no depth left): the run's (delegationOf) and `policy explain`'s.
 * `runsAlone`: its children are run one at a time (child-runner.ts switchesIdentity).
 */
export function delegateToolOf(
  profile: Profile,
  depthLeft: number,
  runsAlone: () => boolean,
): { tool: ToolDefinition; children: ResolvedChild[] } | undefined {
  if (depthLeft <= 0) return undefined;
  const children = resolveChildren(profile, depthLeft);
  if (children.length === 0) return undefined;
  const tool = delegateTool(
    children.map((c) => ({
      name: c.name,
      description: c.loaded.profile.description,
      clearance: c.ceiling ?? c.loaded.profile.cfc.modelClearance,
      ceiling: c.ceiling !== undefined,
      maxReturnChars: c.entry.returns.maxChars,
    })),
    { runsAlone: runsAlone() },
  );
  return { tool, children };
}
