// What the mediator decides on: the run's facts and a checked proposal.
import type { ToolDefinition } from '../tools/contract.js';

/** What the run is like, for rules that depend on it. */
export interface RunFacts {
  readonly mode: 'run' | 'plan';
  readonly workspaceMode: 'direct' | 'draft';
  readonly network: 'disabled' | 'allowlist' | 'open';
  /** Whether any mount of the run is writable. */
  readonly rwMounts: boolean;
  /**
   * Planning mode: a FIFO a mount holds (or the search could not finish), through which a
   * sandbox command could still reach a host process. Absent: none found.
   */
  readonly mountChannel?: string | undefined;
  /** The run carries an approved plan as context (`--from-plan`). */
  readonly fromPlan: boolean;
}

/** A proposed call as the mediator sees it. */
export type CheckedCall =
  | { readonly kind: 'unknown'; readonly name: string }
  | { readonly kind: 'invalid'; readonly tool: ToolDefinition; readonly issues: string }
  | { readonly kind: 'valid'; readonly tool: ToolDefinition; readonly args: unknown };
