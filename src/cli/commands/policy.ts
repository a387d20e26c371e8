// `cfh policy explain --profile P TOOL ARGS_JSON`: which rule decides a call and why,
// without running anything (the mediator's own evaluation, src/engine/ops/policy-explain.ts).
import { loadProfile } from '../../config/profile-loader.js';
import { ConfigError } from '../../errors.js';
import { describeLabel } from '../../cfc/label.js';
import {
  explainCall,
  explainFlow,
  parseInfluence,
  runFactsOf,
} from '../../engine/ops/policy-explain.js';
import type { SurfaceFront } from '../../engine/agent/tool-surface.js';
import type { CliDeps } from '../deps.js';
import { reportFailure } from '../report-failure.js';

/** Which runs a front is. */
const FRONT_TEXT: Readonly<Record<SurfaceFront, string>> = {
  agent: "a model's run (sandbox run --prompt, serve, sandbox resume)",
  mcp: "an MCP client's run (cfh mcp)",
};

export function policyExplainCommand(
  args: {
    profile: string;
    tool: string;
    argsJson: string;
    plan: boolean;
    fromPlan: boolean;
    workspaceMode: string | undefined;
    cfc: string | undefined;
    influence: string | undefined;
    json: boolean;
  },
  deps: CliDeps,
): number {
  try {
    let input: unknown;
    try {
      input = JSON.parse(args.argsJson);
    } catch (error) {
      throw new ConfigError(
        'invalid_args_json',
        `ARGS_JSON: not JSON (${error instanceof Error ? error.message : String(error)})`,
        { field: 'ARGS_JSON' },
      );
    }
    if (args.workspaceMode !== undefined && !['direct', 'draft'].includes(args.workspaceMode)) {
      throw new ConfigError('invalid_workspace_mode', '--workspace-mode: direct or draft', {
        field: '--workspace-mode',
        value: args.workspaceMode,
      });
    }
    const { profile } = loadProfile(args.profile);
    // Without --workspace-mode, the profile's own mode (a draft profile's runs are drafts).
    const facts = runFactsOf(profile, {
      mode: args.plan ? 'plan' : 'run',
      fromPlan: args.fromPlan,
      ...(args.workspaceMode === undefined
        ? {}
        : { workspaceMode: args.workspaceMode === 'draft' ? 'draft' : 'direct' }),
    });
    const influence = args.influence === undefined ? undefined : parseInfluence(args.influence);
    const e = explainCall(profile, facts, args.tool, input);
    // The flow decision beside the policy rule (AH-CFC-9/11): what a run's mediator judges.
    const flow = explainFlow(profile, facts, args.tool, input, e.verdict.decision, {
      mode: args.cfc,
      influence,
    });
    if (args.json) {
      deps.printer.json({ profile: profile.name, facts, ...e, flow: flow ?? null });
      return 0;
    }
    const p = deps.printer;
    const v = e.verdict;
    p.out(`decision   ${v.decision}`);
    p.out(`rule       ${v.rule} (tier ${v.tier})`);
    p.out(`reason     ${v.reason}`);
    p.out(`call       ${e.tool} ${e.checked}${e.issues === undefined ? '' : `: ${e.issues}`}`);
    p.out(`args       ${e.argsDigest}`);
    p.out(
      `offered    ${e.offeredBy.length === 0 ? 'by no run of this profile' : e.offeredBy.map((f) => FRONT_TEXT[f]).join('; ')}`,
    );
    if (e.schema !== undefined) p.out(`schema     ${e.schema}`);
    p.out(
      `run        mode ${facts.mode}, workspace ${facts.workspaceMode}, network ${facts.network}, rw mounts ${facts.rwMounts ? 'yes' : 'no'}${facts.fromPlan ? ', from a plan' : ''}`,
    );
    for (const m of e.matched)
      p.out(`matched    tier ${m.tier} ${m.class.padEnd(5)} ${m.decision} ${m.rule}: ${m.reason}`);
    if (flow !== undefined) {
      p.out(`flow       ${flow.verdict} ${flow.rule} (cfc ${flow.mode}): ${flow.reason}`);
      p.out(`influence  ${describeLabel(flow.influence)}; call ${describeLabel(flow.label)}`);
      for (const s of flow.sinks)
        p.out(
          `sink       ${s.sink}: cleared [${s.clearance.join(', ')}], requires [${s.requires.join(', ')}]`,
        );
      p.out(`effect     ${flow.effect}`);
    }
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}
