// The `hostTools:` entries of a profile (AH-TOOL-7..10, AH-CONT-3): trusted programs cfh
// runs on the host, outside every container, each with exactly the authority declared
// here. Two kinds: `mcp`, a stdio MCP server whose listed tools are exposed as
// `mcp__<server>__<tool>`, and `exec`, one host program with an argv template whose
// arguments come only from schema-checked input fields, exposed as `host__<name>`.
// Credentials are references (`fromEnv`, `fromFile`), never values.
import { z } from 'zod';
import { AtomList, LabelSpec } from './cfc-schema.js';
import { FieldPointer } from './field-pointer.js';
import {
  NEVER_REPLAYED,
  PermissionPolicy,
  ResourceScope,
  RetryPolicy,
  RiskClass,
  SideEffectClass,
} from './vocabulary.js';

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a valid environment name');

/** A host tool's name: the `<server>` of `mcp__<server>__*`, the `<name>` of `host__<name>`. */
export const HOST_TOOL_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

/** One environment variable of a host process: a literal, or a credential by reference. */
export const HostEnvValue = z.union([
  z.strictObject({ value: z.string().max(100_000) }),
  z.strictObject({ fromEnv: envName }),
  z.strictObject({ fromFile: z.string().min(1) }),
]);
export type HostEnvValue = z.infer<typeof HostEnvValue>;

const Kind = z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'lower-case letters, digits, _');

/**
 * Identifiers the model must not see (AH-TOOL-10, AH-REF-1). `field`: a field of the tool's
 * structured result (an MCP tool's structuredContent, an exec tool's JSON output), positively
 * identified: its value reaches the model as an opaque reference it may hand back to the same
 * tool. `pattern`: matches in free text, concealed as `[operator-only:<kind>]`, which is no
 * reference and resolves to nothing (a match in free text is not a positively identified
 * referent).
 */
export const OperatorOnly = z
  .strictObject({
    kind: Kind,
    field: FieldPointer.optional(),
    pattern: z.string().min(1).max(500).optional(),
  })
  .superRefine((o, ctx) => {
    if ((o.field === undefined) === (o.pattern === undefined))
      ctx.addIssue({
        code: 'custom',
        message:
          'give either field (a JSON Pointer into the structured result: a reference) or pattern (free text: concealed, not resolvable)',
      });
  });
export type OperatorOnly = z.infer<typeof OperatorOnly>;

/** Resources' `idPattern` read ids out of free text; it minted references from any match. */
const RETIRED_ID_PATTERN =
  "idPattern is retired: a match in free text mints no reference (AH-REF-1); name the id with idField, a JSON Pointer into the tool's structured result (e.g. idField: /entities/*/name; an exec tool declares output: json)";

/**
 * A tool that creates durable external resources publishes how they are found and ended
 * (AH-TOOL-9); the ids its structured results hold at `idField` are kept in the terminal
 * evidence, and reach the model only as opaque references.
 */
export const DurableResources = z.strictObject({
  kind: Kind,
  idPattern: z.never({ error: RETIRED_ID_PATTERN }).optional(),
  idField: FieldPointer,
  enumerate: z.string().min(1).max(1000),
  cancel: z.string().min(1).max(1000),
  cleanup: z.string().min(1).max(1000),
  retention: z.string().min(1).max(1000),
});
export type DurableResources = z.infer<typeof DurableResources>;

/** The governance classes an operator declares for a tool; all three or none. */
const Classes = {
  riskClass: RiskClass.optional(),
  sideEffectClass: SideEffectClass.optional(),
  resourceScope: ResourceScope.optional(),
  permissionPolicy: PermissionPolicy.optional(),
};

/**
 * CFC (src/cfc/label-map.ts): the label of what the tool returns (none: `unlabelled`), the
 * confidentiality atoms its arguments may carry (default none), the integrity atoms every
 * influence on a call must have, and whether it reads before it writes (its result label
 * then joins its write decision, AH-CFC-10). Its result carries its resultLabel joined with
 * the labels of its inputs, unless the operator declares it a declassifier (`declassifies:
 * true`: its result carries its resultLabel alone, recorded at each call).
 */
const CfcLabels = {
  resultLabel: LabelSpec.optional(),
  clearance: AtomList.optional(),
  requires: z.strictObject({ integrity: AtomList.default([]) }).optional(),
  readsBeforeWrite: z.boolean().optional(),
  declassifies: z.boolean().optional(),
};

const ResultBounds = {
  /** What the model may see of one result, in characters (the run's budget caps it too). */
  resultChars: z.number().int().positive().max(1_000_000).optional(),
  retryPolicy: RetryPolicy.optional(),
  resources: DurableResources.optional(),
};

/**
 * A replaying retryPolicy only where a replay is safe for the risk class (AH-LIFE-5):
 * refused at load, with the reason, rather than clamped silently at run time.
 */
function replayable(
  t: { riskClass?: RiskClass | undefined; retryPolicy?: RetryPolicy | undefined },
  ctx: z.RefinementCtx,
): void {
  if (t.retryPolicy === undefined || t.retryPolicy === 'no_auto_retry') return;
  if (t.riskClass === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['retryPolicy'],
      message: `retryPolicy ${t.retryPolicy}: an unclassified tool is treated as write_external and is never replayed automatically (AH-LIFE-5); classify it or use no_auto_retry`,
    });
  else if (NEVER_REPLAYED.has(t.riskClass))
    ctx.addIssue({
      code: 'custom',
      path: ['retryPolicy'],
      message: `retryPolicy ${t.retryPolicy}: a ${t.riskClass} tool is never replayed automatically, a replay could act twice (AH-LIFE-5); use no_auto_retry`,
    });
}

function classified(
  t: { riskClass?: unknown; sideEffectClass?: unknown; resourceScope?: unknown },
  ctx: z.RefinementCtx,
): void {
  const given = [t.riskClass, t.sideEffectClass].filter((v) => v !== undefined).length;
  if (given === 1)
    ctx.addIssue({
      code: 'custom',
      message: 'riskClass and sideEffectClass are declared together (or neither: unclassified)',
    });
  if (given === 0 && t.resourceScope !== undefined)
    ctx.addIssue({
      code: 'custom',
      message: 'resourceScope without riskClass and sideEffectClass',
    });
}

/** Field pointers read a structured result: an exec tool has one only when it prints JSON. */
function structured(
  t: { output: 'text' | 'json'; operatorOnly: readonly OperatorOnly[]; resources?: unknown },
  ctx: z.RefinementCtx,
): void {
  if (t.output === 'json') return;
  if (t.operatorOnly.some((o) => o.field !== undefined) || t.resources !== undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['output'],
      message:
        'operatorOnly field and resources.idField name fields of a structured result: declare output: json (the tool prints one JSON value)',
    });
}

/** One exposed tool of an MCP server, by the server's own spelling, or `*` for all. */
export const McpToolEntry = z
  .strictObject({
    name: z.string().regex(/^(\*|[A-Za-z0-9_.-]{1,64})$/, "a tool name of the server, or '*'"),
    description: z.string().max(2000).optional(),
    ...Classes,
    timeoutSeconds: z.number().positive().max(3600).optional(),
    ...ResultBounds,
    ...CfcLabels,
  })
  .superRefine((t, ctx) => {
    classified(t, ctx);
    replayable(t, ctx);
    if (t.name === '*' && Object.keys(t).some((k) => k !== 'name'))
      ctx.addIssue({
        code: 'custom',
        message: "'*' exposes every other tool unclassified: it takes no other key",
      });
  });
export type McpToolEntry = z.infer<typeof McpToolEntry>;

const Common = {
  name: z.string().regex(HOST_TOOL_NAME, 'letters, digits, _ and -, at most 32'),
  env: z.record(envName, HostEnvValue).default({}),
  cwd: z.string().min(1).optional(),
  timeoutSeconds: z.number().positive().max(3600).default(30),
  /** Raw output kept per call (bytes); past it the call's output is cut and marked. */
  outputBytes: z
    .number()
    .int()
    .positive()
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  operatorOnly: z.array(OperatorOnly).max(50).default([]),
  // For an `mcp` entry: the default of each of its tools (a tool's own entry wins).
  ...CfcLabels,
};

export const McpHostTool = z.strictObject({
  kind: z.literal('mcp'),
  ...Common,
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** `first-use`: a probe lists the tools before the first model request and stops; the
   * server the calls use starts at the first call. `run-start`: the probe is kept. */
  start: z.enum(['first-use', 'run-start']).default('first-use'),
  tools: z.array(McpToolEntry).min(1).max(200),
});
export type McpHostTool = z.infer<typeof McpHostTool>;

/** One input field of an exec tool: what may become a whole argument. */
export const ExecField = z.union([
  z.strictObject({
    type: z.literal('string'),
    /** The whole value must match (anchored by cfh). */
    pattern: z.string().min(1).max(500),
    maxLength: z.number().int().positive().max(100_000).default(1000),
    description: z.string().max(500).optional(),
    /** A value starting with `-` could be read as an option: refused unless allowed. */
    allowLeadingDash: z.boolean().default(false),
  }),
  z.strictObject({
    type: z.literal('integer'),
    /** Default 0: a negative value would be an argument starting with `-`. */
    minimum: z.number().int().optional(),
    maximum: z.number().int().optional(),
    description: z.string().max(500).optional(),
  }),
]);
export type ExecField = z.infer<typeof ExecField>;

export const ExecHostTool = z.strictObject({
  kind: z.literal('exec'),
  ...Common,
  description: z.string().max(2000).optional(),
  argv: z.array(z.string()).min(1).max(200),
  input: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/), ExecField).default({}),
  /**
   * `json`: its stdout is one JSON value, its structured result (where `field` pointers
   * look); one that does not parse is not shown to the model. `text`: free text.
   */
  output: z.enum(['text', 'json']).default('text'),
  ...Classes,
  ...ResultBounds,
});
export type ExecHostTool = z.infer<typeof ExecHostTool>;

export const HostToolEntry = z
  .discriminatedUnion('kind', [McpHostTool, ExecHostTool])
  .superRefine((t, ctx) => {
    if (t.kind === 'exec') {
      classified(t, ctx);
      replayable(t, ctx);
      structured(t, ctx);
    }
  });
export type HostToolEntry = z.infer<typeof HostToolEntry>;

export const HostTools = z
  .array(HostToolEntry)
  .max(50)
  .superRefine((entries, ctx) => {
    const seen = new Set<string>();
    for (const [i, e] of entries.entries()) {
      // One name, one authority: opaque references are issued and resolved per name.
      if (seen.has(e.name))
        ctx.addIssue({
          code: 'custom',
          path: [i, 'name'],
          message: 'this name is declared twice: each host tool needs a name of its own',
        });
      seen.add(e.name);
    }
  });
