// The built-in defaults: one rule per risk class, `default:<risk_class>`, applied after the
// profile's rules and the tool's contract (policy.ts). Published in docs/operators.md
// ("Policy"). Where a tool runs matters: writing inside the sandbox's own mounts is not
// writing on the host.
import { RiskClass } from '../config/vocabulary.js';
import type { ToolDefinition } from '../tools/contract.js';
import type { DecisionValue } from './decision.js';
import { compileRule, type CompiledRule } from './policy-rule.js';
import type { PolicyTool, RunFacts } from './facts.js';
import { hasEgress } from '../config/postures.js';

interface DefaultRule {
  readonly decision: DecisionValue;
  readonly reason: string;
}

function table(
  executor: ToolDefinition['executor'],
  facts: RunFacts,
): Readonly<Record<RiskClass, DefaultRule>> {
  const inSandbox = executor === 'sandbox';
  const draft = facts.workspaceMode === 'draft';
  const approval = (reason: string): DefaultRule => ({ decision: 'approval_required', reason });
  return {
    read_only: { decision: 'allow', reason: 'reads only' },
    search_only: { decision: 'allow', reason: 'searches only' },
    compute_only: { decision: 'allow', reason: 'computes only' },
    draft_only: { decision: 'allow', reason: 'prepares a draft only' },
    write_local: inSandbox
      ? draft
        ? { decision: 'run_as_draft_only', reason: 'writes go to the draft copy of the workspace' }
        : { decision: 'allow', reason: "writes only inside the sandbox's own mounts" }
      : approval('writes on the host'),
    process_execution: inSandbox
      ? { decision: 'run_in_sandbox', reason: 'runs inside the sandbox' }
      : approval('runs a process on the host'),
    write_internal: approval('changes an internal system'),
    write_external: approval('changes an external system'),
    communication: approval('communicates outside the run'),
    security_sensitive: approval('is security-sensitive'),
    destructive: approval('is destructive'),
    privileged_admin: approval('uses administrative privileges'),
    financial: {
      decision: 'require_stronger_auth',
      reason: 'moves money: approval and stronger authentication',
    },
    identity_access: {
      decision: 'require_stronger_auth',
      reason: 'changes identity or access: approval and stronger authentication',
    },
    network_open_world: !inSandbox
      ? approval('reaches the open network from the host')
      : !hasEgress(facts.network)
        ? { decision: 'deny', reason: 'the network posture is disabled' }
        : { decision: 'run_in_sandbox', reason: `within the ${facts.network} network posture` },
  };
}

/** The default rule for the tool's risk class, as a compiled rule of tier 3. */
export function builtinDefaults(tool: PolicyTool, facts: RunFacts): CompiledRule[] {
  const d = table(tool.executor, facts)[tool.riskClass];
  return [
    compileRule({
      id: `default:${tool.riskClass}`,
      match: {},
      decision: d.decision,
      reason: `${tool.name} ${d.reason}`,
    }),
  ];
}

/** The table as published (docs/operators.md), for a sandbox and a host tool. */
export function describeDefaults(
  facts: RunFacts,
): { riskClass: RiskClass; rule: string; sandbox: DecisionValue; host: DecisionValue }[] {
  const sandbox = table('sandbox', facts);
  const host = table('host', facts);
  return RiskClass.options.map((riskClass) => ({
    riskClass,
    rule: `default:${riskClass}`,
    sandbox: sandbox[riskClass].decision,
    host: host[riskClass].decision,
  }));
}
