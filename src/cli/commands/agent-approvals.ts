// How an agent run's approvals are given (docs/operators.md, "Approvals"): `--approve RULE`
// (every call that rule asks about, for this run), `--approvals FILE` (exact calls), and the
// person at the terminal unless `--non-interactive` or there is no terminal. Checked before
// anything starts: an unknown rule, a bad file, is a configuration error (exit 125).
import os from 'node:os';
import { APPROVABLE_RULE_ID, loadApprovalsFile } from '../../config/approvals-file.js';
import { RiskClass } from '../../config/vocabulary.js';
import type { Profile } from '../../config/profile-schema.js';
import type { ApprovalSetup } from '../../engine/agent/agent-run.js';
import { ConfigError } from '../../errors.js';
import {
  Approvals,
  FileApprovals,
  RuleApprovals,
  type ApprovalSource,
} from '../../mediator/approvals.js';
import { execToolName, mcpToolName } from '../../tools/host/host-plan.js';
import type { CliDeps } from '../deps.js';
import { TtyApprovals, openControllingTerminal, terminalAvailable } from '../tty-approvals.js';

export interface ApprovalArgs {
  readonly approve?: readonly string[] | undefined;
  readonly approvals?: string | undefined;
  readonly nonInteractive?: boolean | undefined;
  /** Tools the surface serves beyond the profile's (a draft `cfh mcp`'s runs_diff, runs_apply). */
  readonly surfaceTools?: readonly string[] | undefined;
}

/** cfh's own rules that decide `deny` and so never ask: approving them means nothing. */
const NEVER_ASK = new Set(['planning_mode', 'unknown_tool', 'invalid_arguments', 'default:deny']);

/**
 * The tools of a run of this profile, as the model names them: the built-ins, each declared
 * host tool, and for an MCP server exposed through `*` any tool under its prefix (which
 * tools the server lists is known only once it runs).
 */
export class RunTools {
  readonly #exact: Set<string>;
  readonly #prefixes: string[];

  constructor(profile: Profile, surfaceTools: readonly string[] = []) {
    this.#exact = new Set([...profile.tools, ...surfaceTools]);
    this.#prefixes = [];
    for (const entry of profile.hostTools) {
      if (entry.kind === 'exec') {
        this.#exact.add(execToolName(entry));
        continue;
      }
      for (const t of entry.tools) {
        if (t.name === '*') this.#prefixes.push(mcpToolName(entry, ''));
        else this.#exact.add(mcpToolName(entry, t.name));
      }
    }
  }

  has(tool: string): boolean {
    return (
      this.#exact.has(tool) ||
      this.#prefixes.some((p) => tool.length > p.length && tool.startsWith(p))
    );
  }

  /** How the run's tools are spelled in a message: exact names, then `prefix*`. */
  describe(): string {
    return [...[...this.#exact].sort(), ...this.#prefixes.map((p) => `${p}*`)].join(', ');
  }
}

/** Every rule id that can ask in a run of this profile: its rules, cfh's, contracts, defaults. */
export function approvableRules(
  profile: Profile,
  surfaceTools: readonly string[] = [],
): {
  has(rule: string): boolean;
  describe(): string;
} {
  const tools = new RunTools(profile, surfaceTools);
  const named = new Set([
    ...profile.policy.map((r) => r.id),
    'from_plan',
    ...RiskClass.options.map((r) => `default:${r}`),
    // The flow rules an enforcing CFC mode asks under (mediator/flow-gate.ts): a person's
    // approval of one is an endorsement or declassification (AH-CFC-11).
    'cfc:clearance',
    'cfc:integrity',
    'cfc:unlabelled',
  ]);
  return {
    has: (rule) => named.has(rule) || (rule.startsWith('contract:') && tools.has(rule.slice(9))),
    describe: () =>
      [...[...named].sort(), `contract:<tool> for a tool of the run (${tools.describe()})`].join(
        ', ',
      ),
  };
}

function checkRule(rule: string, known: ReturnType<typeof approvableRules>, field: string): void {
  if (!APPROVABLE_RULE_ID.test(rule) || NEVER_ASK.has(rule) || !known.has(rule)) {
    const why = NEVER_ASK.has(rule) ? 'denies and never asks' : 'is not a rule of this run';
    throw new ConfigError(
      'unknown_approval_rule',
      `${field}: '${rule}' ${why} (rules that can ask: ${known.describe()})`,
      { field, value: rule },
    );
  }
}

/** The OS user who answers, as approvals record it. */
export function approvingUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return `uid:${process.getuid?.() ?? 'unknown'}`;
  }
}

export async function setUpApprovals(
  args: ApprovalArgs,
  profile: Profile,
  deps: CliDeps,
): Promise<{ approvals: Approvals; setup: ApprovalSetup }> {
  const known = approvableRules(profile, args.surfaceTools);
  const tools = new RunTools(profile, args.surfaceTools);
  const user = approvingUser();
  const pre = [...new Set(args.approve ?? [])];
  for (const rule of pre) checkRule(rule, known, '--approve');
  const rules = new RuleApprovals(pre, user);
  const sources: ApprovalSource[] = [rules];
  let file: ApprovalSetup['file'] = null;
  if (args.approvals !== undefined) {
    const loaded = await loadApprovalsFile(args.approvals);
    for (const [i, call] of loaded.calls.entries()) {
      checkRule(call.rule, known, `--approvals ${loaded.path} [${i}].rule`);
      if (!tools.has(call.tool)) {
        throw new ConfigError(
          'invalid_approvals_file',
          `--approvals ${loaded.path} [${i}].tool: '${call.tool}' is not a tool of this run (${tools.describe()})`,
          { field: '--approvals', value: loaded.path },
        );
      }
    }
    sources.push(new FileApprovals(loaded.calls, user));
    file = { path: loaded.path, sha256: loaded.sha256, calls: loaded.calls.length };
  }
  // Without a terminal cfh never prompts: an unanswered request is an observation.
  const notInteractiveBecause =
    args.nonInteractive === true
      ? '--non-interactive'
      : !terminalAvailable(deps.printer.stderr)
        ? 'no terminal to ask on (stderr or the controlling terminal is missing)'
        : null;
  if (notInteractiveBecause === null) {
    sources.push(
      new TtyApprovals({
        user,
        rules,
        open: () => openControllingTerminal(deps.printer.stderr),
      }),
    );
  }
  const approvals = new Approvals(sources);
  return {
    approvals,
    setup: {
      user,
      interactive: notInteractiveBecause === null,
      notInteractiveBecause,
      preApprovedRules: rules.preApproved,
      file,
      surfaces: approvals.approvers.map((a) => a.surface),
    },
  };
}
