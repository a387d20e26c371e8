// `delegate`: the model starts a child run of one of its profile's child profiles (AH-DEL-1..5,
// AH-CFC-12/12a/13). cfh's own code on the host (executor `host`): the child runs in
// containers of its own, under its own profile, mediator and evidence (engine/children/child-runner.ts);
// what comes back is bounded, validated and labelled before the parent sees it. On the surface
// only when the profile lists children.
import { z } from 'zod';
import type { Label } from '../cfc/label.js';
import type { ToolDefinition } from './contract.js';
import { ObservationSchema } from './observation.js';

export const DELEGATE = 'delegate';
export const MAX_TASK_CHARS = 20_000;
export const MAX_INPUTS_CHARS = 16_000;

/** What the surface says of one child profile: its name, purpose, and CFC bounds. */
export interface DelegateTarget {
  readonly name: string;
  readonly description: string;
  /** The child's ceiling (AH-CFC-12a), else what its model may be shown. */
  readonly clearance: readonly string[];
  /** Whether a ceiling bounds what the child can return. */
  readonly ceiling: boolean;
  readonly maxReturnChars: number;
}

export function delegateInput(names: readonly [string, ...string[]]) {
  return z.strictObject({
    profile: z.enum(names).describe('The child profile to run.'),
    task: z
      .string()
      .min(1)
      .max(MAX_TASK_CHARS)
      .describe('What the child is to do; it receives it as quoted material, not as a command.'),
    inputs: z
      .record(z.string(), z.json())
      .optional()
      .refine((v) => v === undefined || JSON.stringify(v).length <= MAX_INPUTS_CHARS, {
        error: `inputs: at most ${String(MAX_INPUTS_CHARS)} characters of JSON`,
      })
      .describe('Small JSON values the child receives beside the task (quoted material too).'),
  });
}
export type DelegateInput = z.infer<ReturnType<typeof delegateInput>>;

/**
 * The tool for a profile's children. Its risk is the computation's: each child's own side
 * effects are decided by the child's own mediator and policy (a delegation is a policy
 * transition: AH-CFC-12); a profile rule on `delegate` can still ask for approval. Its CFC
 * sink is the children's clearance (what the task may carry into them); its result carries
 * the children's ceilings, or is unlabelled when one has none.
 */
export function delegateTool(
  targets: readonly DelegateTarget[],
  options: { readonly runsAlone?: boolean } = {},
): ToolDefinition {
  const names = targets.map((t) => t.name);
  const [first, ...rest] = names;
  if (first === undefined) throw new Error('delegate: no child profiles');
  const clearance = targets
    .map((t) => new Set(t.clearance))
    .reduce((acc, s) => new Set([...acc].filter((a) => s.has(a))));
  const result: Label | undefined = targets.every((t) => t.ceiling)
    ? {
        confidentiality: [...new Set(targets.flatMap((t) => t.clearance))].sort(),
        integrity: [],
      }
    : undefined;
  return {
    name: DELEGATE,
    purpose: [
      'Runs a child agent with a profile of its own, in containers of its own, and returns what it answers (validated; a failure is returned typed). Several delegate calls in one turn run side by side.',
      ...targets.map((t) => `- ${t.name}: ${t.description}`),
    ].join('\n'),
    input: delegateInput([first, ...rest]),
    output: ObservationSchema,
    executor: 'host',
    riskClass: 'compute_only',
    sideEffectClass: 'none',
    resourceScope: 'project',
    permissionPolicy: 'allow',
    retryPolicy: 'no_auto_retry',
    maxRetries: 0,
    // The child's own wall-time slice bounds it; this only stops a runner that hangs.
    timeoutMs: 7 * 24 * 3600 * 1000,
    resultSizeLimitChars: Math.max(...targets.map((t) => t.maxReturnChars)) + 2000,
    auditPolicy: 'full_structured_event',
    cfc: {
      result,
      clearance: [...clearance].sort(),
      requires: [],
      readsBeforeWrite: false,
      declassifies: false,
    },
    refusesHandles: true,
    ...(options.runsAlone === true ? { runsAlone: true as const } : {}),
  };
}
