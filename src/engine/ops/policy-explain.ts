// `cfh policy explain` and the policy part of `cfh profiles show --resolved`: which rule
// decides a call and why, and the rules in force for a profile, without running anything.
// The same surface a run builds (built-in tools and host tools: agent-run.ts), the same
// check of the proposal (tool-call-deps.ts) and the same Policy decide here. One thing a run
// knows and explain does not: an MCP tool's input schema is the server's, and no server is
// started here; such a call is decided as the run decides a call its schema accepts, and
// the explanation says the schema was not checked.
import { z } from 'zod';
import { Atom, PROMPT_DIRECT } from '../../config/cfc-schema.js';
import type { Profile } from '../../config/profile-schema.js';
import { judgeFlow, type FlowVerdict } from '../../cfc/flow.js';
import { label, type Label } from '../../cfc/label.js';
import { WORKSPACE_TARGET } from '../../sandbox/mount-policy.js';
import { planRunCfc } from '../cfc/cfc-plan.js';
import { ConfigError } from '../../errors.js';
import { describeDefaults } from '../../mediator/defaults.js';
import { argsDigest } from '../../mediator/mediator.js';
import {
  Policy,
  type CheckedCall,
  type Explanation,
  type RunFacts,
} from '../../mediator/policy.js';
import { compilePolicy } from '../../mediator/policy-rule.js';
import type { ToolDefinition } from '../../tools/contract.js';
import { knownTools } from './explain-surface.js';
import type { SurfaceFront } from '../agent/tool-surface.js';
import { checkAgainst } from '../agent/tool-call-deps.js';

/** The run's facts as a profile and the run's options make them. */
export function runFactsOf(
  profile: Profile,
  options: { mode?: 'run' | 'plan'; fromPlan?: boolean; workspaceMode?: 'direct' | 'draft' } = {},
): RunFacts {
  return {
    mode: options.mode ?? 'run',
    workspaceMode:
      options.workspaceMode ?? (profile.workspace.mode === 'draft' ? 'draft' : 'direct'),
    network: profile.network.mode,
    rwMounts: profile.workspace.mode !== 'ro' || profile.mounts.some((m) => m.mode === 'rw'),
    fromPlan: options.fromPlan ?? false,
  };
}

export function policyFor(profile: Profile, facts: RunFacts): Policy {
  try {
    return new Policy(compilePolicy(profile.policy), facts);
  } catch (error) {
    throw new ConfigError(
      'invalid_policy',
      `profile ${profile.name}: ${error instanceof Error ? error.message : String(error)}`,
      { field: 'policy' },
    );
  }
}

export interface CallExplanation extends Explanation {
  readonly tool: string;
  readonly argsDigest: string;
  readonly checked: 'valid' | 'unknown' | 'invalid';
  readonly issues?: string;
  /** Said when the input could not be checked as a run checks it (an MCP tool's schema). */
  readonly schema?: string;
  /** Which runs offer the tool: a model's (`agent`), an MCP client's (`mcp`); none: unknown. */
  readonly offeredBy: readonly SurfaceFront[];
}

export function explainCall(
  profile: Profile,
  facts: RunFacts,
  toolName: string,
  args: unknown,
): CallExplanation {
  const known = knownTools(profile, facts, toolName);
  const tool = known.registry.get(toolName);
  const checked: CheckedCall = checkAgainst(tool, toolName, args);
  const explanation = policyFor(profile, facts).explain(checked);
  const mcp = tool?.executor === 'host' && 'channel' in tool && tool.channel === 'mcp';
  return {
    ...explanation,
    tool: toolName,
    argsDigest: argsDigest(toolName, checked.kind === 'valid' ? checked.args : undefined),
    checked: checked.kind,
    offeredBy: known.offeredBy(toolName),
    ...(checked.kind === 'invalid' ? { issues: checked.issues } : {}),
    ...(mcp
      ? {
          schema:
            "not checked: the MCP server's input schema is known only to a run (no server is started here); decided as a run decides a call its schema accepts, if the server lists the tool",
        }
      : {}),
  };
}

/** The effective rules of a profile, tier by tier, as `profiles show --resolved` prints them. */
export function effectivePolicy(profile: Profile, facts: RunFacts): Record<string, unknown> {
  const tools: ToolDefinition[] = knownTools(profile, facts).registry.all();
  policyFor(profile, facts);
  return {
    evaluation:
      'tiers in order (cfh, profile, contract, defaults); within a tier deny, then ask, then allow, first match within each; nothing matched is denied',
    tiers: [
      {
        tier: 0,
        rules: [
          { id: 'unknown_tool', decision: 'deny', when: 'the tool is not on the surface' },
          { id: 'invalid_arguments', decision: 'deny', when: "the input fails the tool's schema" },
          { id: 'planning_mode', decision: 'deny', when: '--plan and the call can change things' },
          {
            id: 'from_plan',
            decision: 'approval_required',
            when: '--from-plan and the tool is not read_only/search_only/compute_only/draft_only',
          },
        ],
      },
      { tier: 1, rules: profile.policy },
      {
        tier: 2,
        rules: tools.map((t) => ({
          id: `contract:${t.name}`,
          permissionPolicy: t.permissionPolicy,
          riskClass: t.riskClass,
          sideEffectClass: t.sideEffectClass,
          executor: t.executor,
        })),
      },
      { tier: 3, rules: describeDefaults(facts) },
    ],
  };
}

/**
 * `--influence`: a label as a call carries it. cfh's own atoms are allowed here (unlike an
 * operator's label): an influence is the context's label, e.g. `{"integrity":["prompt:direct"]}`.
 */
const Influence = z.strictObject({
  confidentiality: z.array(Atom).max(64).default([]),
  integrity: z.array(Atom).max(64).default([]),
});

export function parseInfluence(text: string): Label {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    raw = error;
  }
  const parsed = Influence.safeParse(raw);
  if (!parsed.success)
    throw new ConfigError(
      'cfc_influence_invalid',
      `--influence: not a label (${raw instanceof Error ? raw.message : parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ')})`,
      { field: '--influence' },
      'give --influence \'{"confidentiality":[ATOM,...],"integrity":[ATOM,...]}\'',
    );
  return label(parsed.data);
}

export interface FlowExplanation {
  readonly mode: string;
  readonly verdict: FlowVerdict['verdict'];
  readonly rule: FlowVerdict['rule'];
  readonly reason: string;
  readonly influence: Label;
  readonly label: Label;
  readonly sinks: FlowVerdict['sinks'];
  readonly violations: FlowVerdict['violations'];
  /** What decides in the end: policy's deny, or the flow's question, or policy. */
  readonly effect: string;
}

/**
 * The flow decision a run makes for the call beside policy (mediator.ts; AH-CFC-9/11), with
 * the profile's CFC plan (`--cfc` over `cfc.mode`); undefined under `disabled` or for a call
 * that is not valid (nothing is judged then). Without `--influence`, a fresh run's context:
 * integrity prompt:direct (a captured `--prompt`) and no secrecy.
 */
export function explainFlow(
  profile: Profile,
  facts: RunFacts,
  toolName: string,
  args: unknown,
  policyDecision: string,
  options: { mode?: string | undefined; influence?: Label | undefined },
): FlowExplanation | undefined {
  const plan = planRunCfc(profile, [], [], WORKSPACE_TARGET, {
    mode: options.mode,
    describing: true,
  });
  if (plan.mode === 'disabled') return undefined;
  const tool = knownTools(profile, facts, toolName).registry.get(toolName);
  const checked = checkAgainst(tool, toolName, args);
  if (checked.kind !== 'valid') return undefined;
  const influence = options.influence ?? label({ integrity: [PROMPT_DIRECT] });
  const v = judgeFlow({
    plan,
    workspaceTarget: WORKSPACE_TARGET,
    tool: {
      name: checked.tool.name,
      riskClass: checked.tool.riskClass,
      executor: checked.tool.executor,
      cfc: checked.tool.cfc,
    },
    args: checked.args,
    influence,
  });
  const effect =
    policyDecision === 'deny'
      ? 'policy denies: the flow does not matter'
      : v.verdict === 'deny'
        ? `approval_required under ${v.rule}: runs only if a person endorses it${policyDecision === 'allow' || policyDecision === 'run_in_sandbox' || policyDecision === 'run_as_draft_only' ? '' : `, and then policy's ${policyDecision} is asked too`}`
        : v.verdict === 'would_deny'
          ? 'observe: recorded as would_deny; policy decides'
          : 'the flow is allowed; policy decides';
  return {
    mode: plan.mode,
    verdict: v.verdict,
    rule: v.rule,
    reason: v.reason,
    influence: v.influence,
    label: v.label,
    sinks: v.sinks,
    violations: v.violations,
    effect,
  };
}
