// Removes engine objects labelled by cfh whose owning process is gone (AH-LIFE-3): the
// containers of a cfh that was SIGKILLed, networks and volumes left by a crash. Objects of
// a live owner, or of another host sharing the engine, are left alone.
import type { Logger } from '../../log.js';
import { isRunId } from '../../evidence/run-id.js';
import { LABEL_EGRESS_CONFIG, removeEgressConfig } from '../../sandbox/egress-config.js';
import { errorMessage } from '../../errors.js';
import { LABEL_RUN_ID, ownerStatus, type OwnerStatus } from '../../sandbox/owner.js';
import type { ContainerRuntime, LabelledObject } from '../../substrate/runtime.js';
import { reapHostProcesses } from '../../tools/host/host-reap.js';
import { reapDrafts } from '../draft/draft-reap.js';

export interface ReapEntry {
  /** An engine object, a host-tool process tree (src/tools/host/host-process.ts), or a
   * draft copy's directory (draft-reap.ts). */
  readonly kind: LabelledObject['kind'] | 'host-process' | 'draft';
  readonly id: string;
  readonly name: string;
  readonly runId: string;
  readonly owner: OwnerStatus | 'unknown';
  /** `ignored`: a host-process ledger file cfh does not believe (ledger-trust.ts). */
  readonly action: 'removed' | 'would-remove' | 'kept' | 'failed' | 'ignored';
  readonly error?: string;
}

// Containers first: a network or volume in use cannot be removed before them.
const ORDER: Record<LabelledObject['kind'], number> = { container: 0, network: 1, volume: 2 };

export async function reapOrphans(
  runtime: ContainerRuntime,
  options: {
    dryRun: boolean;
    logger: Logger;
    signal?: AbortSignal | undefined;
    /** Only the objects of these runs (`cfh reap --run ID`); all runs when absent. */
    runIds?: readonly string[] | undefined;
    /** The host-process ledger; absent: host-tool processes are not looked at. */
    hostProcessDir?: string | undefined;
    /** Where draft copies are made; absent: drafts are not looked at. */
    draftRoot?: string | undefined;
  },
): Promise<ReapEntry[]> {
  const only = options.runIds === undefined ? undefined : new Set(options.runIds);
  // Host processes first: a host tool of a dead run is stopped before anything else goes.
  const hosts =
    options.hostProcessDir === undefined
      ? { reaped: [], ignored: [] }
      : await reapHostProcesses(options.hostProcessDir, { dryRun: options.dryRun, runIds: only });
  const ignoredEntries: ReapEntry[] = hosts.ignored.map((u) => ({
    kind: 'host-process',
    id: u.file,
    name: u.file,
    runId: '',
    owner: 'unknown',
    action: 'ignored',
    error: `not a ledger record cfh wrote: ${u.reason}`,
  }));
  const hostEntries: ReapEntry[] = hosts.reaped.map((h) => ({
    kind: 'host-process',
    id: String(h.record.pid ?? ''),
    name: `${h.record.tool} (pid ${String(h.record.pid ?? 'unknown')}, ${h.killed} stray)`,
    runId: h.record.runId,
    owner: h.owner,
    action: h.action,
    ...(h.error === undefined ? {} : { error: h.error }),
  }));
  const objects = (await runtime.listLabelled(LABEL_RUN_ID, options.signal))
    .filter((o) => only === undefined || only.has(o.labels[LABEL_RUN_ID] ?? ''))
    .sort((a, b) => ORDER[a.kind] - ORDER[b.kind]);
  const entries: ReapEntry[] = [...ignoredEntries, ...hostEntries];
  for (const object of objects) {
    const owner = ownerStatus(object.labels);
    const base = {
      kind: object.kind,
      id: object.id,
      name: object.name,
      runId: object.labels[LABEL_RUN_ID] ?? '',
      owner,
    };
    if (owner !== 'gone') {
      entries.push({ ...base, action: 'kept' });
      continue;
    }
    if (options.dryRun) {
      entries.push({ ...base, action: 'would-remove' });
      continue;
    }
    try {
      await runtime.removeObject(object, options.signal);
      options.logger.info({ kind: object.kind, name: object.name }, 'reaped orphan');
      entries.push({ ...base, action: 'removed' });
      // The egress network's host-side config (resolv.conf) goes with it: the directory
      // its label names, if it has the shape cfh gives it and this user owns it.
      const configDir = object.labels[LABEL_EGRESS_CONFIG];
      if (object.kind === 'network' && isRunId(base.runId) && configDir !== undefined) {
        await removeEgressConfig(configDir, base.runId);
      }
    } catch (error) {
      entries.push({ ...base, action: 'failed', error: errorMessage(error) });
    }
  }
  // Drafts last: a dead run's container still running would write into its copy as it goes.
  const drafts =
    options.draftRoot === undefined
      ? []
      : await reapDrafts(options.draftRoot, { dryRun: options.dryRun, runIds: only });
  for (const d of drafts) {
    entries.push({
      kind: 'draft',
      id: d.dir,
      name: d.dir,
      runId: d.runId,
      owner: d.owner,
      action: d.action,
      ...(d.error === undefined ? {} : { error: d.error }),
    });
  }
  return entries;
}
