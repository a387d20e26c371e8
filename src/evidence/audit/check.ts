// What an audit check is and says. Each check has a stable id, the clauses it checks
// (conformance/manifest.yaml reconciles them) and one verdict:
//   pass            the evidence shows the clause held
//   not-applicable  the run has none of the evidence the clause is about
//   warn            it held, but something an operator should know weakens the proof
//   fail            the evidence shows it did not hold, or was altered: `where` says where
//   inconclusive    the evidence the check needs could not be read
import type { TrustedKey } from '../signing.js';
import type { RunEvidence } from './run-evidence.js';

export type Verdict = 'pass' | 'not-applicable' | 'warn' | 'fail' | 'inconclusive';

export interface Outcome {
  readonly verdict: Verdict;
  readonly detail: string;
  /** The places a fail or warn is about: `events.jsonl:12 (seq 12)`, `report.json usage[1]`. */
  readonly where?: readonly string[];
}

export interface AuditContext {
  readonly run: RunEvidence;
  /** The public key the operator trusts, when one is configured. */
  readonly trustedKey?: TrustedKey | undefined;
  /** `cfh audit --require-signature`: an unsigned run fails, whenever it ran. */
  readonly requireSignature?: boolean | undefined;
  /**
   * A resumed run: the run it resumes, read from beside it (audit.ts), or why it could not
   * be read. Absent: not loaded (the check says it could not look).
   */
  readonly resumed?: RunEvidence | { readonly unreadable: string } | undefined;
  /**
   * The child runs the log names (AH-DEL-3/5), by child id: read from RUN/children/<id>/
   * (audit.ts), each with the checks that fail its own audit, or why it could not be read.
   * Absent: not loaded (children.tree says it could not look).
   */
  readonly children?: ReadonlyMap<string, ChildEvidence> | undefined;
}

/** A child run as the parent's audit read it: its evidence and what fails its own audit. */
export type ChildEvidence =
  | { readonly run: RunEvidence; readonly failing: readonly string[] }
  | { readonly unreadable: string };

export interface Check {
  readonly id: string;
  readonly title: string;
  readonly clauses: readonly string[];
  run(ctx: AuditContext): Outcome;
}

export interface CheckResult extends Outcome {
  readonly id: string;
  readonly title: string;
  readonly clauses: readonly string[];
  readonly where: readonly string[];
}

export const pass = (detail: string): Outcome => ({ verdict: 'pass', detail });
export const notApplicable = (detail: string): Outcome => ({ verdict: 'not-applicable', detail });
export const inconclusive = (detail: string): Outcome => ({ verdict: 'inconclusive', detail });
export const warn = (detail: string, where: readonly string[] = []): Outcome => ({
  verdict: 'warn',
  detail,
  where,
});

/** A fail listing the places; `what` says what is wrong in one line. */
export function fail(what: string, where: readonly string[]): Outcome {
  const shown = where.slice(0, 20);
  const more = where.length > shown.length ? ` (+${where.length - shown.length} more)` : '';
  return { verdict: 'fail', detail: `${what}${more}`, where: shown };
}

/** Where an event is: its line and seq. */
export function at(e: {
  readonly line: number;
  readonly seq: number;
  readonly type?: string;
}): string {
  return `events.jsonl:${e.line} (seq ${e.seq}${e.type === undefined ? '' : ` ${e.type}`})`;
}
