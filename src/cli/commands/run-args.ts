// The options of `cfh sandbox run`, shared by the command-run and agent-run handlers.
import type { SandboxRunOptions } from '../../engine/run-plan.js';

export interface SandboxRunArgs extends SandboxRunOptions {
  readonly json: boolean;
  readonly prompt?: string | undefined;
  readonly context?: readonly string[] | undefined;
  readonly quote?: readonly string[] | undefined;
  readonly script?: string | undefined;
  readonly provider?: string | undefined;
  /** Planning mode: every mutation denied; the final answer kept as plan.md. */
  readonly plan?: boolean | undefined;
  /** Execute the plan of this planning run (given as context; risky calls ask). */
  readonly fromPlan?: string | undefined;
  /** Rules approved for the whole run. */
  readonly approve?: readonly string[] | undefined;
  /** A file of exact calls approved ahead of time. */
  readonly approvals?: string | undefined;
  /** Never prompt, even on a terminal. */
  readonly nonInteractive?: boolean | undefined;
}
