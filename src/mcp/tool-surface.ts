// The MCP face of a run's built-in tools (`cfh mcp`): the names and input schemas an MCP
// client is shown, and how what it sends becomes a proposal of the built-in tool. Only the
// tools the profile allows are listed; the schema is derived from the tool's own zod schema,
// so the client is held to the same input contract as an agent (the mediator checks it again).
import { z } from 'zod';
import { toolSurface } from '../engine/agent/tool-surface.js';
import type { ToolRegistry, ToolDefinition } from '../tools/contract.js';
import type { Observation } from '../tools/observation.js';

/** A built-in listed under another name, with its input fields renamed for MCP. */
interface Renamed {
  readonly builtin: string;
  readonly fields: Readonly<Record<string, string>>;
}

/** `sandbox_exec {argv, timeout?}` is the built-in `exec {command, timeout?}`. */
const RENAMED: Readonly<Record<string, Renamed>> = {
  sandbox_exec: { builtin: 'exec', fields: { command: 'argv' } },
};

const MCP_NAME_OF = new Map(Object.entries(RENAMED).map(([mcp, r]) => [r.builtin, mcp]));

export interface McpToolListing {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: { type: 'object'; [key: string]: unknown };
  readonly annotations: { readOnlyHint: boolean; destructiveHint: boolean; openWorldHint: false };
}

/** The MCP name of a built-in. */
export function mcpNameOf(builtin: string): string {
  return MCP_NAME_OF.get(builtin) ?? builtin;
}

/**
 * The registry of what MCP lists: the MCP front of a run's surface (engine/agent/tool-surface.ts),
 * the profile's built-ins, no host tool and no `delegate`, and for a draft session
 * `runs_diff` and `runs_apply` (draftPart; docs/operators.md).
 */
export function mcpRegistry(
  profileTools: readonly string[],
  draft: readonly ToolDefinition[],
): ToolRegistry {
  return toolSurface(profileTools, 'mcp', { delegate: undefined, host: [], draft });
}

export function listTools(registry: ToolRegistry): McpToolListing[] {
  return registry.all().map((tool) => {
    const renamed = RENAMED[mcpNameOf(tool.name)];
    const schema = z.toJSONSchema(tool.input) as Record<string, unknown>;
    delete schema.$schema;
    return {
      name: mcpNameOf(tool.name),
      description: renamed === undefined ? tool.purpose : renamePurpose(tool.purpose, renamed),
      inputSchema: {
        ...renameSchema(schema, renamed?.fields ?? {}),
        type: 'object',
      },
      annotations: {
        readOnlyHint: tool.sideEffectClass === 'none',
        destructiveHint: tool.sideEffectClass !== 'none',
        openWorldHint: false,
      },
    };
  });
}

function renamePurpose(purpose: string, renamed: Renamed): string {
  let out = purpose;
  for (const [from, to] of Object.entries(renamed.fields))
    out = out.replaceAll(`\`${from}\``, `\`${to}\``);
  return out;
}

function renameSchema(
  schema: Record<string, unknown>,
  fields: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const properties = schema.properties as Record<string, unknown> | undefined;
  if (properties === undefined) return schema;
  const renamedProps = Object.fromEntries(
    Object.entries(properties).map(([k, v]) => [fields[k] ?? k, v]),
  );
  const required = Array.isArray(schema.required)
    ? (schema.required as string[]).map((k) => fields[k] ?? k)
    : schema.required;
  return { ...schema, properties: renamedProps, ...(required === undefined ? {} : { required }) };
}

/**
 * The built-in proposal for what the client sent. A listed name becomes its built-in with its
 * fields renamed back; any other name is proposed as the client spelled it, except a
 * built-in's own name where MCP lists it under another (`exec`): that is not on the MCP
 * surface, so it is proposed as `unlisted:NAME` and refused as an unknown tool.
 */
export function proposalOf(name: string, input: unknown): { name: string; input: unknown } {
  const renamed = RENAMED[name];
  if (renamed === undefined)
    return { name: MCP_NAME_OF.has(name) ? `unlisted:${name}` : name, input };
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    return { name: renamed.builtin, input };
  const back = Object.fromEntries(Object.entries(renamed.fields).map(([b, m]) => [m, b]));
  // A built-in field name sent as itself is not the MCP contract: kept apart, so the
  // tool's strict schema refuses it rather than take it for the renamed field.
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) {
    if (back[k] !== undefined) out[back[k]] = v;
    else out[k in renamed.fields ? `mcp:${k}` : k] = v;
  }
  return { name: renamed.builtin, input: out };
}

/** The observation as an MCP tool result: the same JSON, an error unless it succeeded. */
export function toolResultOf(observation: Observation): {
  content: { type: 'text'; text: string }[];
  structuredContent: Record<string, unknown>;
  isError: boolean;
} {
  return {
    content: [{ type: 'text', text: JSON.stringify(observation) }],
    structuredContent: { ...observation },
    isError: observation.status !== 'success',
  };
}
