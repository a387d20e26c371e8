// The end walk of a run's rw mounts, once every container is gone: one walk, two checks.
// No file the sandbox created or changed keeps S_ISUID/S_ISGID on the host (AH-CONT-2;
// sandbox/setid-sweep.ts), and every host-obeyed path it created or changed where nothing
// held it read-only is found and recorded (class 9; sandbox/host-obeyed-watch.ts), for the
// run's end line and report to say.
import { WORKSPACE_TARGET } from '../../sandbox/mount-policy.js';
import { sweepSetid } from '../../sandbox/setid-sweep.js';
import { HostObeyedWatch } from '../../sandbox/host-obeyed-watch.js';
import type { RunDirectory } from '../../evidence/run-directory.js';
import type { RunPlan } from './run-plan.js';

/** report.json `hostObeyed`: what the run left that a host tool obeys. */
export interface HostObeyedReport {
  readonly mode: 'ro' | 'rw';
  /** Host-obeyed paths created or changed, each the shallowest of its subtree. */
  readonly changed: number;
  /** Relative to their mount, the first MAX_NAMED of them. */
  readonly paths: readonly string[];
  /** Every entry changed below them too. */
  readonly entries: number;
  /** Whether the walk reached every entry (its bounds: setid-sweep.ts). */
  readonly complete: boolean;
}

/**
 * Walks the rw mounts; records `setid_stripped` per file, `setid_sweep`, and, when the run
 * changed any, `host_obeyed_changed`. Returns the report's `hostObeyed`, or undefined for a
 * run with no host rw mount (a draft copy is not one: an apply names what reaches the host).
 */
export async function sweepRwMounts(
  plan: RunPlan,
  dir: RunDirectory,
  since: Date,
): Promise<HostObeyedReport | undefined> {
  const rw = plan.spec.mounts.filter((m) => m.mode === 'rw');
  if (rw.length === 0) return undefined;
  const roots = rw.map((m) => m.source);
  const host = rw
    .filter((m) => plan.workspaceMode !== 'draft' || m.target !== WORKSPACE_TARGET)
    .map((m) => m.source);
  const watch = new HostObeyedWatch(
    host,
    plan.hostObeyed.mounts,
    since,
    plan.hostObeyed.repository,
  );
  // Not cut short by the run's cancellation: the host must not keep what the run planted.
  // The sweep bounds itself (entries, time) and says when it was not complete.
  const result = await sweepSetid({
    roots,
    since: since,
    signal: new AbortController().signal,
    visit: watch.visit,
  });
  for (const s of result.stripped) {
    await dir.events.append('setid_stripped', { ...s }, true);
  }
  await dir.events.append('setid_sweep', {
    roots,
    stripped: result.stripped.length,
    skipped: [...result.skipped],
    ...result.stats,
  });
  if (host.length === 0) return undefined;
  const found = watch.finding();
  const complete = result.stats.complete;
  if (found.count > 0) {
    await dir.events.append(
      'host_obeyed_changed',
      {
        mode: plan.hostObeyed.mode,
        paths: found.paths.map((p) => ({ ...p })),
        omitted: found.omitted,
        entries: found.count,
        complete,
      },
      true,
    );
  }
  return {
    mode: plan.hostObeyed.mode,
    changed: found.paths.length + found.omitted,
    paths: found.paths.map((p) => p.path),
    entries: found.count,
    complete,
  };
}
