// Operator commands: capabilities, doctor, reap, runs list/show, image build.
import { describeCapabilities } from '../../engine/capabilities.js';
import { runDoctor } from '../../engine/doctor.js';
import { reapOrphans } from '../../engine/reaper.js';
import { listRuns, showRun, type RunCaller } from '../../evidence/runs-index.js';
import { buildImage, type BuildMethod } from '../../image/build.js';
import { loadRecipe } from '../../image/recipe.js';
import {
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_START,
  ownerStatus,
  type OwnerStatus,
} from '../../sandbox/owner.js';
import type { CliDeps } from '../deps.js';
import { ConfigError } from '../../errors.js';
import { isRunId } from '../../evidence/run-id.js';
import { reportFailure } from '../report-failure.js';
import { loadProfile } from '../../config/profile-loader.js';
import { checkHostTools } from '../../engine/host-doctor.js';
import { isToolName } from '../../tools/contract.js';

export function capabilitiesCommand(args: { profile?: string | undefined }, deps: CliDeps): number {
  try {
    const profile = args.profile === undefined ? undefined : loadProfile(args.profile).profile;
    deps.printer.json(describeCapabilities(profile));
    return 0;
  } catch (error) {
    return reportFailure(error, deps, true);
  }
}

export async function doctorCommand(
  args: { json: boolean; profile?: string | undefined },
  deps: CliDeps,
): Promise<number> {
  try {
    const profile = args.profile === undefined ? undefined : loadProfile(args.profile).profile;
    const checks = [
      ...(await runDoctor(deps.runtime(), deps.signal)),
      // AH-CAP-4: each host tool the profile declares, started and asked.
      ...(profile === undefined
        ? []
        : await checkHostTools(
            profile,
            deps.env.credentialSource,
            deps.env.hostProcessDir,
            deps.signal,
          )),
    ];
    const healthy = checks.every((c) => c.ok || !c.required);
    if (args.json) deps.printer.json({ healthy, checks });
    else {
      for (const c of checks)
        deps.printer.out(
          `${c.ok ? 'ok  ' : c.required ? 'FAIL' : 'warn'} ${c.name.padEnd(14)} ${c.detail}`,
        );
      deps.printer.out(healthy ? 'healthy' : 'unhealthy: a required dependency is missing');
    }
    return healthy ? 0 : 1;
  } catch (error) {
    return reportFailure(error, deps, args.json);
  }
}

export async function reapCommand(
  args: { dryRun: boolean; json: boolean; run: readonly string[] },
  deps: CliDeps,
): Promise<number> {
  try {
    const bad = args.run.find((id) => !isRunId(id));
    if (bad !== undefined) {
      throw new ConfigError('invalid_run_id', `--run: '${bad}' is not a run id`, {
        field: '--run',
        value: bad,
      });
    }
    const entries = await reapOrphans(deps.runtime(), {
      dryRun: args.dryRun,
      logger: deps.logger,
      signal: deps.signal,
      runIds: args.run.length === 0 ? undefined : args.run,
      hostProcessDir: deps.env.hostProcessDir,
    });
    if (args.json) deps.printer.json(entries);
    else {
      for (const e of entries)
        deps.printer.out(
          `${e.action.padEnd(12)} ${e.kind.padEnd(9)} ${e.name} (run ${e.runId}, owner ${e.owner})`,
        );
      const n = entries.filter((e) => e.action === 'removed' || e.action === 'would-remove').length;
      deps.printer.out(`${args.dryRun ? 'would remove' : 'removed'} ${n} object(s)`);
    }
    return entries.some((e) => e.action === 'failed') ? 1 : 0;
  } catch (error) {
    return reportFailure(error, deps, args.json);
  }
}

/** Whether the cfh a snapshot names (pid, start time, host) still runs. */
function writerStatus(caller: RunCaller | undefined): OwnerStatus {
  if (caller?.start === undefined) return 'gone';
  return ownerStatus({
    [LABEL_OWNER_PID]: String(caller.pid),
    [LABEL_OWNER_START]: caller.start,
    [LABEL_OWNER_HOST]: String(caller.host),
  });
}

export async function runsListCommand(
  args: { json: boolean; artifactRoot?: string | undefined },
  deps: CliDeps,
): Promise<number> {
  // A run still `running` whose cfh is gone was killed before it could finish its record.
  const runs = (await listRuns(args.artifactRoot ?? deps.env.artifactRoot)).map((r) =>
    r.state === 'running' ? { ...r, writer: writerStatus(r.caller) } : r,
  );
  if (args.json) deps.printer.json(runs);
  else
    for (const r of runs)
      deps.printer.out(
        `${r.runId}  ${('writer' in r && r.writer === 'gone' ? 'abandoned' : r.state).padEnd(9)} ${String(r.exitCode ?? '').padEnd(4)} ${r.profile ?? ''}  ${r.kind === 'agent' ? '[agent run]' : (r.command ?? []).join(' ')}`,
      );
  return 0;
}

export async function runsShowCommand(
  args: { runId: string; json: boolean; artifactRoot?: string | undefined },
  deps: CliDeps,
): Promise<number> {
  try {
    const run = await showRun(args.artifactRoot ?? deps.env.artifactRoot, args.runId);
    if (args.json) {
      deps.printer.json(run);
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
    p.out(
      `state      ${String(run.state?.state)} (${JSON.stringify(run.state?.terminalReason ?? '')}) exit ${JSON.stringify(run.state?.exitCode ?? null)}`,
    );
    if (snap.kind === 'agent') printAgent(p, snap, run.report, run.events);
    else p.out(`command    ${JSON.stringify(snap.command)}`);
    p.out(`profile    ${String((snap.profile as { name?: string } | undefined)?.name)}`);
    p.out(`image      ${String(image?.ref)} ${String(image?.id)}`);
    p.out(`user       ${String(spec?.user)}   seccomp sha256:${String(spec?.seccomp?.sha256)}`);
    for (const m of spec?.mounts ?? []) p.out(`mount      ${m.source} -> ${m.target} (${m.mode})`);
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
    return run.verification.ok ? 0 : 1;
  } catch (error) {
    return reportFailure(error, deps, args.json);
  }
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

export async function imageBuildCommand(
  args: { method: string; force: boolean; json: boolean },
  deps: CliDeps,
): Promise<number> {
  try {
    if (!['auto', 'offline', 'pull'].includes(args.method)) {
      deps.printer.err(`cfh: --method: '${args.method}' is not auto, offline or pull`);
      return 2;
    }
    const tagged = loadRecipe();
    const started = performance.now();
    const result = await buildImage(deps.runtime(), tagged, {
      method: args.method as BuildMethod,
      force: args.force,
      onProgress: (line) => {
        deps.printer.err(`[image] ${line}`);
      },
      signal: deps.signal,
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    if (args.json) deps.printer.json({ ...result, seconds: Number(seconds) });
    else deps.printer.out(`${result.ref} ${result.imageId} (${result.method}, ${seconds} s)`);
    return 0;
  } catch (error) {
    const code = reportFailure(error, deps, args.json);
    return code === 125 ? 1 : code;
  }
}
