// `cfh runs list` and `cfh runs show RUN_ID`: run evidence read back. A run whose state is
// not terminal and whose writer is gone is shown `abandoned`, whatever state it stopped in
// (created, running, or none yet). Every string printed here came from a file a sandbox or
// a model may have chosen; the printer escapes it (print.ts), --json prints it exact.
import { TERMINAL_STATES, listRuns, showRun, type RunSummary } from '../../evidence/runs-index.js';
import { Report, ReportCfc, ResourcesRecord } from '../../evidence/schema/report.js';
import { Snapshot, SnapshotAssurance, SnapshotCfc } from '../../evidence/schema/snapshot.js';
import { z } from 'zod';
import { humanResources } from '../../evidence/units.js';
import { keyPaths, loadTrustedKey } from '../../evidence/signing.js';
import {
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_START,
  ownerStatus,
  type OwnerStatus,
} from '../../sandbox/owner.js';
import type { CliDeps } from '../deps.js';
import { isToolName } from '../../tools/contract.js';
import { reportFailure } from '../report-failure.js';

/**
 * Whether the cfh writing a run still runs. With its identity (state.json's writer or the
 * snapshot's caller: pid, process start time, host) the process table of this host
 * decides; without it, or for another host's writer, the directory lock's heartbeat does.
 */
export function writerStatus(run: RunSummary): OwnerStatus {
  const c = run.caller;
  if (c?.pid !== undefined && c.start !== undefined && c.host !== undefined) {
    const status = ownerStatus({
      [LABEL_OWNER_PID]: String(c.pid),
      [LABEL_OWNER_START]: c.start,
      [LABEL_OWNER_HOST]: c.host,
    });
    if (status !== 'foreign-host') return status;
    return run.locked ? 'foreign-host' : 'gone';
  }
  return run.locked ? 'alive' : 'gone';
}

/** The run with `writer` added while it is not terminal. */
function withWriter(run: RunSummary): RunSummary & { writer?: OwnerStatus } {
  // A run whose directory could not be read has no writer to judge: shown unreadable.
  return TERMINAL_STATES.includes(run.state) || run.state === 'unreadable'
    ? run
    : { ...run, writer: writerStatus(run) };
}

/** The state as shown: `abandoned` for a run in progress whose writer is gone. */
function shownState(run: RunSummary & { writer?: OwnerStatus }): string {
  return run.writer === 'gone' ? 'abandoned' : run.state;
}

export async function runsListCommand(
  args: { json: boolean; artifactRoot?: string | undefined },
  deps: CliDeps,
): Promise<number> {
  const runs = (await listRuns(args.artifactRoot ?? deps.env.artifactRoot)).map(withWriter);
  if (args.json) deps.printer.json(runs);
  else
    for (const r of runs)
      deps.printer.out(
        `${r.runId}  ${shownState(r).padEnd(9)} ${String(r.exitCode ?? '').padEnd(4)} ${r.profile ?? ''}  ${r.kind === 'agent' ? '[agent run]' : (r.command ?? []).join(' ')}${r.unreadable === undefined ? '' : `  [unreadable: ${r.unreadable.join('; ')}]`}`,
      );
  return 0;
}

export async function runsShowCommand(
  args: { runId: string; json: boolean; artifactRoot?: string | undefined },
  deps: CliDeps,
): Promise<number> {
  try {
    // Verified as `cfh audit` verifies: with a trusted key configured, its signature too.
    const run = await showRun(args.artifactRoot ?? deps.env.artifactRoot, args.runId, {
      trustedKey: await loadTrustedKey(keyPaths(deps.env.keyDir).publicKey),
    });
    const summary = withWriter(run.summary);
    if (args.json) {
      const cfc = ReportCfc.safeParse(run.report?.cfc);
      deps.printer.json({
        ...run,
        ...(summary.writer === undefined ? {} : { writer: summary.writer }),
        // report.cfc, at the top as the CFC line shows it; null for a run before CFC.
        cfc: cfc.success ? cfc.data : null,
      });
      return 0;
    }
    const p = deps.printer;
    const snap = run.snapshot ?? {};
    const image = snap.image as { ref?: string; id?: string } | undefined;
    const spec = snap.containerSpec as
      | {
          user?: string;
          mounts?: { source: string; target: string; mode: string }[];
          seccomp?: { sha256?: string };
        }
      | undefined;
    p.out(`run        ${run.runId}`);
    p.out(`dir        ${run.dir}`);
    if (summary.writer === 'gone') {
      p.out(`state      abandoned (stopped at ${summary.state}; the cfh that wrote it is gone)`);
    } else {
      p.out(
        `state      ${summary.state} (${JSON.stringify(run.state?.terminalReason ?? '')}) exit ${JSON.stringify(run.state?.exitCode ?? null)}`,
      );
    }
    if (snap.kind === 'agent') printAgent(p, snap, run.report, run.events);
    else p.out(`command    ${JSON.stringify(snap.command)}`);
    p.out(`profile    ${String((snap.profile as { name?: string } | undefined)?.name)}`);
    p.out(`image      ${String(image?.ref)} ${String(image?.id)}`);
    p.out(`user       ${String(spec?.user)}   seccomp sha256:${String(spec?.seccomp?.sha256)}`);
    for (const m of spec?.mounts ?? []) p.out(`mount      ${m.source} -> ${m.target} (${m.mode})`);
    printHostObeyed(p, snap, run.report);
    printAssuranceAndResources(p, snap, run.report);
    p.out(`cfc        ${cfcLine(snap, run.report)}`);
    printDraft(p, snap, run.events);
    printChildren(p, run.report);
    if (!run.eventLog) p.out('events     none: the writer stopped before it began events.jsonl');
    const v = run.verification;
    p.out(`evidence   ${v.ok ? 'verified' : 'BROKEN'} (${run.events.length} events)`);
    for (const line of v.problems) p.out(`  BROKEN       ${line}`);
    for (const line of v.verified) p.out(`  verified     ${line}`);
    for (const line of v.notVerified) p.out(`  not verified ${line}`);
    const network = snap.network as
      { mode?: string; allow?: string[]; deny?: string[] } | undefined;
    p.out(
      `network    ${String(network?.mode)} allow [${(network?.allow ?? []).join(', ')}] deny [${(network?.deny ?? []).join(', ')}]`,
    );
    const egress = run.events
      .filter((e) => e.type === 'egress')
      .map((e) => e.data as Record<string, unknown>);
    if (egress.length > 0) {
      const allowed = egress.filter((e) => e.allowed === true).length;
      p.out(
        `egress     ${egress.length} attempt(s): ${allowed} allowed, ${egress.length - allowed} denied`,
      );
      for (const e of egress) {
        const dest = [e.name, e.address].filter((x) => typeof x === 'string').join(' ');
        const port = typeof e.port === 'number' ? `:${e.port}` : '';
        p.out(
          `  ${e.allowed === true ? 'allow' : 'deny '} ${String(e.protocol).padEnd(4)} ${dest}${port} ${String(e.reason)} out ${String(e.bytesOut)} in ${String(e.bytesIn)}`,
        );
      }
    }
    for (const e of run.events) p.out(`  ${String(e.seq).padStart(3)} ${e.ts} ${e.type}`);
    return v.ok ? 0 : 1;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}

/** The child runs (AH-DEL-5) report.json lists: id, profile, terminal state, what came back. */
function printChildren(p: CliDeps['printer'], report: Record<string, unknown> | undefined): void {
  const children = Report.shape.children.safeParse(report?.children);
  if (!children.success || children.data === undefined) return;
  for (const c of children.data)
    p.out(`child      ${c.childId} ${c.profile} ${c.status} ${c.outcome} (${c.dir})`);
}

/** The assurance level and its basis or reasons; what the containers used (report.json). */
function printAssuranceAndResources(
  p: CliDeps['printer'],
  snap: Record<string, unknown>,
  report: Record<string, unknown> | undefined,
): void {
  const a = SnapshotAssurance.safeParse(snap.assurance);
  if (a.success) {
    const why =
      a.data.level === 'reduced'
        ? a.data.notes.join('; ')
        : (a.data.basis ?? []).map((b) => b.detail).join('; ');
    p.out(`assurance  ${a.data.level}${why === '' ? '' : `: ${why}`}`);
  }
  const r = ResourcesRecord.safeParse(report?.resources);
  if (!r.success) return;
  if ('unavailable' in r.data) {
    p.out(`resources  not recorded: ${r.data.unavailable}`);
    return;
  }
  p.out(`resources  ${humanResources(r.data.total)} (${r.data.source}, all containers)`);
  for (const c of r.data.containers) p.out(`  ${c.name}  ${humanResources(c)}`);
}

/** The CFC line (AH-CFC-14/15): the mode, whether it is enforcement, what it decided. */
export function cfcLine(
  snap: Record<string, unknown>,
  report: Record<string, unknown> | undefined,
): string {
  const r = ReportCfc.safeParse(report?.cfc);
  const s = SnapshotCfc.safeParse(snap.cfc);
  if (!r.success)
    return s.success
      ? `${s.data.mode} (snapshot; the report records no cfc)`
      : 'not recorded (a run from before CFC)';
  const c = r.data;
  const kind = c.enforced
    ? 'enforced'
    : c.mode === 'observe'
      ? 'diagnostic, not enforcement'
      : 'no CFC claim';
  const f = c.flows;
  const declassified =
    (c.declassified ?? 0) > 0 ? `; ${c.declassified ?? 0} declassified by the profile` : '';
  const carried = (c.carried ?? 0) > 0 ? `; ${c.carried ?? 0} context(s) carried in` : '';
  // A label earlier runs' writes raised (cfc/written-labels.ts): why a read was opaque.
  const raised = s.success ? s.data.mounts.filter((m) => m.labelSource === 'written') : [];
  const written =
    raised.length === 0
      ? ''
      : `; raised by what earlier runs wrote: ${raised.map((m) => m.target).join(', ')} (cfh labels)`;
  return `${c.mode} (${kind}); flows ${f.allowed} allowed, ${f.denied} denied, ${f.wouldDeny} would-deny, ${f.endorsed} endorsed; ${c.handles} handle(s), ${c.opaque} opaque${declassified}${carried}${written}`;
}

/** Draft runs: the host workspace, the patch's summary, and whether it was applied. */
function printDraft(
  p: CliDeps['printer'],
  snap: Record<string, unknown>,
  events: readonly { seq: number; type: string; data: Record<string, unknown> }[],
): void {
  const ws = snap.workspace as { mode?: string; hostPath?: string } | undefined;
  if (ws?.mode !== 'draft') return;
  const written = events.find((e) => e.type === 'patch_written')?.data.summary as
    Record<string, number> | undefined;
  const patch =
    written === undefined
      ? 'no patch'
      : `patch ${written.added} added, ${written.modified} modified, ${written.removed} removed, ${written.mode} mode, ${written.notApplied} not applicable`;
  const applied = events.find((e) => e.type === 'applied');
  const approver = applied?.data.approver as { user?: string; surface?: string } | undefined;
  // Class 9: what an apply holds back unless named, as the patch recorded it, or as the
  // apply left it.
  const held = StringList.safeParse(
    applied === undefined
      ? events.find((e) => e.type === 'patch_written')?.data.heldBack
      : (applied.data.heldBack ?? []),
  );
  const heldText =
    !held.success || held.data.length === 0
      ? ''
      : applied === undefined
        ? `; ${String(held.data.length)} held back (${held.data.join(', ')}): paths your tools obey, written only when named (cfh runs apply ${String(snap.runId)} --host-obeyed PATH)`
        : `; ${String(held.data.length)} held back, not written (${held.data.join(', ')})`;
  p.out(
    `draft      host ${String(ws.hostPath)}; ${patch}${heldText}; ${applied === undefined ? 'not applied (cfh runs diff / runs apply)' : `applied (event ${applied.seq}, ${String(approver?.user)}, ${String(approver?.surface)})`}`,
  );
}

const StringList = z.array(z.string());

/**
 * Class 9 (src/host-obeyed.ts): whether the paths a host tool obeys were held read-only in
 * the rw mounts, and what the run created or changed of them where nothing held them.
 */
function printHostObeyed(
  p: CliDeps['printer'],
  snap: Record<string, unknown>,
  report: Record<string, unknown> | undefined,
): void {
  const s = Snapshot.shape.hostObeyed.safeParse(snap.hostObeyed);
  if (!s.success || s.data === undefined) return;
  if (s.data.mode === 'rw')
    p.out('host-obeyed rw: the sandbox may write them (--host-obeyed rw, or the profile)');
  else if (s.data.guarded.length > 0)
    p.out(
      `host-obeyed ro: ${s.data.readOnly.length === 0 ? `nothing to hold at the top of ${s.data.guarded.join(', ')}` : `held read-only ${s.data.readOnly.join(', ')}`}`,
    );
  const r = Report.shape.hostObeyed.safeParse(report?.hostObeyed);
  if (!r.success || r.data === undefined || r.data.changed === 0) return;
  p.out(
    `  ${s.data.mode === 'ro' ? 'WARNING ' : ''}created or changed by the run: ${r.data.paths.join(', ')}${r.data.changed > r.data.paths.length ? ` and ${String(r.data.changed - r.data.paths.length)} more` : ''}${r.data.complete ? '' : ' (the end walk stopped at its bound)'}`,
  );
}

/** The agent-run lines of `runs show`: the model, the tool surface, each call, the budget. */
function printAgent(
  p: CliDeps['printer'],
  snap: Record<string, unknown>,
  report: Record<string, unknown> | undefined,
  events: readonly { type: string; data: unknown }[],
): void {
  const model = snap.model as
    { adapter?: string; route?: Record<string, string>; languageModel?: boolean } | undefined;
  const which =
    model?.languageModel === false
      ? 'scripted replay, no language model'
      : `${String(model?.route?.model)} via ${String(model?.route?.credential)}`;
  p.out(`agent      ${String(model?.adapter)} (${which})`);
  const box = snap.toolContainer as { lifetime?: string } | undefined;
  p.out(
    `tools      ${((snap.tools as string[] | undefined) ?? []).join(', ')}; containers ${String(box?.lifetime)}`,
  );
  // Host tools apart from the sandbox's (AH-TOOL-7): which entries, of which kind.
  const host = (snap.hostTools as { name?: string; kind?: string }[] | undefined) ?? [];
  if (host.length > 0)
    p.out(`host tools ${host.map((h) => `${String(h.name)} (${String(h.kind)})`).join(', ')}`);
  // Planning mode and approvals (governance extension): how this run could change anything.
  const plan = report?.plan as { sha256?: string } | null | undefined;
  const from = snap.fromPlan as { runId?: string; sha256?: string } | null | undefined;
  p.out(
    `mode       ${snap.mode === 'plan' ? 'plan' : 'run'}${plan?.sha256 === undefined ? '' : `; plan.md sha256:${plan.sha256}`}${from?.runId === undefined ? '' : `; executes the plan of ${from.runId} (sha256:${String(from.sha256)})`}`,
  );
  const asks = snap.approvals as
    | { interactive?: boolean; preApprovedRules?: string[]; file?: { path?: string } | null }
    | undefined;
  if (asks !== undefined) {
    p.out(
      `approvals  ${asks.interactive === true ? 'prompt on the terminal' : 'no prompt'}; rules [${(asks.preApprovedRules ?? []).join(', ')}]; file ${asks.file?.path ?? 'none'}`,
    );
  }
  // One line a call, in call order, with its last word: executed, rejected, denied, not run.
  const calls = new Map<string, string>();
  const name = (d: Record<string, unknown>): string => {
    const tool = String(d.tool);
    return isToolName(tool) ? tool : JSON.stringify(tool);
  };
  for (const e of events) {
    const d = e.data as Record<string, unknown>;
    if (typeof d.callId !== 'string') continue;
    const attempts = Number(d.attempts) > 1 ? ` (${String(d.attempts)} attempts)` : '';
    const line =
      e.type === 'tool_executed'
        ? `${String(d.status)} exit ${String(d.exitCode)} ${typeof d.durationMs === 'number' ? d.durationMs : '-'} ms${attempts}`
        : e.type === 'tool_rejected'
          ? `rejected (${String(d.reason)})`
          : e.type === 'tool_denied'
            ? `denied (${String(d.rule)})`
            : e.type === 'tool_call_aborted'
              ? `aborted (${String(d.reason)})`
              : undefined;
    if (line !== undefined) calls.set(d.callId, `${name(d)} ${line}`);
  }
  for (const id of [...calls.keys()].sort()) p.out(`  ${id} ${String(calls.get(id))}`);
  const budget = report?.budget as { budget?: string; limit?: number; used?: number } | undefined;
  if (budget !== undefined)
    p.out(
      `budget     ${String(budget.budget)}: used ${String(budget.used)} of ${String(budget.limit)}`,
    );
}
