// The draft session's own tools (`cfh mcp --workspace-mode draft`; governance extension,
// "Draft vs commit policy"): `runs_diff` shows what the sandbox changed in its copy of the
// workspace, `runs_apply` commits exactly those changes to the host. Both are cfh's own
// code on the host (executor `host`), never a program of the sandbox's. The diff only reads;
// the apply changes the host, so its contract asks for approval and only the operator's
// configured approvals (--approve, --approvals) can give it: the client's word never does.
// The executor is the engine's (draft-live.ts); the MCP server binds it (src/mcp/).
import { z } from 'zod';
import type { HostToolLabels } from '../cfc/host-tool-labels.js';
import type { ToolDefinition } from './contract.js';
import { ObservationSchema } from './observation.js';

export const RUNS_DIFF = 'runs_diff';
export const RUNS_APPLY = 'runs_apply';

export const RunsDiffInput = z.strictObject({});
export const RunsApplyInput = z.strictObject({
  patch: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'the sha256 runs_diff gave (64 lowercase hex digits)')
    .describe(
      'The digest runs_diff gave for the changes to apply; if the draft changed since, nothing is applied.',
    ),
});

const common = {
  output: ObservationSchema,
  executor: 'host' as const,
  resourceScope: 'project' as const,
  // Walking a large copy takes time; the session's own limits still hold.
  timeoutMs: 300_000,
  resultSizeLimitChars: 32_000,
  auditPolicy: 'full_structured_event' as const,
};

/**
 * The two tools, labelled for CFC (AH-CFC-1/2): what the copy holds is what the workload
 * could read and write into it (`draft`), and the host workspace takes what its own
 * clearance allows (`clearance`).
 */
export function draftTools(labels: {
  readonly draft: HostToolLabels['result'];
  readonly clearance: readonly string[];
}): ToolDefinition[] {
  return [
    {
      ...common,
      name: RUNS_DIFF,
      purpose:
        'The changes the sandbox made to its draft copy of the workspace (since the session began, or since the last runs_apply), as a unified diff, with the `patch` digest runs_apply takes. Reads only; the sandbox is paused while its copy is read.',
      input: RunsDiffInput,
      riskClass: 'read_only',
      sideEffectClass: 'none',
      permissionPolicy: 'allow',
      retryPolicy: 'safe_retry',
      maxRetries: 0,
      cfc: {
        result: labels.draft,
        clearance: [],
        requires: [],
        readsBeforeWrite: false,
        declassifies: false,
      },
    },
    {
      ...common,
      name: RUNS_APPLY,
      purpose:
        'Applies to the host workspace exactly the draft changes runs_diff named by `patch`, all or none (nothing if the draft or the host changed since). It needs an approval the operator configured (cfh mcp --approve, --approvals): otherwise it is answered approval_required and nothing changes.',
      input: RunsApplyInput,
      riskClass: 'write_local',
      sideEffectClass: 'local_artifact',
      permissionPolicy: 'approval_required',
      retryPolicy: 'no_auto_retry',
      maxRetries: 0,
      cfc: {
        result: labels.draft,
        clearance: labels.clearance,
        requires: [],
        readsBeforeWrite: true,
        declassifies: false,
      },
    },
  ];
}
