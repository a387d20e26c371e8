// A tool's governance contract (issue 5; governance extension): what it is for, what it
// accepts and returns, how risky it is, what it may touch, and how it is bounded. The
// registry is the parent tool surface: built from the profile's explicit allowlist, and
// nothing a model, file or tool result says can add to it (AH-TOOL-1/2).
import { z } from 'zod';

export type RiskClass = 'read-only' | 'sandbox-write' | 'sandbox-exec' | 'host' | 'external';
export type SideEffectClass = 'none' | 'sandbox-contained' | 'external';
export type PermissionPolicy = 'allow' | 'deny' | 'approval-required';

export interface ToolContract<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly purpose: string;
  readonly inputSchema: I;
  readonly outputSchema: O;
  readonly riskClass: RiskClass;
  readonly sideEffectClass: SideEffectClass;
  /** What the tool may touch, in words an operator reads: `workspace (kernel-enforced mounts)`. */
  readonly resourceScope: string;
  readonly permissionPolicy: PermissionPolicy;
  readonly timeoutMs: number;
  readonly resultSizeLimitChars: number;
  readonly retryPolicy: { readonly idempotent: boolean; readonly maxRetries: number };
  readonly auditPolicy: {
    readonly recordInput: 'full' | 'summary';
    readonly recordOutput: 'full' | 'summary';
  };
}

/** What the model is shown of a tool: name, purpose and the JSON schema of its input. */
export interface ModelToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly input_schema: Record<string, unknown>;
}

const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

export class ToolRegistry {
  readonly #tools: ReadonlyMap<string, ToolContract>;

  /**
   * `allowlist` is the profile's explicit list; every name must be a known tool. The
   * registry is frozen: there is no way to add a tool after construction.
   */
  constructor(known: readonly ToolContract[], allowlist: readonly string[]) {
    const byName = new Map<string, ToolContract>();
    for (const tool of known) {
      if (!TOOL_NAME.test(tool.name))
        throw new Error(`tool name '${tool.name}' is not [a-z][a-z0-9_]*`);
      if (byName.has(tool.name)) throw new Error(`tool '${tool.name}' is defined twice`);
      byName.set(tool.name, tool);
    }
    const surface = new Map<string, ToolContract>();
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

  get(name: string): ToolContract | undefined {
    return this.#tools.get(name);
  }

  names(): string[] {
    return [...this.#tools.keys()].sort();
  }

  /** Sorted by name: the same surface gives the same bytes, so it can be prompt-cached. */
  modelDefinitions(): ModelToolDefinition[] {
    return this.names().map((name) => {
      const tool = this.#tools.get(name);
      if (tool === undefined) throw new Error(`unreachable: ${name}`);
      const schema = z.toJSONSchema(tool.inputSchema) as Record<string, unknown>;
      delete schema.$schema;
      return { name, description: tool.purpose, input_schema: schema };
    });
  }
}
