// The options of `cfh sandbox run`, shared by the command-run and agent-run handlers.
import type { SandboxRunOptions } from '../../engine/run-plan.js';

export interface SandboxRunArgs extends SandboxRunOptions {
  readonly json: boolean;
  readonly prompt?: string | undefined;
  readonly context?: readonly string[] | undefined;
  readonly quote?: readonly string[] | undefined;
  readonly script?: string | undefined;
  readonly provider?: string | undefined;
}
