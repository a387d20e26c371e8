// `cfh runs diff RUN_ID` (the patch a draft run left) and `cfh runs apply RUN_ID` (its
// commit to the host, approved on a terminal or with --yes; governance extension, "Draft
// vs commit policy").
import { CfhError, ConfigError, WorkspaceError } from '../../errors.js';
import { createHash } from 'node:crypto';
import {
  applyRun,
  osApprover,
  readRunPatch,
  type ApplyPlan,
  type RunPatch,
} from '../../engine/draft/apply-run.js';
import { RUN_FILES } from '../../evidence/run-directory.js';
import { READ_CAPS, withRunReader } from '../../evidence/run-reader.js';
import { keyPaths, loadTrustedKey } from '../../evidence/signing.js';
import { showRun } from '../../evidence/runs-index.js';
import { gitMode } from '../../workspace/tree.js';
import { changeOp, type PatchChange, type PatchSide } from '../../workspace/patch.js';
import { gateHostObeyed, readHostHeld } from '../../workspace/host-obeyed-gate.js';
import { hostRoot } from '../../workspace/host-root.js';
import { isHostObeyed } from '../../host-obeyed.js';
import { MAX_DIFF_BYTES, quote, renderPatch } from '../../workspace/patch-text.js';
import { z } from 'zod';
import type { CliDeps } from '../deps.js';
import { reportFailure } from '../report-failure.js';
import { shellWord } from '../run-said.js';

export async function runsDiffCommand(
  args: {
    runId: string;
    json: boolean;
    binary?: boolean | undefined;
    hostObeyed?: readonly string[] | undefined;
    artifactRoot?: string | undefined;
  },
  deps: CliDeps,
): Promise<number> {
  try {
    const trustedKey = await loadTrustedKey(keyPaths(deps.env.keyDir).publicKey);
    const detail = await showRun(args.artifactRoot ?? deps.env.artifactRoot, args.runId, {
      trustedKey,
    });
    const run = await readRunPatch(detail);
    const ok = detail.verification.ok;
    const named = args.hostObeyed ?? [];
    if (named.length > 0 && args.binary !== true)
      throw new ConfigError(
        'host_obeyed_without_binary',
        '--host-obeyed names what --binary carries; the diff and --json show every change',
        { field: '--host-obeyed' },
        'add --binary, or drop --host-obeyed',
      );
    // Class 9: what `runs apply` holds back is said wherever the patch is shown, and the
    // patch `git apply` takes (`--binary`) leaves it out unless named, as `runs apply` does.
    // The host workspace's repository, as it is now (a host workspace gone holds nothing).
    const host = await hostRoot(run.hostWorkspace)
      .then((root) => readHostHeld(root, deps.signal))
      .catch(() => ({}));
    const gate = gateHostObeyed(args.runId, run.patch.changes, named, host);
    if (args.json)
      deps.printer.json({
        ...run.patch,
        heldBack: gate.heldBack,
        verification: detail.verification,
      });
    else if (args.binary === true) {
      const missing = await printGitPatch(
        { ...run, patch: { ...run.patch, changes: [...gate.changes] } },
        detail.dir,
        deps,
      );
      if (missing.length > 0) {
        deps.printer.err(
          `cfh: ${missing.length} change(s) left without their contents (${missing.slice(0, 5).map(quote).join(', ')}): their old contents were not kept or a bound was reached; git apply cannot take them, cfh runs apply can`,
        );
        return 1;
      }
    } else {
      const diff = await withRunReader(detail.dir, (r) =>
        r.read(RUN_FILES.patchDiff, READ_CAPS.diff),
      );
      if (!diff.ok)
        throw new WorkspaceError('evidence_unreadable', `run ${args.runId}: ${diff.problem}`);
      deps.printer.document(diff.value);
    }
    if (!args.json && gate.heldBack.length > 0) deps.printer.err(heldBackLine(args, gate.heldBack));
    if (!ok) {
      deps.printer.err(
        `cfh: the evidence of run ${args.runId} does not verify (cfh runs show ${args.runId}); this patch cannot be applied`,
      );
    }
    return ok ? 0 : 1;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}

export async function runsApplyCommand(
  args: {
    runId: string;
    yes: boolean;
    json: boolean;
    threeWay?: boolean | undefined;
    hostObeyed?: readonly string[] | undefined;
    artifactRoot?: string | undefined;
  },
  deps: CliDeps,
): Promise<number> {
  try {
    const outcome = await applyRun({
      artifactRoot: args.artifactRoot ?? deps.env.artifactRoot,
      runId: args.runId,
      threeWay: args.threeWay === true,
      hostObeyed: args.hostObeyed ?? [],
      signal: deps.signal,
      trustedKey: await loadTrustedKey(keyPaths(deps.env.keyDir).publicKey),
      approve: async (plan) => {
        // The summary goes to stderr under --json, so stdout stays one JSON document.
        const say = (line: string): void => {
          if (args.json) deps.printer.err(line);
          else deps.printer.out(line);
        };
        for (const line of summaryLines(plan)) say(line);
        if (args.yes) return osApprover('cli-flag-yes');
        const terminal = deps.terminal;
        if (terminal?.interactive !== true) {
          throw new CfhError(
            'approval_required',
            `run ${plan.runId}: applying needs an approval: answer on a terminal, or pass --yes`,
            { boundary: 'workspace', exitCode: 1 },
          );
        }
        const answer = await terminal.ask(
          `Apply these changes to ${plan.hostWorkspace}? [y/N] `,
          deps.signal,
        );
        return /^(y|yes)$/i.test(answer.trim()) ? osApprover('cli-terminal-prompt') : undefined;
      },
    });
    if (args.json) deps.printer.json({ status: 'applied', ...outcome });
    else {
      deps.printer.out(
        `applied ${outcome.applied.length} change(s) to ${outcome.hostWorkspace}; recorded as event ${outcome.event.seq} of run ${outcome.runId}${outcome.heldBack.length === 0 ? '' : `; ${outcome.heldBack.length} held back, not written (paths your tools obey: ${outcome.heldBack.join(', ')})`}`,
      );
      for (const left of outcome.leftovers) deps.printer.err(`cfh: could not remove ${left}`);
    }
    return 0;
  } catch (error) {
    return failed(error, deps, args.json);
  }
}

/**
 * `runs diff --binary`: the patch re-made from the run's kept contents (new contents and
 * baselines, patch/blobs, each read through the bounded reader and checked against its
 * digest), with binary changes as git binary patches, so `git apply` takes it whole.
 * Returns the changes it could not show.
 */
async function printGitPatch(run: RunPatch, dir: string, deps: CliDeps): Promise<string[]> {
  const rendered = await withRunReader(dir, (r) =>
    renderPatch(
      run.patch.changes,
      async (c, side) => {
        const s = side === 'before' ? c.before : c.after;
        if (s === null) return Buffer.alloc(0);
        const why = side === 'before' ? 'its old contents were not kept' : 'not kept';
        if (s.sha256 === undefined) return { unavailable: `${quote(c.path)}: ${why}` };
        const read = await r.read(`${RUN_FILES.blobs}/${s.sha256}`, s.size ?? 0);
        if (!read.ok) return { unavailable: `${quote(c.path)}: ${why}` };
        if (createHash('sha256').update(read.value).digest('hex') !== s.sha256)
          return { unavailable: `${quote(c.path)}: the kept contents do not match their digest` };
        return read.value;
      },
      MAX_DIFF_BYTES,
      { gitBinary: true },
    ),
  );
  deps.printer.document(Buffer.from(rendered.text, 'utf8'));
  return [...rendered.missing];
}

/** One line a change: what `runs apply` will do, and what it will not. */
export function summaryLines(plan: ApplyPlan): string[] {
  const s = plan.patch.summary;
  const lines = [
    `run        ${plan.runId} (${plan.status}, ${plan.terminalReason})`,
    `workspace  ${plan.hostWorkspace}`,
    `changes    ${s.added} added, ${s.modified} modified, ${s.removed} removed, ${s.mode} mode; ${s.notApplied} listed, not applied`,
  ];
  for (const c of plan.applicable) lines.push(`  ${changeLine(c)}`);
  for (const m of plan.merged)
    lines.push(
      `  merged     ${quote(m.path)}: the host's changes and the run's (--3way), sha256:${m.mergedSha256.slice(0, 12)}`,
    );
  for (const c of plan.notApplied) lines.push(`  ${changeLine(c)}  (not applied: ${c.note ?? ''})`);
  for (const c of plan.heldBack) lines.push(`  ${changeLine(c)}  (${c.note ?? ''})`);
  if (plan.heldBack.length > 0)
    lines.push(
      `held back  ${String(plan.heldBack.length)} change(s) at paths your tools obey; approving does not write them: name each on this apply with --host-obeyed PATH (a patch is applied once)`,
    );
  for (const u of plan.patch.unsupported)
    lines.push(`  ?  ${quote(u.path)}  (not applied: ${u.reason})`);
  return lines;
}

function changeLine(c: PatchChange): string {
  const letter = { added: 'A', modified: 'M', removed: 'D', mode: 'X', symlink: 'L' }[c.kind];
  const op = changeOp(c);
  const mode =
    op.op === 'mode' && c.before !== null && c.after !== null
      ? `${gitMode(c.before)} -> ${gitMode(c.after)}`
      : op.op === 'retype'
        ? `${sideText(c.before, c)} replaced by ${sideText(c.after, c)}`
        : sideText(c.after ?? c.before, c);
  // A path a host tool obeys that this apply writes, because it was named (class 9).
  const meta = c.applicable && isHostObeyed(c.path) ? '  [a path your tools obey: named]' : '';
  return `${letter}  ${quote(c.path)}  ${mode}${meta}`;
}

function sideText(side: PatchSide | null, c: PatchChange): string {
  if (side === null) return '';
  if (side.type === 'directory') return 'directory';
  if (side.type === 'symlink') return `symlink -> ${quote(side.target ?? '')}`;
  return `${gitMode(side)} sha256:${(side.sha256 ?? '').slice(0, 12)} ${String(side.size)} bytes${c.binary === true ? ' (binary)' : ''}`;
}

/** `runs diff`: what `runs apply` would hold back, and how to write it anyway. */
function heldBackLine(
  args: { readonly runId: string; readonly artifactRoot?: string | undefined },
  held: readonly string[],
): string {
  const root =
    args.artifactRoot === undefined ? '' : ` --artifact-root ${shellWord(args.artifactRoot)}`;
  return `cfh: ${String(held.length)} change${held.length === 1 ? '' : 's'} held back from cfh runs apply (paths your tools obey): ${held.join(', ')}; apply them with cfh runs apply ${args.runId}${root} --host-obeyed PATH for each`;
}

function failed(error: unknown, deps: CliDeps, json: boolean): number {
  // The conflicting hunks, as diff3 shows them, before the one-line refusal.
  if (!json && error instanceof CfhError && error.code === 'merge_conflict') {
    const hunks = ConflictDetails.safeParse(error.details);
    if (hunks.success) for (const line of hunks.data.hunks) deps.printer.err(line);
  }
  return reportFailure(error, deps, { json });
}

const ConflictDetails = z.object({ hunks: z.array(z.string()) });
