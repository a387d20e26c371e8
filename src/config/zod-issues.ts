// One clear line per validation failure, naming where it is and what is expected, never
// what was found (AH-INV-4). The text validated may be any file a profile's `extends`, a
// `--script` or an `--approvals` names, a credential file among them, and the refusal
// goes to stderr, often into a CI log: so a message holds no value of the input, and of
// its keys only those the schema itself defines (cfh's vocabulary). A key the schema does
// not know (an unknown key, a record's key such as an env name) is shown as `<key>` and
// located by line instead: a secret line `AKIA…: x` is a key too. zod's own message is
// used except for unknown keys, whose message quotes them; its other built-in messages
// name types, bounds, patterns and choices, all from the schema.
import { z } from 'zod';

/** Where a path of the input is in its text: `line 3, column 5`, or undefined. */
export type Locate = (path: readonly PropertyKey[], unknownKey?: string) => string | undefined;

export interface IssueContext {
  /** The schema that was parsed: only its keys are named. */
  readonly schema: z.ZodType;
  /** The input's text positions (yaml-file.ts), when it came from a file cfh parsed. */
  readonly locate?: Locate | undefined;
  /**
   * Only for what the operator typed on cfh's command line (run-plan.ts, the flags'
   * candidate): the value found is shown after the message, as they typed it. Never for
   * anything read from a file.
   */
  readonly commandLine?: unknown;
}

/**
 * The first unknown key of a failed parse, for the one-line refusal of a file
 * (`FILE:LINE:COL: unknown key 'netwrk' at top level; did you mean 'network'?`). The key is
 * quoted only when it lies within two edits of one the schema defines: a word that close to
 * cfh's own vocabulary carries nothing of the file. Any other key stays unquoted, located
 * by line and column only (a secret line `AKIA…: x` is a key too).
 */
export interface UnknownKey {
  /** `unknown key 'netwrk' at top level`, or `an unknown key in limits`. */
  readonly what: string;
  /** `did you mean 'network'?`, or `known keys: …`. */
  readonly hint: string;
  /** The issue's path and key, for the caller to locate. */
  readonly path: readonly PropertyKey[];
  readonly key: string;
}

export function firstUnknownKey(error: z.ZodError, schema: z.ZodType): UnknownKey | undefined {
  for (const issue of error.issues) {
    if (issue.code !== 'unrecognized_keys') continue;
    const key = issue.keys[0];
    if (key === undefined) continue;
    const shown = shownPath(schema, issue.path);
    const where = shown.text === '' ? 'at top level' : `in ${shown.text}`;
    const known = shown.schema === undefined ? [] : objectKeys(shown.schema);
    const near = nearest(key, known);
    return near === undefined
      ? {
          what: `an unknown key ${where}`,
          hint: known.length === 0 ? 'remove it' : `known keys: ${known.join(', ')}`,
          path: issue.path,
          key,
        }
      : {
          what: `unknown key '${key}' ${where}`,
          hint: `did you mean '${near}'?`,
          path: issue.path,
          key,
        };
  }
  return undefined;
}

/** The known key within two edits (transpositions count one) of `key`, if exactly one is nearest. */
export function nearest(key: string, known: readonly string[]): string | undefined {
  if (key.length > 64) return undefined;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(key.toLowerCase(), k.toLowerCase());
    // Short keys get one edit: `env` is not a suggestion for any three letters.
    const allowed = k.length <= 4 ? 1 : 2;
    if (d <= allowed && d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions, transpositions. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => d[i]?.[j] ?? Infinity;
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, at(i - 2, j - 2) + 1);
      const row = d[i];
      if (row !== undefined) row[j] = v;
    }
  }
  return at(a.length, b.length);
}

export function describeIssues(error: z.ZodError, context: IssueContext): string {
  return error.issues.map((issue) => describeIssue(issue, context)).join('; ');
}

function describeIssue(issue: z.core.$ZodIssue, context: IssueContext): string {
  const shown = shownPath(context.schema, issue.path);
  const where = shown.text === '' ? '(top level)' : shown.text;
  const at = (path: readonly PropertyKey[], key?: string): string => {
    const found = context.locate?.(path, key);
    return found === undefined ? '' : ` at ${found}`;
  };
  if (issue.code === 'unrecognized_keys') {
    const known = shown.schema === undefined ? [] : objectKeys(shown.schema);
    const hint = known.length === 0 ? '' : ` (known keys: ${known.join(', ')})`;
    return issue.keys.map((k) => `${where}: an unknown key${at(issue.path, k)}${hint}`).join('; ');
  }
  const got = context.commandLine === undefined ? '' : typed(context.commandLine, issue.path);
  return `${where}${at(issue.path)}: ${issue.message}${got}`;
}

function typed(input: unknown, path: readonly PropertyKey[]): string {
  let cur: unknown = input;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = Object.getOwnPropertyDescriptor(cur, key)?.value;
  }
  return cur === undefined ? ' (got nothing)' : ` (got ${JSON.stringify(cur)})`;
}

/** Past optional, default, pipe, lazy…: the schema that judges the value. */
function unwrap(schema: z.ZodType): z.ZodType {
  let cur: z.ZodType = schema;
  for (let i = 0; i < 32; i += 1) {
    let inner: unknown;
    if (
      cur instanceof z.ZodOptional ||
      cur instanceof z.ZodNullable ||
      cur instanceof z.ZodDefault ||
      cur instanceof z.ZodPrefault ||
      cur instanceof z.ZodNonOptional ||
      cur instanceof z.ZodCatch ||
      cur instanceof z.ZodReadonly ||
      cur instanceof z.ZodLazy
    ) {
      inner = cur.unwrap();
    } else if (cur instanceof z.ZodPipe) {
      inner = cur.in;
    }
    if (!(inner instanceof z.ZodType)) return cur;
    cur = inner;
  }
  return cur;
}

function objectKeys(schema: z.ZodType): string[] {
  const s = unwrap(schema);
  return s instanceof z.ZodObject ? Object.keys(s.shape).sort() : [];
}

/** The schema one step down `key`, when the schema defines that step. */
function step(schema: z.ZodType, key: PropertyKey): z.ZodType | 'record' | undefined {
  const s = unwrap(schema);
  if (s instanceof z.ZodObject) {
    if (typeof key !== 'string' || !Object.hasOwn(s.shape, key)) return undefined;
    const child: unknown = s.shape[key];
    return child instanceof z.ZodType ? child : undefined;
  }
  if (s instanceof z.ZodArray) {
    const element: unknown = s.element;
    return typeof key === 'number' && element instanceof z.ZodType ? element : undefined;
  }
  if (s instanceof z.ZodTuple) {
    const item: unknown = typeof key === 'number' ? s.def.items[key] : undefined;
    return item instanceof z.ZodType ? item : undefined;
  }
  if (s instanceof z.ZodRecord) return 'record';
  if (s instanceof z.ZodUnion) {
    for (const option of s.options) {
      if (option instanceof z.ZodType) {
        const next = step(option, key);
        if (next !== undefined) return next;
      }
    }
  }
  if (s instanceof z.ZodIntersection) {
    const left: unknown = s.def.left;
    const right: unknown = s.def.right;
    for (const side of [left, right]) {
      if (side instanceof z.ZodType) {
        const next = step(side, key);
        if (next !== undefined) return next;
      }
    }
  }
  return undefined;
}

function recordValue(schema: z.ZodType): z.ZodType | undefined {
  const s = unwrap(schema);
  if (!(s instanceof z.ZodRecord)) return undefined;
  const value: unknown = s.valueType;
  return value instanceof z.ZodType ? value : undefined;
}

/**
 * `hostTools[0].env.<key>`: the schema's keys by name, indices by number, anything else
 * (a record's key, a step the schema does not define) as `<key>`; with the schema reached.
 */
function shownPath(
  schema: z.ZodType,
  path: readonly PropertyKey[],
): { text: string; schema: z.ZodType | undefined } {
  let cur: z.ZodType | undefined = schema;
  let text = '';
  for (const key of path) {
    const next: z.ZodType | 'record' | undefined = cur === undefined ? undefined : step(cur, key);
    if (typeof key === 'number') {
      text += `[${key}]`;
    } else if (next === undefined || next === 'record') {
      text += text === '' ? '<key>' : '.<key>';
    } else {
      text += text === '' ? String(key) : `.${String(key)}`;
    }
    cur = next === 'record' ? (cur === undefined ? undefined : recordValue(cur)) : next;
  }
  return { text, schema: cur };
}
