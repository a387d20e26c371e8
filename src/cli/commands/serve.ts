// `cfh serve --stdio [--profile P --workspace DIR ...]`: interactive sessions over JSON-RPC on
// stdin/stdout (src/serve, docs/operators.md "Sessions over stdio"). The flags are the
// defaults of every session this process opens; session/open's params may name the profile,
// workspace, workspace mode, CFC mode and rules. Each session is planned here as
// `sandbox run --prompt` plans a run: the same planner, approvals, gateway, host tools and
// child planner (agentRunDeps).
import path from 'node:path';
import { ConfigError } from '../../errors.js';
import { planSandboxRun } from '../../engine/run/run-plan.js';
import { cancelExit, cancelSignalOf } from '../../engine/run/terminal.js';
import { Approvals, RuleApprovals } from '../../mediator/approvals.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import { authorityOf } from '../../session/authority.js';
import { checkSessionFloor, type OperatorFloor } from '../../session/open-floor.js';
import { isBuiltinReference, loadProfile } from '../../config/profile-loader.js';
import type { CfhEnvironment } from '../../config/env.js';
import type { ModelGateway } from '../../model/gateway.js';
import { credentialDigest, digestKey } from '../../tools/host/credentials.js';
import type { OpenParams } from '../../serve/protocol.js';
import { LinePeer } from '../../serve/rpc.js';
import { SessionServer, type ServeHost } from '../../serve/server.js';
import type { RetryHook } from '../../engine/agent/agent-run.js';
import type { CliDeps } from '../deps.js';
import type { SERVE_FLAGS } from '../flags/command-flags.js';
import type { FlagValues } from '../flags/flag.js';
import { buildRunDeps } from '../run-deps.js';
import { reportFailure } from '../report-failure.js';
import { approvingUser, setUpApprovals } from './agent-approvals.js';
import { agentRunDeps } from './agent-run.js';
import { chooseGateway, heldCredential } from '../gateway-choice.js';

/** The model's credential by a keyed digest: the same route under another key is another owner. */
function modelCredential(gateway: ModelGateway, env: CfhEnvironment): string | null {
  const held = heldCredential(gateway, env);
  if (held === undefined) return null;
  return credentialDigest(digestKey(env.credentialSource), held.value);
}

export type ServeOptions = FlagValues<typeof SERVE_FLAGS>;

export async function serveCommand(o: ServeOptions, deps: CliDeps): Promise<number> {
  try {
    const input = deps.input?.stream;
    if (!o.stdio || input === undefined) {
      throw new ConfigError(
        'serve_transport_missing',
        '--stdio: the transport is not given (stdio is the only one)',
        { field: '--stdio' },
        'run `cfh serve --stdio`',
      );
    }
    const owner = currentOwner();
    // The operator's profile, as `cfh serve --profile` names it: the floor of every session.
    let floor: OperatorFloor['profile'] | undefined;
    const operatorProfile = (): OperatorFloor['profile'] => {
      if (floor !== undefined) return floor;
      const ref = o.profile;
      const { profile } = loadProfile(isBuiltinReference(ref) ? ref : path.resolve(ref));
      floor = { cfcMode: profile.cfc.mode, workspaceMode: profile.workspace.mode };
      return floor;
    };
    const run = await buildRunDeps(deps, owner);
    const user = approvingUser();
    const host: ServeHost = {
      user,
      prepare: async (params: OpenParams, caller) => {
        const mode = params.mode ?? 'run';
        const plan = planSandboxRun(
          {
            profile: params.profile ?? o.profile,
            workspace: params.workspace ?? o.workspace,
            workspaceMode: params.workspaceMode ?? o.workspaceMode,
            // The operator's alone: a client's session/open cannot make them writable.
            hostObeyed: o.hostObeyed,
            mounts: o.mount,
            network: o.network,
            allow: o.allow,
            deny: o.deny,
            cfc: params.cfc ?? o.cfc,
            artifactRoot: o.artifactRoot,
            toolLifetime: o.toolLifetime,
            planning: mode === 'plan',
            command: ['sleep', 'infinity'],
          },
          deps.env,
          currentHostIdentity(),
          owner,
        );
        // The operator's word is the floor a client's open options may only raise.
        checkSessionFloor(
          {
            cfcMode: plan.cfc.mode,
            workspaceMode: plan.workspaceMode === 'draft' ? 'draft' : plan.profile.workspace.mode,
          },
          {
            cfcFlag: o.cfc,
            workspaceModeFlag: o.workspaceMode,
            profile: operatorProfile(),
          },
        );
        // The rules are checked as `--approve` is; cfh never prompts on a terminal here:
        // the caller is asked over the protocol.
        const { setup } = await setUpApprovals(
          { approve: [...o.approve, ...(params.approve ?? [])], nonInteractive: true },
          plan.profile,
          deps,
        );
        const approvals = new Approvals([new RuleApprovals(setup.preApprovedRules, user), caller]);
        const retryHook: RetryHook = {};
        const gateway = chooseGateway(
          { provider: o.provider, model: o.model, baseUrl: o.baseUrl, script: o.script },
          deps.env,
          plan.profile.budgets.maxRetriesPerModelCall,
          retryHook,
          plan.profile.model,
        );
        return {
          plan,
          mode,
          approvals: {
            ...setup,
            interactive: true,
            notInteractiveBecause: null,
            surfaces: approvals.approvers.map((a) => a.surface),
          },
          // The agent run's own dependencies: the same host-tool channel and child planner,
          // so a session offers the surface `sandbox run --prompt` does (delegate included).
          deps: agentRunDeps(run.deps, deps, { gateway, retryHook, approvals, events: false }),
          authority: authorityOf(
            plan,
            gateway,
            mode,
            setup.preApprovedRules,
            modelCredential(gateway, deps.env),
          ),
        };
      },
    };
    deps.printer.err('cfh: serving sessions on stdin/stdout (JSON-RPC 2.0, one message a line)');
    await new SessionServer(new LinePeer(input, deps.printer.stdout), host).run(run.signal);
    if (!run.signal.aborted) return 0;
    return cancelExit(cancelSignalOf(run.signal));
  } catch (error) {
    return reportFailure(error, deps, { json: false, surface: 'run' });
  }
}
