// Policy as data: the `policy:` rules of a profile, and how one matches a proposed call.
// Every `match` field is optional; all that are given must hold. `tool` is a name or a glob
// (`mcp__tracker__*`, `*` matching any run of characters); `args` maps a dotted path into
// the validated input (`command.0`) to an exact string or a `/regex/`.
import type { RiskClass, SideEffectClass } from '../config/vocabulary.js';

export { PolicyRule } from '../config/policy-schema.js';
import type { PolicyRule } from '../config/policy-schema.js';
import { ALLOWING } from './decision.js';

/** What a rule can be matched against: the call and the run's mode. */
export interface MatchFacts {
  readonly tool: string;
  readonly riskClass: RiskClass | null;
  readonly sideEffectClass: SideEffectClass | null;
  readonly mode: 'run' | 'plan';
  /** The validated input; undefined for a call that has none (unknown tool, invalid). */
  readonly args: unknown;
}

/** A rule ready to match: its globs and regexes compiled once. */
export interface CompiledRule {
  readonly rule: PolicyRule;
  matches(facts: MatchFacts): boolean;
}

export function compileRule(rule: PolicyRule): CompiledRule {
  const m = rule.match;
  const tool = m.tool === undefined ? undefined : globRegex(m.tool);
  // A value too long for a regex to see whole matches a rule that restricts and never one
  // that allows: padding must not carry a call past an anchored allow.
  const restricts = !ALLOWING.has(rule.decision);
  const args = Object.entries(m.args ?? {}).map(([p, want]) => ({
    path: p.split('.'),
    test: valueTest(want, restricts),
  }));
  return {
    rule,
    matches: (f) =>
      (tool === undefined || tool.test(f.tool)) &&
      (m.riskClass === undefined || m.riskClass === f.riskClass) &&
      (m.sideEffectClass === undefined || m.sideEffectClass === f.sideEffectClass) &&
      (m.mode === undefined || m.mode === f.mode) &&
      args.every((a) => {
        const v = at(f.args, a.path);
        return v !== undefined && a.test(v);
      }),
  };
}

function globRegex(glob: string): RegExp {
  const body = glob
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`);
}

/** How much of a value a rule's regex sees: the model chooses the value. */
const REGEX_INPUT_CHARS = 10_000;

/**
 * `/…/flags` is a regular expression; anything else an exact string. A value longer than
 * the regex may see is `tooLong` (true for a restricting rule, false for an allowing one).
 * `g` and `y` are dropped: they would make one regex's answers depend on the one before.
 */
function valueTest(want: string, tooLong: boolean): (value: string) => boolean {
  const re = /^\/(.*)\/([a-z]*)$/s.exec(want);
  if (re === null) return (v) => v === want;
  const regex = new RegExp(re[1] ?? '', (re[2] ?? '').replace(/[gy]/g, ''));
  return (v) => (v.length > REGEX_INPUT_CHARS ? tooLong : regex.test(v));
}

/** The value at a dotted path, as a string when it is a string, number or boolean. */
function at(value: unknown, path: readonly string[]): string | undefined {
  let here: unknown = value;
  for (const key of path) {
    if (Array.isArray(here) && /^\d+$/.test(key)) here = here[Number(key)];
    else if (typeof here === 'object' && here !== null && Object.hasOwn(here, key))
      here = (here as Record<string, unknown>)[key];
    else return undefined;
  }
  return typeof here === 'string' || typeof here === 'number' || typeof here === 'boolean'
    ? String(here)
    : undefined;
}

/** Checks a profile's rules: ids unique, regexes compile. Returns them compiled. */
export function compilePolicy(rules: readonly PolicyRule[]): CompiledRule[] {
  const seen = new Set<string>();
  return rules.map((rule) => {
    if (seen.has(rule.id)) throw new Error(`policy: rule id '${rule.id}' is used twice`);
    seen.add(rule.id);
    return compileRule(rule);
  });
}
