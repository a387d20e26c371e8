// `cfh mcp --profile P --workspace DIR [--workspace-mode draft] [run options]`: cfh as an MCP
// server on stdin/stdout (src/mcp/). One connection is one agent run whose model side is the
// client; only the operator's approvals (--approve, --approvals) can approve a call, never
// the client and never a prompt (stdin is the protocol). stdout is the protocol's alone: the
// end of the run is said on stderr.
import { ConfigError } from '../../errors.js';
import { planSandboxRun } from '../../engine/run/run-plan.js';
import { serveMcp } from '../../mcp/server.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { CliDeps } from '../deps.js';
import { readFlags, type FlagValues } from '../flags/flag.js';
import { budgetOverrides } from '../flags/run-flags.js';
import { MCP_BUDGET_FLAGS, MCP_FLAGS } from '../flags/mcp-flags.js';
import { reportFailure } from '../report-failure.js';
import { buildRunDeps } from '../run-deps.js';
import { runEndLine } from '../run-said.js';
import { setUpApprovals } from './agent-approvals.js';
import { RUNS_APPLY, RUNS_DIFF } from '../../tools/draft-tools.js';

export async function mcpCommand(
  raw: Readonly<Record<string, unknown>>,
  deps: CliDeps,
): Promise<number> {
  try {
    const o: FlagValues<typeof MCP_FLAGS> = readFlags(MCP_FLAGS, raw);
    const budgets = budgetOverrides(readFlags(MCP_BUDGET_FLAGS, raw));
    const owner = currentOwner();
    const plan = planSandboxRun(
      {
        profile: o.profile,
        workspace: o.workspace,
        workspaceMode: o.workspaceMode,
        hostObeyed: o.hostObeyed,
        mounts: o.mount,
        user: o.user,
        memory: o.memory,
        cpus: o.cpus,
        pids: o.pids,
        runtime: o.runtime,
        image: o.image,
        network: o.network,
        allow: o.allow,
        deny: o.deny,
        caBundle: o.caBundle,
        cfc: o.cfc,
        labels: o.label,
        artifactRoot: o.artifactRoot,
        env: o.env,
        envFiles: o.envFile,
        toolLifetime: o.toolLifetime,
        toolTimeout: o.toolTimeout,
        budgets,
        failOnBlocked: o.failOnBlocked,
        planning: false,
        command: ['sleep', 'infinity'],
      },
      deps.env,
      currentHostIdentity(),
      owner,
    );
    // Never a terminal prompt: the client is the model side, and stdin is the protocol.
    const { approvals, setup } = await setUpApprovals(
      {
        approve: o.approve,
        approvals: o.approvals,
        nonInteractive: true,
        surfaceTools: plan.workspaceMode === 'draft' ? [RUNS_DIFF, RUNS_APPLY] : [],
      },
      plan.profile,
      deps,
    );
    const input = deps.input?.stream;
    if (input === undefined) {
      throw new ConfigError(
        'mcp_transport_failed',
        'cfh mcp: this cfh has no stdin to serve the protocol on',
        {
          field: 'stdin',
        },
      );
    }
    const run = await buildRunDeps(deps, owner);
    const outcome = await serveMcp(
      {
        plan,
        approvals: {
          ...setup,
          notInteractiveBecause:
            'cfh mcp: the MCP client is the model side; only the operator approves',
        },
        deps: { ...run.deps, approvals },
        input,
        output: deps.printer.stdout,
        log: deps.logger,
      },
      run.signal,
    );
    if (outcome === undefined) {
      deps.printer.err(
        'cfh mcp: the connection closed before the client initialized; no run started',
      );
      return 0;
    }
    deps.printer.err(runEndLine('agent', outcome, o.artifactRoot));
    return outcome.exitCode;
  } catch (error) {
    return reportFailure(error, deps, { json: false, surface: 'run' });
  }
}
