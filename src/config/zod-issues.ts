// One clear line per validation failure, naming the field and the value.
import type { z } from 'zod';

export function describeIssues(error: z.ZodError, input: unknown): string {
  return error.issues.map((issue) => describeIssue(issue, input)).join('; ');
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => `${[...path, k].join('.')}: unknown key`).join('; ');
  }
  const where = path.length > 0 ? path.join('.') : '(top level)';
  const value = valueAt(input, issue.path);
  const shown = value === undefined ? 'missing' : JSON.stringify(value);
  return `${where}: ${issue.message} (got ${shown})`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}
