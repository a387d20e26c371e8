// Evaluating a proposed call against policy, outside the model (governance extension,
// "Permission decision object"; AH-CFC-1). Tiers, each decided as deny → ask → allow, first
// match within each class; the first tier with a match decides:
//
//   0  cfh's own: a call off the surface or with invalid arguments (deny), planning mode
//      (planning_mode: deny every mutation)
//   1  the profile's `policy:` rules, in order
//   2  the tool's own contract (`permission_policy`)
//   3  the built-in defaults, one per risk class (`default:<risk_class>`, defaults.ts)
//
// Nothing matched is denied (`default:deny`). Then what the verdict means for this tool in
// this run, which only ever tightens it: a decision that cannot hold here is a denial; an
// allowing one asks when the run executes a plan (from_plan) or the call is a high-risk
// commit. A denial or a question stays what it is: no step turns `deny` or
// `require_stronger_auth` into something weaker. Pure: facts in, a decision and its trace out.
import type { RiskClass, SideEffectClass } from '../config/vocabulary.js';
import type { ToolDefinition } from '../tools/contract.js';
import type { CheckedCall, PolicyTool, RunFacts } from './facts.js';
import { ALLOWING, classOf, type DecisionClass, type DecisionValue } from './decision.js';
import { builtinDefaults } from './defaults.js';
import type { CompiledRule, MatchFacts } from './policy-rule.js';
import { isHighRisk } from './risk.js';

export type { CheckedCall, PolicyTool, RunFacts } from './facts.js';

export interface Verdict {
  readonly decision: DecisionValue;
  readonly rule: string;
  readonly reason: string;
  readonly tier: 0 | 1 | 2 | 3;
}

export interface Explanation {
  readonly verdict: Verdict;
  /** Every rule that matched, by tier, in evaluation order. */
  readonly matched: readonly (Verdict & { readonly class: DecisionClass })[];
}

const RISKLESS: ReadonlySet<RiskClass> = new Set([
  'read_only',
  'search_only',
  'compute_only',
  'draft_only',
]);

export class Policy {
  readonly #profile: readonly CompiledRule[];
  readonly #facts: RunFacts;

  constructor(profileRules: readonly CompiledRule[], facts: RunFacts) {
    this.#profile = profileRules;
    this.#facts = facts;
  }

  get facts(): RunFacts {
    return this.#facts;
  }

  decide(call: CheckedCall<PolicyTool>): Verdict {
    return this.explain(call).verdict;
  }

  explain(call: CheckedCall<PolicyTool>): Explanation {
    const matched: (Verdict & { class: DecisionClass })[] = [];
    const tiers = [
      this.#own(call),
      call.kind === 'valid' ? this.#rules(1, this.#profile, call) : [],
      call.kind === 'valid' ? contractTier(call.tool) : [],
      call.kind === 'valid' ? this.#rules(3, builtinDefaults(call.tool, this.#facts), call) : [],
    ];
    let verdict: Verdict | undefined;
    for (const tier of tiers) {
      for (const v of tier) matched.push({ ...v, class: classOf(v.decision) });
      verdict ??= firstByClass(tier);
    }
    const base = verdict ?? {
      decision: 'deny',
      rule: 'default:deny',
      reason: 'no rule allows this call',
      tier: 3,
    };
    return { verdict: this.#effective(base, call), matched };
  }

  /** What a verdict means for this tool in this run; only ever stricter (see the header). */
  #effective(verdict: Verdict, call: CheckedCall<PolicyTool>): Verdict {
    if (call.kind !== 'valid') return verdict;
    const { tool } = call;
    if (verdict.decision === 'run_as_draft_only' && this.#facts.workspaceMode !== 'draft')
      return {
        ...verdict,
        decision: 'deny',
        reason: `${verdict.reason}; the workspace is not a draft`,
      };
    if (verdict.decision === 'run_in_sandbox' && tool.executor !== 'sandbox')
      return {
        ...verdict,
        decision: 'deny',
        reason: `${verdict.reason}; it does not run in the sandbox`,
      };
    if (!ALLOWING.has(verdict.decision)) return verdict;
    // The plan is context, never authority: what it leads to asks, unless it cannot change anything.
    if (this.#facts.fromPlan && !RISKLESS.has(tool.riskClass))
      return {
        decision: 'approval_required',
        rule: 'from_plan',
        reason: `executing an approved plan: ${tool.name} (${tool.riskClass}) needs approval`,
        tier: 0,
      };
    // High-risk commitments need a human authority: it asks, under the rule that allowed it.
    if (isHighRisk(tool))
      return {
        ...verdict,
        decision: 'approval_required',
        reason: `${verdict.reason}; a high-risk commit needs a person's approval`,
      };
    return verdict;
  }

  #own(call: CheckedCall<PolicyTool>): Verdict[] {
    if (call.kind === 'unknown')
      return [deny('unknown_tool', `'${call.name}' is not a tool of this run`)];
    if (call.kind === 'invalid')
      return [deny('invalid_arguments', `the arguments do not match ${call.tool.name}'s schema`)];
    const { tool } = call;
    const f = this.#facts;
    if (f.mode === 'plan' && mutates(tool, f)) {
      const via =
        tool.executor === 'sandbox' && f.mountChannel !== undefined
          ? ` (a mount holds ${f.mountChannel})`
          : '';
      return [
        deny('planning_mode', `planning mode blocks ${tool.name}: it can change things${via}`),
      ];
    }
    return [];
  }

  #rules(tier: 1 | 3, rules: readonly CompiledRule[], call: CheckedCall<PolicyTool>): Verdict[] {
    if (call.kind !== 'valid') return [];
    const facts: MatchFacts = {
      tool: call.tool.name,
      riskClass: call.tool.riskClass,
      sideEffectClass: call.tool.sideEffectClass,
      mode: this.#facts.mode,
      args: call.args,
    };
    return rules
      .filter((r) => r.matches(facts))
      .map((r) => ({ decision: r.rule.decision, rule: r.rule.id, reason: r.rule.reason, tier }));
  }
}

function deny(rule: string, reason: string): Verdict {
  return { decision: 'deny', rule, reason, tier: 0 };
}

/** deny → ask → allow: the first of the strongest class present. */
function firstByClass(tier: readonly Verdict[]): Verdict | undefined {
  for (const c of ['deny', 'ask', 'allow'] as const) {
    const v = tier.find((x) => classOf(x.decision) === c);
    if (v !== undefined) return v;
  }
  return undefined;
}

const CONTRACT: Readonly<Record<ToolDefinition['permissionPolicy'], DecisionValue | undefined>> = {
  // `allow` says nothing the defaults would not: it leaves the decision to them.
  allow: undefined,
  deny: 'deny',
  approval_required: 'approval_required',
  stronger_auth: 'require_stronger_auth',
  sandbox: 'run_in_sandbox',
  draft_only: 'run_as_draft_only',
};

function contractTier(tool: PolicyTool): Verdict[] {
  const decision = CONTRACT[tool.permissionPolicy];
  if (decision === undefined) return [];
  return [
    {
      decision,
      rule: `contract:${tool.name}`,
      reason: `${tool.name} declares permission_policy ${tool.permissionPolicy}`,
      tier: 2,
    },
  ];
}

const MUTATING: ReadonlySet<SideEffectClass> = new Set([
  'local_artifact',
  'internal_state_change',
  'external_commitment',
  'financial_transfer',
  'identity_or_access_change',
  'destructive_change',
]);

/**
 * Planning mode lets the model read, search, list and plan. A program in the sandbox can
 * change nothing lasting when no mount is writable and there is no network (its /tmp goes
 * with its container); anything else that has a side effect is a mutation.
 */
export function mutates(
  tool: Pick<PolicyTool, 'sideEffectClass' | 'executor'>,
  f: RunFacts,
): boolean {
  if (tool.sideEffectClass === 'none') return false;
  if (MUTATING.has(tool.sideEffectClass)) return true;
  // A sandbox command writes nothing through ro mounts and no network, but a FIFO on a
  // mount carries its bytes to a host reader whatever the mount's mode.
  return (
    tool.executor !== 'sandbox' ||
    f.rwMounts ||
    f.network !== 'disabled' ||
    f.mountChannel !== undefined
  );
}
