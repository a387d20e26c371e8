// `cfh runs report RUN_ID [--out FILE|-]`: the run as one self-contained HTML page (no
// external asset, no script), with the audit's verdicts. Written to FILE, by default to
// stdout (a terminal refused), as `runs export` is (output-target.ts): never into the
// current directory unasked, never into the run directory.
import { auditRunEvidence } from '../../evidence/audit/audit.js';
import { loadRunEvidence } from '../../evidence/audit/run-evidence.js';
import { writeFileAtomic } from '../../evidence/atomic-file.js';
import { renderRunReport } from '../../evidence/report/render-report.js';
import { keyPaths, loadTrustedKey } from '../../evidence/signing.js';
import { ConfigError } from '../../errors.js';
import type { CliDeps } from '../deps.js';
import { outputTarget, writeStdout } from '../output-target.js';
import { reportFailure } from '../report-failure.js';
import { resolveRunDir } from '../../evidence/runs-index.js';

export async function runsReportCommand(
  args: {
    runId: string;
    out?: string | undefined;
    artifactRoot?: string | undefined;
    json: boolean;
  },
  deps: CliDeps,
): Promise<number> {
  try {
    const dir = resolveRunDir(args.runId, args.artifactRoot ?? deps.env.artifactRoot);
    if (args.json && (args.out === undefined || args.out === '-'))
      throw new ConfigError(
        'json_needs_out',
        'runs report --json: give --out FILE (stdout carries the JSON summary, not the page)',
        { field: '--out' },
      );
    const run = await loadRunEvidence(dir);
    const target = outputTarget({
      out: args.out,
      what: 'the HTML report',
      runDir: dir,
      stdout: deps.printer.stdout,
      insideCode: 'report_inside_run',
    });
    const trustedKey = await loadTrustedKey(keyPaths(deps.env.keyDir).publicKey);
    // With the runs it names, as `cfh audit` reads them: its children, the run it resumes.
    const audit = await auditRunEvidence(run, { trustedKey });
    const page = await renderRunReport(run, audit);
    if (target.kind === 'stdout') {
      await writeStdout(deps.printer.stdout, page);
      return 0;
    }
    await writeFileAtomic(target.path, page, 0o644);
    if (args.json)
      deps.printer.json({
        runId: run.runId,
        file: target.path,
        bytes: Buffer.byteLength(page),
        auditOk: audit.ok,
      });
    else deps.printer.out(target.path);
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}
