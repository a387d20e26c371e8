// `cfh runs prune --older-than DURATION [--keep N] [--dry-run]` and
// `cfh runs export RUN_ID --format otlp-json [--out FILE|-]` (stdout by default: output-target.ts).
import { loadRunEvidence } from '../../evidence/audit/run-evidence.js';
import { writeFileAtomic } from '../../evidence/atomic-file.js';
import { runToOtlp } from '../../evidence/export/otlp.js';
import { parseDuration, pruneRuns } from '../../evidence/retention.js';
import { CFH_VERSION } from '../../version.js';
import { keyPaths, loadTrustedKey } from '../../evidence/signing.js';
import { verifyEvidence } from '../../evidence/verify-run.js';
import { ConfigError } from '../../errors.js';
import type { CliDeps } from '../deps.js';
import { outputTarget, writeStdout } from '../output-target.js';
import { reportFailure } from '../report-failure.js';
import { resolveRunDir } from '../../evidence/runs-index.js';

export async function runsPruneCommand(
  args: {
    olderThan?: string | undefined;
    keep?: string | undefined;
    dryRun: boolean;
    json: boolean;
    artifactRoot?: string | undefined;
  },
  deps: CliDeps,
): Promise<number> {
  try {
    if (args.olderThan === undefined)
      throw new ConfigError(
        'missing_older_than',
        'runs prune: --older-than DURATION is required (7d, 12h, 30m)',
        { field: '--older-than' },
      );
    const olderThanMs = parseDuration(args.olderThan, '--older-than');
    const keep = args.keep === undefined ? 0 : Number(args.keep);
    if (!Number.isInteger(keep) || keep < 0)
      throw new ConfigError(
        'invalid_keep',
        `--keep: '${String(args.keep)}' is not a whole number`,
        { field: '--keep', value: String(args.keep) },
      );
    const entries = await pruneRuns(args.artifactRoot ?? deps.env.artifactRoot, {
      olderThanMs,
      keep,
      dryRun: args.dryRun,
    });
    if (args.json) deps.printer.json(entries);
    else {
      for (const e of entries)
        deps.printer.out(
          `${e.action.padEnd(12)} ${e.runId}${e.detail === undefined ? '' : ` (${e.detail})`}`,
        );
      const n = entries.filter((e) => e.action === 'removed' || e.action === 'would-remove').length;
      deps.printer.out(`${args.dryRun ? 'would remove' : 'removed'} ${n} run(s)`);
    }
    return entries.some((e) => e.action === 'failed') ? 1 : 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}

export async function runsExportCommand(
  args: {
    runId: string;
    format: string;
    out?: string | undefined;
    artifactRoot?: string | undefined;
  },
  deps: CliDeps,
): Promise<number> {
  try {
    if (args.format !== 'otlp-json')
      throw new ConfigError('invalid_format', `--format: '${args.format}' is not otlp-json`, {
        field: '--format',
        value: args.format,
      });
    const dir = resolveRunDir(args.runId, args.artifactRoot ?? deps.env.artifactRoot);
    const run = await loadRunEvidence(dir);
    const target = outputTarget({
      out: args.out,
      what: 'OTLP JSON',
      runDir: dir,
      stdout: deps.printer.stdout,
      insideCode: 'export_inside_run',
    });
    const body = `${JSON.stringify(runToOtlp(run, CFH_VERSION))}\n`;
    if (target.kind === 'file') await writeFileAtomic(target.path, body, 0o640);
    else await writeStdout(deps.printer.stdout, body);
    // Exported as recorded; whether the record holds is said, by the one verifier.
    const verification = verifyEvidence(
      run,
      await loadTrustedKey(keyPaths(deps.env.keyDir).publicKey),
    );
    if (!verification.ok)
      deps.printer.err(
        `cfh: run ${run.runId}: its evidence does not verify (${verification.problems.slice(0, 3).join('; ')}); exported as recorded`,
      );
    // The file's name on stdout only when stdout did not take the document itself.
    if (target.kind === 'file') deps.printer.out(target.path);
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: false });
  }
}
