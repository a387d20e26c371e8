// The mediator seam (issue 5): every tool call passes through it and gets a recorded
// permission decision. Today a fixed policy; policies and approvals come with their own
// issue. The model proposes; only this decides (AH-TOOL-4).
import type { ToolContract } from '../tools/contract.js';

export interface PermissionDecision {
  readonly decision: 'allow' | 'deny' | 'approval_required';
  /** The rule that decided, recorded with the decision. */
  readonly rule: string;
  readonly reason: string;
}

export interface Mediator {
  decide(tool: ToolContract, input: unknown): PermissionDecision;
}

/** Read-only and sandbox-contained tools are allowed; anything else is denied. */
export class FixedPolicyMediator implements Mediator {
  decide(tool: ToolContract): PermissionDecision {
    if (tool.permissionPolicy === 'deny') {
      return {
        decision: 'deny',
        rule: 'tool.permission_policy=deny',
        reason: `${tool.name} is denied by its contract`,
      };
    }
    if (tool.sideEffectClass === 'none' || tool.sideEffectClass === 'sandbox-contained') {
      return {
        decision: 'allow',
        rule: `fixed:side_effect_class=${tool.sideEffectClass}`,
        reason: `${tool.name} stays inside the sandbox`,
      };
    }
    return {
      decision: 'deny',
      rule: `fixed:side_effect_class=${tool.sideEffectClass}`,
      reason: `${tool.name} has external side effects; no policy grants them yet`,
    };
  }
}
