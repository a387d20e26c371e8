// `cfh runs report RUN_ID [--out FILE]`: the run as one self-contained HTML page (no
// external asset, no script), with the audit's verdicts. Written to FILE, by default
// `<run-id>.html` in the current directory: never into the run directory, whose every file
// the chain accounts for.
import path from 'node:path';
import { auditEvidence } from '../../evidence/audit/audit.js';
import { loadRunEvidence } from '../../evidence/audit/run-evidence.js';
import { writeFileAtomic } from '../../evidence/atomic-file.js';
import { renderRunReport } from '../../evidence/report/render-report.js';
import { isWithin } from '../../sandbox/mount-policy.js';
import { keyPaths, loadTrustedKey } from '../../evidence/signing.js';
import { ConfigError } from '../../errors.js';
import type { CliDeps } from '../deps.js';
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
    const run = await loadRunEvidence(dir);
    const out = path.resolve(args.out ?? `${run.runId}.html`);
    if (isWithin(out, dir))
      throw new ConfigError(
        'report_inside_run',
        `--out: '${out}' is inside the run directory, whose files the chain accounts for`,
        { field: '--out', value: out },
      );
    const trustedKey = await loadTrustedKey(keyPaths(deps.env.keyDir).publicKey);
    const audit = auditEvidence(run, { trustedKey });
    const page = await renderRunReport(run, audit);
    await writeFileAtomic(out, page, 0o644);
    if (args.json)
      deps.printer.json({
        runId: run.runId,
        file: out,
        bytes: Buffer.byteLength(page),
        auditOk: audit.ok,
      });
    else deps.printer.out(out);
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}
