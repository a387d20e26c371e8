// What the mediator decides on: the run's facts and a checked proposal.
import type { ToolDefinition } from '../tools/contract.js';
import type { NetworkMode } from '../config/postures.js';

/** What the run is like, for rules that depend on it. */
export interface RunFacts {
  readonly mode: 'run' | 'plan';
  readonly workspaceMode: 'direct' | 'draft';
  readonly network: NetworkMode;
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

/**
 * What policy reads of a tool: its name, classes, contract and where it runs. The audit
 * re-derives a decision from these as the snapshot records them (snapshot `mediation`).
 */
export type PolicyTool = Pick<
  ToolDefinition,
  'name' | 'riskClass' | 'sideEffectClass' | 'executor' | 'permissionPolicy'
>;

/** A proposed call as the mediator sees it. */
export type CheckedCall<T extends PolicyTool = ToolDefinition> =
  | { readonly kind: 'unknown'; readonly name: string }
  | { readonly kind: 'invalid'; readonly tool: T; readonly issues: string }
  | { readonly kind: 'valid'; readonly tool: T; readonly args: unknown };
