// A proposed tool call and what checking it needs: the surface, the mediator, the runners,
// the recorder. Shared by the turn's calls (tool-calls.ts) and their records (governance-of.ts).
import type { BudgetTracker } from './budgets.js';
import type { CfcRuntime } from '../../cfc/runtime.js';
import type { GovernanceRecord } from '../../evidence/governance-record.js';
import type { EventInput, EventType } from '../../evidence/schema/registry.js';
import type { Mediator } from '../../mediator/mediator.js';
import type { CheckedCall } from '../../mediator/policy.js';
import type { ToolDefinition, ToolRegistry } from '../../tools/contract.js';
import type { ToolRunner } from '../../tools/runner.js';
import type { WrittenNotes } from '../cfc/written-notes.js';

export interface ToolUse {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

export interface ToolCallRecorder {
  /** One event of the registry (src/evidence/schema/registry.ts), of its type's shape. */
  event<T extends EventType>(type: T, data: EventInput<T>, durable?: boolean): Promise<void>;
  /** Keeps a tool's raw output under outputs/; returns its reference (`outputs/NAME`). */
  output(name: string, data: Buffer): Promise<string>;
  /** One governance record per proposed action (governance.jsonl). */
  governance(record: GovernanceRecord): Promise<void>;
}

export interface ToolCallDeps {
  readonly registry: ToolRegistry;
  readonly mediator: Mediator;
  readonly budgets: BudgetTracker;
  /** The runner for each kind of executor a tool names. */
  readonly runners: Readonly<Partial<Record<ToolDefinition['executor'], ToolRunner>>>;
  readonly recorder: ToolCallRecorder;
  readonly mode: 'run' | 'plan';
  /**
   * The run's scrubber where it holds credentials (host tools): what the evidence keeps of
   * a proposal is scrubbed before it is cut (a cut must not leave a credential's start).
   */
  readonly disclosure?: TextScrubber | undefined;
  /**
   * The run's CFC state (cfc/runtime.ts): labels, the context's influence, handles. Undefined:
   * CFC is disabled for the run (or the caller is not an agent run), and every call is
   * checked, decided and shown exactly as without CFC.
   */
  readonly cfc?: CfcRuntime | undefined;
  /**
   * The profile's toolLifetime: under `per-run` what entered the workload container stays
   * in it for the next exec's label (cfc-observations.ts). Undefined: per-run.
   */
  readonly toolLifetime?: 'per-run' | 'per-call' | undefined;
  /**
   * CFC on: records what each call may write into the host trees it reaches before it runs
   * (cfc/written-notes.ts).
   */
  readonly written?: WrittenNotes | undefined;
}

export interface TextScrubber {
  text(input: string): string;
  cutText(input: string, max: number): string;
}

/** `call-0001`…: numbers a run's calls across turns; names their outputs. */
export function callIdOf(n: number): string {
  return `call-${String(n).padStart(4, '0')}`;
}

/** What the surface and the schema say of a proposal, before policy says anything. */
export function check(use: ToolUse, deps: ToolCallDeps): CheckedCall {
  const tool = deps.registry.get(use.name);
  const runnable = tool !== undefined && deps.runners[tool.executor] !== undefined;
  return checkAgainst(runnable ? tool : undefined, use.name, use.input);
}

/**
 * A proposal checked against the tool the surface has under its name (or none): the one
 * check a run and `cfh policy explain` share, so both hand policy the same CheckedCall.
 */
export function checkAgainst(
  tool: ToolDefinition | undefined,
  name: string,
  input: unknown,
): CheckedCall {
  if (tool === undefined) return { kind: 'unknown', name };
  const parsed = tool.input.safeParse(input);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`)
      .join('; ');
    return { kind: 'invalid', tool, issues };
  }
  return { kind: 'valid', tool, args: parsed.data };
}
