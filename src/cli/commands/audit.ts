// `cfh audit RUN_ID|RUN_DIR [--json] [--strict] [--require-signature] [--expected FILE]
// [--public-key FILE]` and
// `cfh audit --manifest [--markdown]`: the operator's verifier. Exit 0 when nothing fails,
// 1 when something fails, 2 when the evidence cannot be read.
import { auditRunDirectory, type AuditResult } from '../../evidence/audit/audit.js';
import { CHECKS } from '../../evidence/audit/checks.js';
import { loadLedger } from '../../evidence/audit/ledger.js';
import { loadManifest, reconcile } from '../../evidence/audit/manifest.js';
import { manifestBlocks } from '../../evidence/audit/manifest-doc.js';
import { resolveRunDir } from '../../evidence/runs-index.js';
import { keyPaths, loadTrustedKey } from '../../evidence/signing.js';
import { ConfigError } from '../../errors.js';
import type { CliDeps } from '../deps.js';
import { reportFailure } from '../report-failure.js';

export const EXIT_AUDIT_FAILED = 1;

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

export async function auditCommand(args: AuditArgs, deps: CliDeps): Promise<number> {
  if (args.manifest) return manifestCommand(args, deps);
  try {
    if (args.run === undefined)
      throw new ConfigError(
        'missing_run',
        'audit: no run named',
        { field: 'run' },
        'give a run id or a run directory (cfh runs list names them, cfh audit --help)',
      );
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
    // Evidence it cannot read, a run id that names no run: 2 (exit-status.ts).
    return reportFailure(error, deps, { json: args.json });
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
  const manifest = loadManifest();
  const { obligations } = manifest;
  const rec = reconcile(manifest, CHECKS);
  if (args.markdown)
    deps.printer.text(
      manifestBlocks(manifest, CHECKS)
        .map((b) => b.text)
        .join('\n\n'),
    );
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
