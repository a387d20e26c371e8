// Events of host tools (AH-TOOL-7..9): the channel to a stdio MCP server or an exec
// program on the host, its processes, what it created, and the opaque references cfh
// issued for it. These schemas name the fields the audit and the report read and leave the
// rest open (looseObject): the host-tool channel owns the full shapes; tighten a schema to a
// strictObject with the fields its writer sets (src/engine/agent/host-tools.ts, src/tools/host/).
import { z } from 'zod';
import { CallId, Count } from './common.js';

const Pid = z.number().int().nullable();

export const hostEvents = {
  host_tools_listed: z.looseObject({
    tool: z.string(),
    listed: Count,
    exposed: z.array(z.unknown()),
  }),
  host_tools_ready: z.looseObject({ tools: z.array(z.string()) }),
  host_tool_started: z.looseObject({ tool: z.string(), kind: z.enum(['exec', 'mcp']), pid: Pid }),
  host_tool_stopped: z.looseObject({ tool: z.string(), pid: Pid, reason: z.string() }),
  host_tool_retired: z.looseObject({ tool: z.string(), reason: z.string(), pid: Pid }),
  host_tool_progress: z.looseObject({ callId: CallId, tool: z.string(), progress: z.number() }),
  host_tool_progress_dropped: z.looseObject({
    callId: CallId,
    tool: z.string(),
    kept: Count,
    dropped: Count,
  }),
  /**
   * A host tool's program, script or cwd was not what planning pinned, right before a
   * start (AH-TOOL-7): the start was refused and the run fails.
   */
  host_tool_changed: z.strictObject({
    tool: z.string(),
    purpose: z.string(),
    callId: CallId.nullable(),
    role: z.string(),
    path: z.string(),
    what: z.enum(['moved', 'replaced', 'changed', 'content', 'missing']),
  }),
  /** A durable external resource a host tool created (AH-TOOL-9). */
  host_resources_created: z.looseObject({}),
  /**
   * An opaque reference cfh minted for a field of a host tool's structured result (AH-REF-1):
   * its name, its authority (the host tool entry) and the kind the profile gave the field.
   * Nothing else: the value stays in cfh's memory and in outputs/, and no digest or length
   * of it is kept (a short value would be found by trying candidates against one).
   */
  opaque_reference_issued: z.strictObject({
    ref: z.string().regex(/^cfh-ref:[A-Za-z0-9_-]{1,32}:[a-z2-7]{16}$/),
    authority: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/),
    kind: z.string().regex(/^[a-z][a-z0-9_]{0,31}$/),
  }),
} as const;
