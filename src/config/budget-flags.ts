// The CLI overrides of an agent run's budgets (AH-LIFE-4): one flag per budget,
// named after the budget, so an operator reads the same name in `--help`, the profile,
// the snapshot's overrides and the terminal reason.
import { ConfigError } from '../errors.js';
import type { AgentBudgets } from './profile-schema.js';
import type { z } from 'zod';

type BudgetField = keyof z.infer<typeof AgentBudgets>;

export interface BudgetFlag {
  /** Without the leading dashes: `max-model-turns`. */
  readonly flag: string;
  readonly field: BudgetField;
  readonly value: 'count' | 'retries' | 'number';
  readonly help: string;
}

export const BUDGET_FLAGS: readonly BudgetFlag[] = [
  { flag: 'max-model-turns', field: 'maxModelTurns', value: 'count', help: 'model turns' },
  { flag: 'max-tool-calls', field: 'maxToolCalls', value: 'count', help: 'tool calls in all' },
  {
    flag: 'max-parallel-tool-calls',
    field: 'maxParallelToolCalls',
    value: 'count',
    help: 'tool calls proposed in one turn',
  },
  {
    flag: 'max-wall-time-seconds',
    field: 'maxWallTimeSeconds',
    value: 'number',
    help: 'wall time of the whole run, in seconds',
  },
  {
    flag: 'max-input-tokens',
    field: 'maxInputTokens',
    value: 'count',
    help: 'input tokens reported',
  },
  {
    flag: 'max-output-tokens',
    field: 'maxOutputTokens',
    value: 'count',
    help: 'output tokens reported',
  },
  {
    flag: 'max-total-cost',
    field: 'maxTotalCost',
    value: 'number',
    help: "estimated cost, in the rate card's currency",
  },
  {
    flag: 'max-tool-result-chars',
    field: 'maxToolResultChars',
    value: 'count',
    help: 'characters of one tool observation',
  },
  {
    flag: 'max-retries-per-model-call',
    field: 'maxRetriesPerModelCall',
    value: 'retries',
    help: 'retries of one transient model failure',
  },
  {
    flag: 'max-retries-per-tool-call',
    field: 'maxRetriesPerToolCall',
    value: 'retries',
    help: 'retries of one idempotent tool call',
  },
];

/** `--flag VALUE` as the budget's number; a bad value names the flag. */
export function parseBudgetFlag(flag: BudgetFlag, text: string): number {
  const n = Number(text);
  const shape = flag.value === 'number' ? /^\d+(\.\d+)?$/ : /^\d+$/;
  const ok = shape.test(text.trim()) && Number.isFinite(n) && (flag.value === 'retries' || n > 0);
  if (!ok) {
    const what =
      flag.value === 'number'
        ? 'a positive number'
        : flag.value === 'count'
          ? 'a positive integer'
          : 'a non-negative integer';
    throw new ConfigError('invalid_number', `--${flag.flag}: '${text}' is not ${what}`, {
      field: `--${flag.flag}`,
      value: text,
    });
  }
  return n;
}
