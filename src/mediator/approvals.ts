// Where an approval comes from when policy asks for one (governance extension, "pause for
// human approval"). In order: a rule the operator approved for the run (`--approve RULE`,
// or "approve this rule" answered at the prompt), an exact call in an approvals file
// (`--approvals FILE`: rule, tool and args digest), a person at the terminal. Without any
// of them cfh cannot ask, and the call is answered `approval_required` without its side
// effect: never a hang, never an implicit allow. An approval binds the exact call: a
// changed argument is a changed digest and a new question. The model is never asked.
import type { ToolDefinition } from '../tools/contract.js';
import type { Approver, DecisionValue } from './decision.js';

export interface ApprovalRequest {
  readonly callId: string;
  readonly tool: ToolDefinition;
  readonly args: unknown;
  readonly argsDigest: string;
  readonly decision: DecisionValue;
  readonly rule: string;
  readonly reason: string;
}

export type ApprovalAnswer =
  | { readonly granted: true; readonly approver: Approver; readonly scope: 'call' | 'rule' }
  | { readonly granted: false; readonly approver: Approver; readonly why: string };

/** One way of being asked. `undefined`: this source has nothing to say about the call. */
export interface ApprovalSource {
  readonly surface: Approver['surface'];
  /** The OS user who answers through it. */
  readonly user: string;
  /** False while it holds nothing that could answer (no rule approved yet). */
  readonly active?: boolean;
  answer(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalAnswer | undefined>;
}

/** An exact call an operator approved ahead of time (`--approvals FILE`). */
export interface ApprovedCall {
  readonly rule: string;
  readonly tool: string;
  readonly argsDigest: string;
}

/**
 * Stronger authentication (financial, identity and access): a rule-wide or file approval
 * is not enough; only a person at the terminal who types the call's digest can give it.
 */
function needsPresence(request: ApprovalRequest): boolean {
  return request.decision === 'require_stronger_auth';
}

/** Rules approved for the whole run: from the command line, and from answers at the prompt. */
export class RuleApprovals implements ApprovalSource {
  readonly surface = 'flag' as const;
  readonly user: string;
  readonly #rules: Set<string>;
  /** Rules approved at the terminal for the rest of the run (their approver was the tty). */
  readonly #atPrompt = new Set<string>();

  constructor(rules: readonly string[], user: string) {
    this.#rules = new Set(rules);
    this.user = user;
  }

  get active(): boolean {
    return this.#rules.size > 0 || this.#atPrompt.size > 0;
  }

  /** The rules approved from the command line, as the snapshot records them. */
  get preApproved(): readonly string[] {
    return [...this.#rules].sort();
  }

  approveForRun(rule: string): void {
    this.#atPrompt.add(rule);
  }

  answer(request: ApprovalRequest): Promise<ApprovalAnswer | undefined> {
    if (needsPresence(request)) return Promise.resolve(undefined);
    const surface = this.#atPrompt.has(request.rule)
      ? 'tty'
      : this.#rules.has(request.rule)
        ? 'flag'
        : undefined;
    if (surface === undefined) return Promise.resolve(undefined);
    return Promise.resolve({
      granted: true,
      approver: { kind: 'human', user: this.user, surface },
      scope: 'rule',
    });
  }
}

/**
 * An approvals file: each entry approves one call, once. A model that repeats an approved
 * call (same tool, same arguments) is asked again, so a file approving one commit cannot
 * be replayed into many; approving the same call twice takes two entries.
 */
export class FileApprovals implements ApprovalSource {
  readonly surface = 'file' as const;
  readonly user: string;
  readonly #calls: readonly ApprovedCall[];
  readonly #used = new Set<number>();

  constructor(calls: readonly ApprovedCall[], user: string) {
    this.#calls = calls;
    this.user = user;
  }

  answer(request: ApprovalRequest): Promise<ApprovalAnswer | undefined> {
    if (needsPresence(request)) return Promise.resolve(undefined);
    const hit = this.#calls.findIndex(
      (c, i) =>
        !this.#used.has(i) &&
        c.rule === request.rule &&
        c.tool === request.tool.name &&
        c.argsDigest === request.argsDigest,
    );
    if (hit >= 0) this.#used.add(hit);
    return Promise.resolve(
      hit >= 0
        ? {
            granted: true,
            approver: { kind: 'human', user: this.user, surface: 'file' },
            scope: 'call',
          }
        : undefined,
    );
  }
}

/** Every source in order; the first with an answer decides. */
export class Approvals {
  readonly #sources: readonly ApprovalSource[];

  constructor(sources: readonly ApprovalSource[]) {
    this.#sources = sources;
  }

  /** Whether anything can answer at all (a run without sources never pauses). */
  get available(): boolean {
    return this.#sources.length > 0;
  }

  /** Who may answer, in the order they are asked (recorded with every request). */
  get approvers(): Approver[] {
    const out: Approver[] = [];
    for (const s of this.#sources) {
      if (s.active === false) continue;
      if (out.some((a) => a.surface === s.surface && a.user === s.user)) continue;
      out.push({ kind: 'human', user: s.user, surface: s.surface });
    }
    return out;
  }

  async answer(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalAnswer | undefined> {
    for (const source of this.#sources) {
      signal.throwIfAborted();
      const answer = await source.answer(request, signal);
      if (answer !== undefined) return answer;
    }
    return undefined;
  }
}
