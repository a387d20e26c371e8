// `cfh audit`: run every check over one run's evidence, apply the expected-failures ledger,
// and decide the exit status: 0 nothing fails, 1 something fails (with --strict also a warn
// or an inconclusive), 2 the evidence cannot be read at all.
import type { TrustedKey } from '../signing.js';
import path from 'node:path';
import type { AuditContext, Check, CheckResult, ChildEvidence, Verdict } from './check.js';
import { isRunId } from '../run-id.js';
import { recordOf } from './parts.js';
import { CHECKS } from './checks.js';
import { CHILDREN_DIR } from './checks-integrity.js';
import { eventsOf, loadRunEvidence, type RunEvidence } from './run-evidence.js';
import type { LedgerEntry } from './ledger.js';

export const AUDIT_SCHEMA = 'cfh.audit/1';

export interface AuditResult {
  readonly schema: typeof AUDIT_SCHEMA;
  readonly runId: string;
  readonly dir: string;
  readonly checks: readonly CheckResult[];
  readonly counts: Readonly<Record<Verdict, number>>;
  /** Failures the ledger expects (known deviations), by check id. */
  readonly expected: readonly string[];
  /** Ledger entries for this run whose check did not fail: the deviation disappeared. */
  readonly disappeared: readonly string[];
  readonly ok: boolean;
}

export interface AuditOptions {
  readonly trustedKey?: TrustedKey | undefined;
  readonly requireSignature?: boolean | undefined;
  readonly strict?: boolean;
  readonly ledger?: readonly LedgerEntry[];
  readonly checks?: readonly Check[];
  /** The run a resumed run continues (AH-ART-4/5): see AuditContext.resumed. */
  readonly resumed?: AuditContext['resumed'];
  /** The child runs (AH-DEL-3/5): see AuditContext.children. */
  readonly children?: AuditContext['children'];
}

export async function auditRunDirectory(
  dir: string,
  options: AuditOptions = {},
): Promise<AuditResult> {
  return auditLoaded(await loadRunEvidence(dir), options, 0);
}

/** A run already read, audited with the runs it names (the one it resumes, its children). */
export async function auditRunEvidence(
  run: RunEvidence,
  options: AuditOptions = {},
): Promise<AuditResult> {
  return auditLoaded(run, options, 0);
}

/** How deep `cfh audit` follows children of children (each level audited as a run). */
const MAX_CHILD_DEPTH = 16;

async function auditLoaded(
  run: RunEvidence,
  options: AuditOptions,
  depth: number,
): Promise<AuditResult> {
  return auditEvidence(run, {
    ...options,
    resumed: await resumedEvidence(run),
    children: await childEvidence(run, options, depth),
  });
}

/**
 * The child runs the log names (child_started, child_finished), each read from
 * RUN/children/<childId>/ and audited with the same options: what fails there is named by
 * the parent's children.tree. A child id that is no run id is never joined to a path.
 */
async function childEvidence(
  run: RunEvidence,
  options: AuditOptions,
  depth: number,
): Promise<ReadonlyMap<string, ChildEvidence> | undefined> {
  const ids = new Set(
    [...eventsOf(run, 'child_started'), ...eventsOf(run, 'child_finished')].map(
      (e) => e.data.childId,
    ),
  );
  if (ids.size === 0) return undefined;
  const out = new Map<string, ChildEvidence>();
  for (const id of ids) {
    if (!isRunId(id)) {
      out.set(id, { unreadable: `'${id}' is not a run id` });
      continue;
    }
    if (depth >= MAX_CHILD_DEPTH) {
      out.set(id, { unreadable: `deeper than ${MAX_CHILD_DEPTH} levels of children` });
      continue;
    }
    try {
      const child = await loadRunEvidence(path.join(run.dir, CHILDREN_DIR, id));
      const audit = await auditLoaded(child, options, depth + 1);
      out.set(id, { run: child, failing: failingOf(audit, options) });
    } catch (error) {
      out.set(id, { unreadable: error instanceof Error ? error.message : String(error) });
    }
  }
  return out;
}

/** The checks that keep an audit from being ok: a fail not expected (strict: a warn or an
 * inconclusive too), and a ledger entry whose deviation disappeared. */
function failingOf(audit: AuditResult, options: AuditOptions): string[] {
  return [
    ...audit.checks
      .filter(
        (c) =>
          (c.verdict === 'fail' && !audit.expected.includes(c.id)) ||
          (options.strict === true && (c.verdict === 'warn' || c.verdict === 'inconclusive')),
      )
      .map((c) => c.id),
    ...audit.disappeared.map((id) => `${id} (expected to fail, passed)`),
  ];
}

/** The run a resumed run names, read from the same artifact root (a sibling directory). */
async function resumedEvidence(run: RunEvidence): Promise<AuditContext['resumed']> {
  const from = recordOf(recordOf(run.snapshot.value)?.resumedFrom)?.runId;
  if (typeof from !== 'string') return undefined;
  if (!isRunId(from)) return { unreadable: `resumedFrom.runId '${from}' is not a run id` };
  try {
    return await loadRunEvidence(path.join(path.dirname(run.dir), from));
  } catch (error) {
    return { unreadable: error instanceof Error ? error.message : String(error) };
  }
}

export function auditEvidence(run: RunEvidence, options: AuditOptions = {}): AuditResult {
  const checks = (options.checks ?? CHECKS).map((check): CheckResult => {
    let outcome;
    try {
      outcome = check.run({
        run,
        trustedKey: options.trustedKey,
        requireSignature: options.requireSignature,
        resumed: options.resumed,
        children: options.children,
      });
    } catch (error) {
      // A check that throws met evidence it could not read: said, never hidden.
      outcome = {
        verdict: 'inconclusive' as const,
        detail: `the check could not read the evidence: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    return {
      id: check.id,
      title: check.title,
      clauses: check.clauses,
      ...outcome,
      where: outcome.where ?? [],
    };
  });
  const counts: Record<Verdict, number> = {
    pass: 0,
    'not-applicable': 0,
    warn: 0,
    fail: 0,
    inconclusive: 0,
  };
  for (const c of checks) counts[c.verdict] += 1;
  const kind = runKindOf(run);
  const entries = (options.ledger ?? []).filter((e) => e.kinds.includes(kind));
  const expectedIds = new Set(entries.map((e) => e.check));
  const expected = checks
    .filter((c) => c.verdict === 'fail' && expectedIds.has(c.id))
    .map((c) => c.id);
  const disappeared = entries
    .filter((e) => checks.find((c) => c.id === e.check)?.verdict !== 'fail')
    .map((e) => e.check);
  const failing = checks.filter(
    (c) =>
      (c.verdict === 'fail' && !expectedIds.has(c.id)) ||
      (options.strict === true && (c.verdict === 'warn' || c.verdict === 'inconclusive')),
  );
  return {
    schema: AUDIT_SCHEMA,
    runId: run.runId,
    dir: run.dir,
    checks,
    counts,
    expected,
    disappeared,
    ok: failing.length === 0 && disappeared.length === 0,
  };
}

export type RunKind = 'command' | 'agent' | 'network';

/** The kind a ledger entry names: a run with a network posture is `network` whatever else it is. */
export function runKindOf(run: RunEvidence): RunKind {
  if (run.events.some((e) => e.type === 'egress_ready')) return 'network';
  return run.events.some((e) => e.type === 'run_created' && e.data.kind === 'agent')
    ? 'agent'
    : 'command';
}
