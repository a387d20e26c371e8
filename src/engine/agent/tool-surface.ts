// The one builder of a run's tool surface, for the run itself (agent-run.ts), for `cfh mcp`
// (mcp/tool-surface.ts) and for `cfh policy explain` (policy-explain.ts): every kind of tool
// a run can have is a part here, each part required of every caller, and which front offers
// which part is decided here only. So explain cannot miss a kind of tool a run offers (it
// once missed host tools, then `delegate` and the draft tools).
import type { CfcPlan } from '../../cfc/label-map.js';
import type { Profile } from '../../config/profile-schema.js';
import { joinAll, label } from '../../cfc/label.js';
import { workloadReadable } from '../../cfc/label-map.js';
import { BUILTIN_TOOLS } from '../../tools/builtins.js';
import { ToolRegistry, type ToolDefinition } from '../../tools/contract.js';
import { draftTools } from '../../tools/draft-tools.js';
import {
  declaredMcpToolDefinition,
  execToolDefinition,
  type HostTool,
} from '../../tools/host/host-tool.js';
import { OpaqueReferences } from '../../tools/host/opaque-refs.js';

/**
 * Who proposes a run's calls: its model (`sandbox run --prompt`, `sandbox resume`, a `cfh
 * serve` session, a child run) or an MCP client (`cfh mcp`).
 */
export type SurfaceFront = 'agent' | 'mcp';
export const SURFACE_FRONTS: readonly SurfaceFront[] = ['agent', 'mcp'];

/** What a surface holds beside the built-ins the profile allows, each made as a run makes it. */
export interface SurfaceParts {
  /** `delegate`, when the profile lists children and depth is left (agent-delegation.ts). */
  readonly delegate: ToolDefinition | undefined;
  /** Host tools: as the profile declares them (before a run opens them), or as opened. */
  readonly host: readonly ToolDefinition[];
  /** A draft session's `runs_diff`/`runs_apply` (draftPart). */
  readonly draft: readonly ToolDefinition[];
}

/** The parts a front does not offer (AH-TOOL-7: host-executed tools are advertised apart). */
const OFFERED: Readonly<Record<SurfaceFront, readonly (keyof SurfaceParts)[]>> = {
  // The model gets delegation and the host tools; a draft ends in a patch for `runs apply`.
  agent: ['delegate', 'host'],
  // An MCP client gets the built-ins (sandbox_exec for exec) and a draft session's tools.
  mcp: ['draft'],
};

/** The surface `front` offers: the built-ins the profile allows, and the parts it offers. */
export function toolSurface(
  allow: readonly string[],
  front: SurfaceFront,
  parts: SurfaceParts,
): ToolRegistry {
  const offered = OFFERED[front];
  const extra = [
    ...(offered.includes('delegate') && parts.delegate !== undefined ? [parts.delegate] : []),
    ...(offered.includes('host') ? parts.host : []),
    ...(offered.includes('draft') ? parts.draft : []),
  ];
  const builtins = new Set(BUILTIN_TOOLS.map((t) => t.name));
  return new ToolRegistry(
    [...BUILTIN_TOOLS, ...extra],
    [...allow.filter((t) => builtins.has(t)), ...extra.map((t) => t.name)],
  );
}

/**
 * The tools a surface advertises with the built-ins (snapshot.json `tools`): all but those
 * advertised apart, the host tools (snapshot `hostTools`, `host_tools_ready`) and the draft
 * tools (`draft_tools_ready`).
 */
export function snapshotTools(
  allow: readonly string[],
  front: SurfaceFront,
  parts: SurfaceParts,
): string[] {
  return toolSurface(allow, front, { ...parts, host: [], draft: [] }).names();
}

/**
 * A draft session's own tools, for a run whose workspace is a draft copy. AH-CFC-1/2: the
 * copy holds what the workload could read and write into it (every source exec's container
 * reads, joined; opaque under enforcement when one is unlabelled), and the host workspace
 * takes what the workspace mount's clearance allows.
 */
export function draftPart(workspaceMode: string, cfc: CfcPlan): ToolDefinition[] {
  if (workspaceMode !== 'draft') return [];
  const readable = workloadReadable(cfc);
  return draftTools({
    draft: readable.unlabelled.length > 0 ? undefined : joinAll(label(), readable.labels),
    clearance: cfc.mounts[0]?.clearance ?? [],
  });
}

/**
 * The host tools a profile declares, as a run puts them on the surface: exec tools with
 * their schema; MCP tools the profile names, and (`*`) `wanted` if it is one of that server's
 * names, unclassified, as a run treats a tool `*` exposes.
 */
export function declaredHostTools(profile: Profile, wanted?: string): HostTool[] {
  const refs = new OpaqueReferences();
  const out: HostTool[] = [];
  for (const entry of profile.hostTools) {
    if (entry.kind === 'exec') {
      out.push(execToolDefinition(entry, refs));
      continue;
    }
    for (const t of entry.tools)
      if (t.name !== '*') out.push(declaredMcpToolDefinition(entry, t.name, refs));
    const prefix = `mcp__${entry.name}__`;
    const rest = wanted?.startsWith(prefix) === true ? wanted.slice(prefix.length) : undefined;
    if (
      rest !== undefined &&
      rest !== '' &&
      entry.tools.some((t) => t.name === '*') &&
      !out.some((t) => t.name === wanted)
    )
      out.push(declaredMcpToolDefinition(entry, rest, refs));
  }
  return out;
}
