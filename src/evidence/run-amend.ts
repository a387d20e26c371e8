// The one way a finished run's evidence grows: an `applied` event, when the run's patch is
// committed to the host (governance extension, "Draft vs commit policy"). Under the run
// directory's lock (the same one a live run holds, so a run still being written is
// refused), the evidence is read and verified, and the hash chain is extended after its
// last event. verify-run.ts accepts `applied` after `run_finished` and nothing else.
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { ArtifactError, errorMessage } from '../errors.js';
import { EventLog, type EventRecord } from './event-log.js';
import { RUN_FILES } from './run-directory.js';
import type { EventInput } from './schema/registry.js';
import { showRun, type RunDetail, type ShowOptions } from './runs-index.js';

/** The only event type a finished run may gain. */
export const APPLIED_EVENT = 'applied' as const;

export interface FinishedRun {
  /** The run's evidence as read and verified under the lock. */
  readonly detail: RunDetail;
  /** Extends the chain with the `applied` event, durably. */
  appendApplied(data: EventInput<'applied'>): Promise<EventRecord>;
}

export async function withLockedRun<T>(
  root: string,
  runId: string,
  options: ShowOptions,
  fn: (run: FinishedRun) => Promise<T>,
): Promise<T> {
  // Validates the id and that the run exists before any lock is taken.
  await showRun(root, runId, options);
  const dir = path.join(root, runId);
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(dir, {
      lockfilePath: path.join(dir, RUN_FILES.lock),
      realpath: false,
      // Long enough for an apply: while it writes the workspace as its owner, cfh cannot
      // refresh a lock in a directory only it may write.
      stale: 120_000,
      update: 60_000,
      onCompromised: () => undefined,
    });
  } catch (error) {
    throw new ArtifactError(
      'run_locked',
      `run ${runId} is held by another cfh process (${errorMessage(error)}); try again when it is done`,
      error,
    );
  }
  let log: EventLog | undefined;
  try {
    const detail = await showRun(root, runId, options);
    return await fn({
      detail,
      appendApplied: async (data) => {
        const last = detail.events.at(-1);
        if (last === undefined || !detail.chain.ok)
          throw new ArtifactError('evidence_broken', `run ${runId}: the event log does not verify`);
        log ??= await EventLog.resume(path.join(dir, RUN_FILES.events), runId, last);
        return log.append(APPLIED_EVENT, data, true);
      },
    });
  } finally {
    await log?.close();
    await release().catch(() => undefined);
  }
}
