// `cfh policy explain` and the policy part of `cfh profiles show --resolved`: which rule
// decides a call and why, and the rules in force for a profile, without running anything.
// The same Policy the agent run builds (agent-run.ts) decides here.
import type { Profile } from '../config/profile-schema.js';
import { ConfigError } from '../errors.js';
import { describeDefaults } from '../mediator/defaults.js';
import { argsDigest } from '../mediator/mediator.js';
import { Policy, type CheckedCall, type Explanation, type RunFacts } from '../mediator/policy.js';
import { compilePolicy } from '../mediator/policy-rule.js';
import { BUILTIN_TOOLS } from '../tools/builtins.js';
import { ToolRegistry, type ToolDefinition } from '../tools/contract.js';

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

/** The tools a profile puts on the surface. */
export function surfaceOf(profile: Profile): ToolRegistry {
  return new ToolRegistry(BUILTIN_TOOLS, profile.tools);
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
}

export function explainCall(
  profile: Profile,
  facts: RunFacts,
  toolName: string,
  args: unknown,
): CallExplanation {
  const tool = surfaceOf(profile).get(toolName);
  let checked: CheckedCall;
  if (tool === undefined) checked = { kind: 'unknown', name: toolName };
  else {
    const parsed = tool.input.safeParse(args);
    checked = parsed.success
      ? { kind: 'valid', tool, args: parsed.data }
      : {
          kind: 'invalid',
          tool,
          issues: parsed.error.issues
            .map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`)
            .join('; '),
        };
  }
  const explanation = policyFor(profile, facts).explain(checked);
  return {
    ...explanation,
    tool: toolName,
    argsDigest: argsDigest(toolName, checked.kind === 'valid' ? checked.args : undefined),
    checked: checked.kind,
    ...(checked.kind === 'invalid' ? { issues: checked.issues } : {}),
  };
}

/** The effective rules of a profile, tier by tier, as `profiles show --resolved` prints them. */
export function effectivePolicy(profile: Profile, facts: RunFacts): Record<string, unknown> {
  const tools: ToolDefinition[] = surfaceOf(profile).all();
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
