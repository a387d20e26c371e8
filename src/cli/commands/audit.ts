// `cfh audit RUN_ID|RUN_DIR [--json] [--strict] [--require-signature] [--expected FILE]
// [--public-key FILE]` and
// `cfh audit --manifest [--markdown]`: the operator's verifier. Exit 0 when nothing fails,
// 1 when something fails, 2 when the evidence cannot be read.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { auditRunDirectory, type AuditResult } from '../../evidence/audit/audit.js';
import { CHECKS } from '../../evidence/audit/checks.js';
import { loadLedger } from '../../evidence/audit/ledger.js';
import { loadManifest, manifestMarkdown, reconcile } from '../../evidence/audit/manifest.js';
import { isRunId } from '../../evidence/run-id.js';
import { keyPaths, loadTrustedKey } from '../../evidence/signing.js';
import { ArtifactError, CfhError, ConfigError, errorMessage } from '../../errors.js';
import type { CliDeps } from '../deps.js';

export const EXIT_AUDIT_FAILED = 1;
export const EXIT_EVIDENCE_UNREADABLE = 2;

export interface AuditArgs {
  readonly run?: string | undefined;
  readonly json: boolean;
  readonly strict: boolean;
  readonly manifest: boolean;
  readonly markdown: boolean;
  readonly expected?: string | undefined;
  readonly publicKey?: string | undefined;
  /** Every unsigned run fails, whenever it ran (integrity.signature, CFH-EVID-2). */
  readonly requireSignature?: boolean | undefined;
  readonly artifactRoot?: string | undefined;
}

/** A run id under the artifact root, or a path to a run directory. */
export function resolveRunDir(run: string, artifactRoot: string): string {
  if (isRunId(run) && !run.includes('/')) return path.join(artifactRoot, run);
  if (existsSync(run)) return path.resolve(run);
  throw new ConfigError('unknown_run', `'${run}' is neither a run id nor a run directory`, {
    field: 'run',
    value: run,
  });
}

export async function auditCommand(args: AuditArgs, deps: CliDeps): Promise<number> {
  if (args.manifest) return manifestCommand(args, deps);
  try {
    if (args.run === undefined)
      throw new ConfigError('missing_run', 'cfh audit: name a run id or a run directory', {
        field: 'run',
      });
    const dir = resolveRunDir(args.run, args.artifactRoot ?? deps.env.artifactRoot);
    const trustedKey = await loadTrustedKey(args.publicKey ?? keyPaths(deps.env.keyDir).publicKey);
    const result = await auditRunDirectory(dir, {
      trustedKey,
      strict: args.strict,
      requireSignature: args.requireSignature === true,
      ledger: args.expected === undefined ? [] : loadLedger(args.expected),
    });
    if (args.json) deps.printer.json(result);
    else printAudit(result, deps);
    return result.ok ? 0 : EXIT_AUDIT_FAILED;
  } catch (error) {
    const unreadable =
      error instanceof ArtifactError ||
      (error instanceof ConfigError && error.code === 'unknown_run');
    if (args.json)
      deps.printer.json({
        ok: false,
        error: {
          code: error instanceof CfhError ? error.code : 'internal_error',
          message: errorMessage(error),
        },
      });
    else deps.printer.err(`cfh audit: ${errorMessage(error)}`);
    return unreadable
      ? EXIT_EVIDENCE_UNREADABLE
      : error instanceof CfhError
        ? EXIT_EVIDENCE_UNREADABLE
        : EXIT_AUDIT_FAILED;
  }
}

const MARK: Record<string, string> = {
  pass: 'pass',
  'not-applicable': 'n/a ',
  warn: 'warn',
  fail: 'FAIL',
  inconclusive: 'inc.',
};

function printAudit(result: AuditResult, deps: CliDeps): void {
  const p = deps.printer;
  p.out(`audit ${result.runId} (${result.dir})`);
  for (const c of result.checks) {
    const expected = result.expected.includes(c.id) ? ' (expected: ledger)' : '';
    p.out(`${MARK[c.verdict] ?? c.verdict} ${c.id.padEnd(26)} ${c.clauses.join(' ')}${expected}`);
    p.out(`     ${c.detail}`);
    for (const w of c.where) p.out(`       at ${w}`);
  }
  for (const id of result.disappeared)
    p.out(`FAIL ledger: ${id} is listed as an expected failure, but did not fail`);
  const n = result.counts;
  p.out(
    `${result.ok ? 'ok' : 'FAILED'}: ${n.pass} pass, ${n.fail} fail, ${n.warn} warn, ${n.inconclusive} inconclusive, ${n['not-applicable']} not applicable`,
  );
}

function manifestCommand(args: AuditArgs, deps: CliDeps): number {
  const obligations = loadManifest();
  const rec = reconcile(obligations, CHECKS);
  if (args.markdown) deps.printer.text(manifestMarkdown(obligations, CHECKS));
  else if (args.json) deps.printer.json(rec);
  else {
    for (const row of rec.rows)
      deps.printer.out(
        `${row.obligation.id.padEnd(16)} ${row.obligation.status.padEnd(16)} ${row.checks.join(', ')}`,
      );
    for (const problem of rec.problems) deps.printer.out(`MISMATCH ${problem}`);
    deps.printer.out(
      rec.ok
        ? `reconciled: ${obligations.length} obligations, ${CHECKS.length} checks`
        : 'NOT reconciled',
    );
  }
  return rec.ok ? 0 : EXIT_AUDIT_FAILED;
}
