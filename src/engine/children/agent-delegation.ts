// An agent run's side of delegation (AH-DEL-2, AH-USAGE-2): the `delegate` tool and its
// runner's maker when the profile lists children, and what the run reports of its tree. How
// a child is run is the agent run's own (agent-run.ts childLauncher), handed in.
import { delegateToolOf } from './delegate-offer.js';
import type { ToolDefinition } from '../../tools/contract.js';
import type { BudgetTracker } from '../agent/budgets.js';
import {
  ChildRunner,
  switchesIdentity,
  type ChildLauncher,
  type ChildOutcome,
  type DelegatedBy,
} from './child-runner.js';
import type { RunPlan } from '../run/run-plan.js';
import { ReturnCheck } from './child-return.js';
import type { RunSession } from '../run/run-session.js';

export interface Delegation {
  readonly tool: ToolDefinition;
  readonly runner: (session: RunSession, tracker: BudgetTracker) => ChildRunner;
}

/** The tool and runner maker, or none: no children, or no depth left to delegate. */
export function delegationOf(
  plan: RunPlan,
  delegatedBy: DelegatedBy | undefined,
  launcher: ChildLauncher,
): Delegation | undefined {
  const depthLeft = delegatedBy?.depthLeft ?? plan.profile.budgets.maxDelegationDepth;
  const offered = delegateToolOf(plan.profile, depthLeft, () => switchesIdentity(plan));
  if (offered === undefined) return undefined;
  // Before anything exists (AH-INV-4): a schema that does not compile refuses the run.
  const returns = new ReturnCheck();
  for (const c of offered.children) returns.compile(plan.profile.name, c);
  const depth = delegatedBy?.depth ?? 0;
  return {
    tool: offered.tool,
    runner: (session, tracker) =>
      new ChildRunner({ session, tracker, launcher, depth, depthLeft, returns }),
  };
}

/** What the tracker counted: this run and its completed descendants (budgets.ts settle). */
export function usedOf(tracker: BudgetTracker | undefined): ChildOutcome['used'] {
  if (tracker === undefined) return { turns: 0, calls: 0, input: 0, output: 0, cost: 0 };
  const s = tracker.snapshot();
  return {
    turns: s.model_turns,
    calls: s.tool_calls,
    input: s.input_tokens,
    output: s.output_tokens,
    cost: s.estimated_cost ?? 'unpriced',
  };
}

/** report.json's tree: usage with descendants (theirs apart) and the children's list. */
export function treeUsage(held: { tracker?: BudgetTracker; children?: ChildRunner }) {
  const used = usedOf(held.tracker);
  const d = held.tracker?.descendants() ?? { turns: 0, calls: 0, input: 0, output: 0, cost: 0 };
  const cost = (c: number | 'unpriced'): number | null => (c === 'unpriced' ? null : c);
  return {
    usageWithDescendants: {
      coverage: 'run-and-completed-descendants' as const,
      modelTurns: used.turns,
      toolCalls: used.calls,
      inputTokens: used.input,
      outputTokens: used.output,
      estimatedCost: cost(used.cost),
      descendants: {
        modelTurns: d.turns,
        toolCalls: d.calls,
        inputTokens: d.input,
        outputTokens: d.output,
        estimatedCost: cost(d.cost),
      },
    },
    children: [...(held.children?.finished() ?? [])],
  };
}
