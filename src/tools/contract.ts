// A tool's definition, apart from where it runs (governance extension, "Tool registry
// contract"): what it is for, what it accepts (zod, the input type inferred) and returns,
// its risk and side-effect classes, what it may touch, how it is bounded, retried and
// audited. Executors (the run's sandbox containers, the host-tool channel) take it from
// there. The registry is the parent tool surface: built from the profile's explicit
// allowlist, and nothing a model, file or tool result says can add to it (AH-TOOL-1/2).
import { z } from 'zod';
import type { HostToolLabels } from '../cfc/host-tool-labels.js';
import type { Observation } from './observation.js';

import type {
  AuditPolicy,
  PermissionPolicy,
  ResourceScope,
  RetryPolicy,
  RiskClass,
  SideEffectClass,
} from '../config/vocabulary.js';

/** Where a tool executes: a container of the run, or the trusted host-tool channel. */
export type ToolExecutorKind = 'sandbox' | 'host';

export interface ToolDefinition<I extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly purpose: string;
  readonly input: I;
  readonly output: z.ZodType<Observation>;
  readonly riskClass: RiskClass;
  readonly sideEffectClass: SideEffectClass;
  readonly resourceScope: ResourceScope;
  readonly permissionPolicy: PermissionPolicy;
  readonly timeoutMs: number;
  readonly resultSizeLimitChars: number;
  readonly retryPolicy: RetryPolicy;
  /** How many times an automatic retry may replay it (0 for no_auto_retry). */
  readonly maxRetries: number;
  readonly auditPolicy: AuditPolicy;
  readonly executor: ToolExecutorKind;
  /**
   * The JSON schema the model is shown, when it is not derived from `input` (a host tool's:
   * an MCP server's own schema, which `input` validates).
   */
  readonly inputJsonSchema?: Readonly<Record<string, unknown>>;
  /**
   * A host tool's CFC labels (its result label, clearance, required integrity), from the
   * operator's entry only (AH-CFC-1/2): what the flow decision judges it by (cfc/flow.ts).
   */
  readonly cfc?: HostToolLabels | undefined;
  /**
   * A tool whose arguments leave this run (`delegate`: into a child run): a value handle in
   * them is never resolved, and the call is invalid (AH-CFC-12a: handles do not cross).
   */
  readonly refusesHandles?: true | undefined;
  /**
   * Runs with no other call of its turn beside it, whatever its side-effect class (a
   * `delegate` call that may switch the process's identity: child-runner.ts switchesIdentity).
   */
  readonly runsAlone?: true | undefined;
}

/** What the model is shown of a tool: name, purpose and the JSON schema of its input. */
export interface ModelToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly input_schema: Record<string, unknown>;
}

/** Built-ins are snake case; host tools keep the MCP spelling (`mcp__tracker__get-issue`). */
const TOOL_NAME =
  /^[a-z][a-z0-9_]{0,63}$|^(mcp|host)__[A-Za-z0-9_-]{1,64}(__[A-Za-z0-9_.-]{1,64})?$/;

export function isToolName(name: string): boolean {
  return TOOL_NAME.test(name);
}

export class ToolRegistry<T extends ToolDefinition = ToolDefinition> {
  readonly #tools: ReadonlyMap<string, T>;
  #definitions: readonly ModelToolDefinition[] | undefined;

  /**
   * `allowlist` is the profile's explicit list; every name must be a known tool. The
   * registry is frozen: there is no way to add a tool after construction.
   */
  constructor(known: readonly T[], allowlist: readonly string[]) {
    const byName = new Map<string, T>();
    for (const tool of known) {
      if (!isToolName(tool.name)) throw new Error(`tool name '${tool.name}' is not a tool name`);
      if (byName.has(tool.name)) throw new Error(`tool '${tool.name}' is defined twice`);
      byName.set(tool.name, tool);
    }
    const surface = new Map<string, T>();
    for (const name of allowlist) {
      const tool = byName.get(name);
      if (tool === undefined) {
        throw new Error(
          `tools: '${name}' is not a known tool (known: ${[...byName.keys()].sort().join(', ')})`,
        );
      }
      surface.set(name, tool);
    }
    this.#tools = surface;
  }

  get(name: string): T | undefined {
    return this.#tools.get(name);
  }

  names(): string[] {
    return [...this.#tools.keys()].sort();
  }

  all(): T[] {
    return this.names().map((n) => this.#tools.get(n) as T);
  }

  /**
   * Sorted by name: the same surface gives the same bytes, so it can be prompt-cached. Made
   * once and frozen: the registry is frozen too, and converting every schema again for each
   * model request was a turn's largest CPU cost.
   */
  modelDefinitions(): readonly ModelToolDefinition[] {
    this.#definitions ??= deepFreeze(
      this.all().map((tool) => {
        const schema = { ...(tool.inputJsonSchema ?? z.toJSONSchema(tool.input)) };
        delete schema.$schema;
        return { name: tool.name, description: tool.purpose, input_schema: schema };
      }),
    );
    return this.#definitions;
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
