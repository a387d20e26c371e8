// Host tools as tool definitions (executor `host`), in the governance extension's
// vocabulary like any other. Classes come from the operator, never from the server: an MCP
// tool's own annotations (readOnlyHint, destructiveHint, ...) are recorded and cannot lower
// anything, and an exposed tool the operator did not classify is treated as changing an
// external system and decided `approval_required` (its contract says so). Input is checked
// against the declared schema (an exec field's anchored pattern, an MCP tool's JSON Schema as
// zod) in the model's form, its opaque references resolved for this authority only, and the
// resolved input checked again (withReferences), so a cross-authority or schema-incompatible
// input is an invalid argument and nothing is sent (AH-TOOL-8).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type {
  DurableResources,
  ExecField,
  ExecHostTool,
  McpHostTool,
  McpToolEntry,
} from '../../config/host-tools-schema.js';
import { hostToolLabels } from '../../cfc/host-tool-labels.js';
import { canonicalJson } from '../../evidence/canonical-json.js';
import { isToolName, type ToolDefinition } from '../contract.js';
import { ObservationSchema } from '../observation.js';
import { checkModelForm } from '../model-form.js';
import { ReferenceRefused, isWholeReference, type OpaqueReferences } from './opaque-refs.js';
import { execToolName, mcpToolName } from './host-plan.js';

export interface HostTool extends ToolDefinition {
  readonly executor: 'host';
  /** The host tool entry it belongs to: the authority its references are issued under. */
  readonly authority: string;
  readonly channel: 'mcp' | 'exec';
  /** The server's own name of an MCP tool. */
  readonly remoteName: string;
  readonly inputJsonSchema: Readonly<Record<string, unknown>>;
  readonly inputSchemaDigest: string;
  readonly classified: boolean;
  /** What the server says of the tool (recorded, never trusted). */
  readonly annotations: Readonly<Record<string, unknown>> | null;
  readonly resources: DurableResources | undefined;
}

/** Model-facing names are what the Messages API accepts: [A-Za-z0-9_-], at most 64. */
const API_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_SCHEMA_CHARS = 20_000;
const DEFAULT_RESULT_CHARS = 20_000;

export function schemaDigest(schema: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(schema)).digest('hex')}`;
}

/** What a call is told when its references resolve to values its schema refuses. */
export const UNFIT_ONCE_RESOLVED =
  'not accepted once its references are resolved (the values they stand for do not fit the schema here)';

/**
 * The model's form checked, then its references resolved for `authority` (AH-REF-2: before
 * the call is decided), then the resolved call checked (model-form.ts). A string that is one
 * reference whole stands for a value the model was not shown: a finding there (a pattern, a
 * maxLength) is deferred to the resolved check. Every other string is the model's words and
 * is checked as written, a reference spliced into text counting as its own spelling, so a
 * bound around it answers nothing of the value's length. A resolved call the schema refuses
 * gets one fixed answer (UNFIT_ONCE_RESOLVED), never a finding about the value (AH-REF-4).
 */
export function withReferences(
  authority: string,
  refs: OpaqueReferences,
  inner: z.ZodType,
): z.ZodType {
  return z.unknown().transform((value, ctx) => {
    let resolved: unknown;
    try {
      resolved = refs.resolve(authority, value);
    } catch (error) {
      if (!(error instanceof ReferenceRefused)) throw error;
      for (const issue of error.issues)
        ctx.addIssue({ code: 'custom', path: [...issue.path], message: issue.message });
      return z.NEVER;
    }
    const model = checkModelForm(inner, value, isWholeReference);
    if (model.kind === 'invalid') {
      for (const issue of model.found)
        ctx.addIssue({ code: 'custom', path: [...issue.path], message: issue.message });
      return z.NEVER;
    }
    const checked = inner.safeParse(resolved);
    if (!checked.success) {
      ctx.addIssue({ code: 'custom', path: [], message: UNFIT_ONCE_RESOLVED });
      return z.NEVER;
    }
    // The model's own words, which its result may echo as written (opaque-refs.ts).
    refs.noteModelForm(checked.data, value);
    return checked.data;
  });
}

function classes(
  t: Pick<McpToolEntry, 'riskClass' | 'sideEffectClass' | 'resourceScope' | 'permissionPolicy'>,
): Pick<ToolDefinition, 'riskClass' | 'sideEffectClass' | 'resourceScope' | 'permissionPolicy'> & {
  classified: boolean;
} {
  if (t.riskClass !== undefined && t.sideEffectClass !== undefined) {
    return {
      riskClass: t.riskClass,
      sideEffectClass: t.sideEffectClass,
      resourceScope: t.resourceScope ?? 'external',
      permissionPolicy: t.permissionPolicy ?? 'allow',
      classified: true,
    };
  }
  // Unclassified: assume the worst an exposed tool plausibly does, and ask.
  return {
    riskClass: 'write_external',
    sideEffectClass: 'external_commitment',
    resourceScope: 'external',
    permissionPolicy: t.permissionPolicy === 'deny' ? 'deny' : 'approval_required',
    classified: false,
  };
}

function bounds(
  t: Pick<McpToolEntry, 'timeoutSeconds' | 'resultChars' | 'retryPolicy'>,
  entryTimeout: number,
): Pick<
  ToolDefinition,
  'timeoutMs' | 'resultSizeLimitChars' | 'retryPolicy' | 'maxRetries' | 'auditPolicy'
> {
  const retryPolicy = t.retryPolicy ?? 'no_auto_retry';
  return {
    timeoutMs: Math.round((t.timeoutSeconds ?? entryTimeout) * 1000),
    resultSizeLimitChars: t.resultChars ?? DEFAULT_RESULT_CHARS,
    retryPolicy,
    maxRetries: retryPolicy === 'no_auto_retry' ? 0 : 1,
    auditPolicy: 'full_structured_event',
  };
}

function execField(name: string, f: ExecField): z.ZodType {
  if (f.type === 'integer') {
    // A negative number is an argument starting with '-' (an option, as for strings): the
    // minimum is 0 unless the operator declares a lower one.
    let n = z
      .number()
      .int()
      .min(f.minimum ?? 0, `${name} must be at least ${String(f.minimum ?? 0)}`);
    if (f.maximum !== undefined) n = n.max(f.maximum);
    return f.description === undefined ? n : n.describe(f.description);
  }
  let s = z
    .string()
    .max(f.maxLength)
    .regex(new RegExp(`^(?:${f.pattern})$`, 'u'), `${name} must match the declared pattern`)
    .refine((v) => !v.includes('\0'), `${name} may not contain NUL`);
  if (!f.allowLeadingDash)
    s = s.refine((v) => !v.startsWith('-'), `${name} may not start with '-' (an option)`);
  return f.description === undefined ? s : s.describe(f.description);
}

export function execToolDefinition(entry: ExecHostTool, refs: OpaqueReferences): HostTool {
  const inner = z.strictObject(
    Object.fromEntries(Object.entries(entry.input).map(([k, f]) => [k, execField(k, f)])),
  );
  const json = z.toJSONSchema(inner) as Record<string, unknown>;
  delete json.$schema;
  const c = classes(entry);
  return {
    name: execToolName(entry),
    purpose: `${entry.description ?? `runs ${entry.argv[0] ?? ''} on the operator's host`} (host tool, outside the sandbox)`,
    input: withReferences(entry.name, refs, inner),
    output: ObservationSchema,
    riskClass: c.riskClass,
    sideEffectClass: c.sideEffectClass,
    resourceScope: c.resourceScope,
    permissionPolicy: c.permissionPolicy,
    ...bounds(entry, entry.timeoutSeconds),
    executor: 'host',
    authority: entry.name,
    channel: 'exec',
    remoteName: entry.name,
    inputJsonSchema: json,
    inputSchemaDigest: schemaDigest(json),
    classified: c.classified,
    annotations: null,
    resources: entry.resources,
    cfc: hostToolLabels(entry),
  };
}

/**
 * An MCP tool as the profile declares it, without its server (`cfh policy explain`): the
 * same name, classes and bounds a run gives it, the same policy; its input schema is the
 * server's and is not known here, so any object is taken (a run validates it).
 */
export function declaredMcpToolDefinition(
  entry: McpHostTool,
  remoteName: string,
  refs: OpaqueReferences,
): HostTool {
  const decl = entry.tools.find((t) => t.name === remoteName);
  const c = classes(decl ?? {});
  const unknownSchema = z.record(z.string(), z.unknown());
  return {
    name: mcpToolName(entry, remoteName),
    purpose: `${decl?.description ?? remoteName} (host tool ${entry.name}, outside the sandbox; schema not known without the server)`,
    input: withReferences(entry.name, refs, unknownSchema),
    output: ObservationSchema,
    riskClass: c.riskClass,
    sideEffectClass: c.sideEffectClass,
    resourceScope: c.resourceScope,
    permissionPolicy: c.permissionPolicy,
    ...bounds(decl ?? {}, entry.timeoutSeconds),
    executor: 'host',
    authority: entry.name,
    channel: 'mcp',
    remoteName,
    inputJsonSchema: {},
    inputSchemaDigest: schemaDigest({}),
    classified: c.classified,
    annotations: null,
    resources: decl?.resources,
    cfc: hostToolLabels(entry, remoteName),
  };
}

/** What a definition the model is shown is scrubbed with (the run's Scrubber, scrub.ts). */
export interface DefinitionScrubber {
  text(text: string): string;
  /** A JSON-like value scrubbed as the JSON it is written as (numbers too). */
  value(value: unknown): unknown;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A schema or annotations, scrubbed whole: a credential split across two values too. */
function scrubbedRecord(
  value: Record<string, unknown>,
  scrub: DefinitionScrubber,
): Record<string, unknown> {
  const out = scrub.value(value);
  return isRecord(out) ? out : {};
}

export interface SkippedTool {
  readonly name: string;
  readonly reason: string;
}

/** Why an MCP tool cannot be exposed, or undefined if it can. */
function unexposable(
  entry: McpHostTool,
  tool: Tool,
  scrub: DefinitionScrubber,
): string | undefined {
  const name = mcpToolName(entry, tool.name);
  if (!API_TOOL_NAME.test(name) || !isToolName(name))
    return `'${name}' is not a model-facing tool name ([A-Za-z0-9_-], at most 64)`;
  // A name is shown to the model as it is: one that spells a credential is not shown at all.
  if (scrub.text(name) !== name) return 'its name contains a credential cfh holds';
  if (JSON.stringify(tool.inputSchema).length > MAX_SCHEMA_CHARS)
    return `its input schema is larger than ${MAX_SCHEMA_CHARS} characters`;
  return undefined;
}

/**
 * The exposed tools of an MCP server from what it listed: the entries named, then (for
 * `*`) every other tool, unclassified. A named tool the server does not list, or cannot be
 * exposed, is an error; a `*` tool that cannot be is skipped and said so.
 */
export function mcpToolDefinitions(
  entry: McpHostTool,
  listed: readonly Tool[],
  refs: OpaqueReferences,
  scrub: DefinitionScrubber,
): { tools: HostTool[]; skipped: SkippedTool[]; missing: string[]; refused: SkippedTool[] } {
  const byName = new Map(listed.map((t) => [t.name, t]));
  const named = entry.tools.filter((t) => t.name !== '*');
  const all = entry.tools.some((t) => t.name === '*');
  const tools: HostTool[] = [];
  const skipped: SkippedTool[] = [];
  const refused: SkippedTool[] = [];
  const missing = named.filter((t) => !byName.has(t.name)).map((t) => t.name);
  const wanted: { tool: Tool; decl: McpToolEntry | undefined }[] = [
    ...named.flatMap((decl) => {
      const tool = byName.get(decl.name);
      return tool === undefined ? [] : [{ tool, decl }];
    }),
    ...(all
      ? listed
          .filter((t) => !named.some((n) => n.name === t.name))
          .map((tool) => ({ tool, decl: undefined }))
      : []),
  ];
  for (const { tool, decl } of wanted) {
    const name = mcpToolName(entry, tool.name);
    const why = unexposable(entry, tool, scrub);
    let validator: z.ZodType | undefined;
    let problem = why;
    if (problem === undefined) {
      try {
        validator = z.fromJSONSchema(tool.inputSchema as Parameters<typeof z.fromJSONSchema>[0]);
      } catch (error) {
        problem = `its input schema cannot be validated: ${error instanceof Error ? error.message : String(error)}`;
      }
    }
    if (problem !== undefined || validator === undefined) {
      (decl === undefined ? skipped : refused).push({ name, reason: problem ?? 'no validator' });
      continue;
    }
    // What the model is shown of the schema: scrubbed as the JSON it is sent as (its
    // descriptions, enums, defaults and bounds, strings and numbers alike).
    const json = scrubbedRecord({ ...tool.inputSchema }, scrub);
    delete json.$schema;
    const c = classes(decl ?? {});
    const description = decl?.description ?? tool.description ?? tool.title ?? tool.name;
    tools.push({
      name,
      purpose: `${scrub.text(description).slice(0, 2000)} (host tool ${entry.name}, outside the sandbox)`,
      input: withReferences(entry.name, refs, validator),
      output: ObservationSchema,
      riskClass: c.riskClass,
      sideEffectClass: c.sideEffectClass,
      resourceScope: c.resourceScope,
      permissionPolicy: c.permissionPolicy,
      ...bounds(decl ?? {}, entry.timeoutSeconds),
      executor: 'host',
      authority: entry.name,
      channel: 'mcp',
      remoteName: tool.name,
      inputJsonSchema: json,
      inputSchemaDigest: schemaDigest(tool.inputSchema),
      classified: c.classified,
      annotations:
        tool.annotations === undefined ? null : scrubbedRecord({ ...tool.annotations }, scrub),
      resources: decl?.resources,
      cfc: hostToolLabels(entry, tool.name),
    });
  }
  return { tools, skipped, missing, refused };
}
