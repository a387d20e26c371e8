// The host tools of a run, planned before anything starts (AH-INV-4): each entry's program
// found, its argv template checked, its patterns compiled, its credentials resolved. Every
// failure here is a configuration error (125) before the first model request. The plan's
// description is the bounded authority the snapshot records (AH-TOOL-7, AH-TOOL-9).
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, errorMessage } from '../../errors.js';
import type { ExecHostTool, HostToolEntry, McpHostTool } from '../../config/host-tools-schema.js';
import { resolveHostEnv, type EnvRecord, type ResolvedEnv } from './credentials.js';
import { concealPattern, type ConcealPattern } from './opaque-refs.js';
import type { Concealment } from './host-results.js';
import { fieldRule, type FieldRule } from './referents.js';
import { checkHostToolReach, noRunReach, type HostToolReach } from './host-reach.js';
import type { HostToolPins } from './host-pin.js';
import type { HeldCredential } from './scrub.js';

export interface PlannedHostTool {
  readonly entry: HostToolEntry;
  /** The program as found (absolute): what the process is told it is (argv[0]). */
  readonly program: string;
  /** The program's real path, checked and pinned: what is spawned. */
  readonly executable: string;
  /** The working directory's real path, checked and pinned. */
  readonly cwd: string;
  /** What planning checked, re-checked before every start (host-pin.ts). */
  readonly pins: HostToolPins;
  readonly env: ResolvedEnv;
  /** Operator-only identifiers of this authority's results. */
  readonly conceal: Concealment;
}

export interface HostToolPlan {
  readonly tools: readonly PlannedHostTool[];
  /** Every credential the run's host tools hold, for the scrubber. */
  readonly credentials: readonly HeldCredential[];
}

const PLACEHOLDER = /^\{([A-Za-z_][A-Za-z0-9_]{0,63})\}$/;

function configError(entry: HostToolEntry, what: string, field = 'hostTools'): ConfigError {
  return new ConfigError('invalid_host_tool', `hostTools ${entry.name}: ${what}`, {
    field: `${field}.${entry.name}`,
  });
}

/** A program by absolute path, a path relative to the entry's cwd, or a name on cfh's PATH. */
export function findProgram(
  program: string,
  cwd: string,
  searchPath: string | undefined,
): string | undefined {
  const candidates = program.includes('/')
    ? [path.resolve(cwd, program)]
    : (searchPath ?? '')
        .split(':')
        .filter((d) => d !== '' && path.isAbsolute(d))
        .map((d) => path.join(d, program));
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** The program as the entry spells it: an exec's argv[0], an MCP server's command. */
export function programOf(entry: HostToolEntry): string {
  return entry.kind === 'mcp' ? entry.command : (entry.argv[0] ?? '');
}

/** Where the entry runs: its `cwd`, or cfh's own working directory. */
export function cwdOf(entry: HostToolEntry): string {
  return entry.cwd ?? process.cwd();
}

/** Its program as planHostTools finds it (absolute), or undefined when it finds none. */
export function findEntryProgram(
  entry: HostToolEntry,
  searchPath: string | undefined,
): string | undefined {
  return findProgram(programOf(entry), cwdOf(entry), searchPath);
}

/** The argv template's placeholders, each a declared field used as a whole argument. */
export function checkArgvTemplate(entry: ExecHostTool): void {
  const used = new Set<string>();
  for (const [i, arg] of entry.argv.entries()) {
    const m = PLACEHOLDER.exec(arg);
    if (m === null) {
      if (/[{}]/.test(arg))
        throw configError(entry, `argv[${i}]: {field} only as a whole argument (got '${arg}')`);
      continue;
    }
    if (i === 0) throw configError(entry, 'argv[0] is the program: it cannot be a {field}');
    const field = m[1] ?? '';
    if (entry.input[field] === undefined)
      throw configError(entry, `argv[${i}]: {${field}} is not a declared input field`);
    used.add(field);
  }
  for (const [name, field] of Object.entries(entry.input)) {
    if (!used.has(name)) throw configError(entry, `input ${name} is used by no argument`);
    if (field.type === 'string') {
      try {
        new RegExp(`^(?:${field.pattern})$`, 'u');
      } catch (error) {
        throw configError(entry, `input ${name}: pattern does not compile: ${errorMessage(error)}`);
      }
    }
  }
}

/**
 * What an entry's results hide from the model: its operatorOnly fields (references, minted
 * from the structured result only: AH-REF-1) and patterns (markers over free text). A
 * resource's idField is the called tool's own (host-results.ts reads it from the tool).
 */
function compileConceal(entry: HostToolEntry): Concealment {
  const patterns: ConcealPattern[] = [];
  const fields: FieldRule[] = [];
  for (const o of entry.operatorOnly) {
    try {
      if (o.field !== undefined) fields.push(fieldRule(o.kind, o.field));
      if (o.pattern !== undefined) patterns.push(concealPattern(o.kind, o.pattern));
    } catch (error) {
      throw configError(entry, `operatorOnly ${o.kind}: ${errorMessage(error)}`);
    }
  }
  return { fields, patterns };
}

/**
 * `reach`: what the run's sandboxes could write and where its evidence lives; every
 * program, script, cwd and module path is checked against it and pinned (host-reach.ts).
 */
export function planHostTools(
  entries: readonly HostToolEntry[],
  runId: string,
  hostEnv: NodeJS.ProcessEnv,
  reach: HostToolReach = noRunReach(),
): HostToolPlan {
  const tools: PlannedHostTool[] = [];
  const credentials: HeldCredential[] = [];
  for (const entry of entries) {
    const cwd = cwdOf(entry);
    if (!path.isAbsolute(cwd)) throw configError(entry, `cwd '${cwd}' is not absolute`);
    try {
      if (!statSync(cwd).isDirectory()) throw new Error('not a directory');
    } catch (error) {
      throw configError(entry, `cwd '${cwd}': ${errorMessage(error)}`);
    }
    if (entry.kind === 'exec') checkArgvTemplate(entry);
    const program = findEntryProgram(entry, hostEnv.PATH);
    if (program === undefined) {
      throw new ConfigError(
        'host_tool_program_missing',
        `hostTools ${entry.name}: program '${programOf(entry)}' not found or not executable`,
        { field: `hostTools.${entry.name}` },
      );
    }
    // AH-TOOL-7, AH-CONT-5: nothing a sandbox could write, nothing inside the evidence.
    const checked = checkHostToolReach(entry, program, cwd, reach);
    const conceal = compileConceal(entry);
    const env = resolveHostEnv(entry, runId, hostEnv);
    credentials.push(...env.credentials);
    tools.push({
      entry,
      program,
      executable: checked.program,
      cwd: checked.pins.cwd.path,
      pins: checked.pins,
      env,
      conceal,
    });
  }
  return { tools, credentials };
}

/** The model-facing name of an exec tool. */
export function execToolName(entry: ExecHostTool): string {
  return `host__${entry.name}`;
}

/** The model-facing name of an MCP server's tool (the MCP convention). */
export function mcpToolName(entry: McpHostTool, tool: string): string {
  return `mcp__${entry.name}__${tool}`;
}

/**
 * The bounded authority of one entry, as the snapshot and `capabilities --profile` record
 * it: which program, which tools with which classes, which argument patterns, scope,
 * timeouts, output caps, durable-resource semantics; env by reference (and, in a run, a
 * keyed digest), never a value.
 */
export function describeAuthority(
  entry: HostToolEntry,
  env?: Readonly<Record<string, EnvRecord>>,
  program?: string,
  pins?: HostToolPins,
): Record<string, unknown> {
  const envRefs = Object.fromEntries(
    Object.entries(entry.env).map(([name, spec]) => [
      name,
      env?.[name] ?? ('value' in spec ? { value: 'literal' } : spec),
    ]),
  );
  const common = {
    name: entry.name,
    kind: entry.kind,
    executor: 'host',
    program: program ?? programOf(entry),
    cwd: entry.cwd ?? null,
    env: envRefs,
    timeoutSeconds: entry.timeoutSeconds,
    outputBytes: entry.outputBytes,
    operatorOnly: entry.operatorOnly.map((o) =>
      o.field === undefined
        ? { kind: o.kind, pattern: o.pattern, shown: 'concealed' }
        : { kind: o.kind, field: o.field, shown: 'reference' },
    ),
    // What a run checked and pins: re-checked before every start of this tool.
    ...(pins === undefined ? {} : { pinned: { cwd: pins.cwd, files: pins.files } }),
  };
  if (entry.kind === 'exec') {
    return {
      ...common,
      tool: execToolName(entry),
      argv: entry.argv,
      input: entry.input,
      output: entry.output,
      riskClass: entry.riskClass ?? null,
      sideEffectClass: entry.sideEffectClass ?? null,
      resourceScope: entry.resourceScope ?? null,
      permissionPolicy: entry.permissionPolicy ?? null,
      classified: entry.riskClass !== undefined,
      resources: entry.resources ?? null,
    };
  }
  return {
    ...common,
    args: entry.args,
    start: entry.start,
    tools: entry.tools.map((t) => ({
      name: t.name === '*' ? `mcp__${entry.name}__*` : mcpToolName(entry, t.name),
      serverName: t.name,
      riskClass: t.riskClass ?? null,
      sideEffectClass: t.sideEffectClass ?? null,
      resourceScope: t.resourceScope ?? null,
      permissionPolicy: t.permissionPolicy ?? null,
      classified: t.riskClass !== undefined,
      timeoutSeconds: t.timeoutSeconds ?? entry.timeoutSeconds,
      resources: t.resources ?? null,
    })),
  };
}
