// The draft/commit split inside a run session (governance extension, "Draft vs commit
// policy"): the copy is made before the snapshot names it, and once every container is
// gone the patch is written and the copy removed, whatever happened to the work.
import { CfhError, EngineError, errorMessage } from '../../errors.js';
import type { RunDirectory } from '../../evidence/run-directory.js';
import type { Logger } from '../../log.js';
import { DraftWorkspace, type PatchSummary } from './draft-workspace.js';
import type { RunPlan } from '../run/run-plan.js';
import { cancelSignalOf, type RunEnd } from '../run/terminal.js';

/**
 * Draft mode: the copy of the workspace, or how making it failed (a run that never
 * started: recorded as such, with the snapshot, rather than left without a terminal).
 */
export async function prepareDraft(
  plan: RunPlan,
  dir: RunDirectory,
  log: Logger,
  signal: AbortSignal,
): Promise<{
  draft: DraftWorkspace | undefined;
  failure: { end: RunEnd; error: CfhError | undefined } | undefined;
}> {
  if (plan.workspaceMode !== 'draft') return { draft: undefined, failure: undefined };
  try {
    return { draft: await DraftWorkspace.open(plan, dir, log, signal), failure: undefined };
  } catch (thrown) {
    if (signal.aborted && !(thrown instanceof CfhError))
      return {
        draft: undefined,
        failure: { end: { kind: 'cancelled', signal: cancelSignalOf(signal) }, error: undefined },
      };
    const error = asCfhError(thrown);
    log.error({ err: error.message, code: error.code }, 'draft not prepared');
    return { draft: undefined, failure: { end: { kind: 'error', error, started: false }, error } };
  }
}

/**
 * The end of a draft: the patch (when the work started: before that nothing could change
 * the copy), then the copy is removed, whatever happened.
 */
export async function closeDraft(
  session: {
    readonly started: boolean;
    readonly dir: RunDirectory;
    readonly log: Logger;
  },
  draft: DraftWorkspace,
): Promise<{
  report: Record<string, unknown>;
  patch: PatchSummary | undefined;
  error: CfhError | undefined;
}> {
  let report: Record<string, unknown> = { patch: null };
  let patch: PatchSummary | undefined;
  let error: CfhError | undefined;
  try {
    if (session.started) {
      patch = await draft.writePatch(session.dir);
      // report.json keeps the counts; the list of paths is in patch.json.
      const { file, diff, sha256, summary, blobs } = patch;
      report = { file, diff, sha256, summary, blobs };
    }
  } catch (thrown) {
    error = asCfhError(thrown);
    session.log.error({ err: error.message }, 'patch not written');
    report = { patch: null, error: error.code };
  }
  try {
    await draft.discard(session.dir);
  } catch (thrown) {
    error ??= asCfhError(thrown);
    session.log.error({ err: errorMessage(thrown) }, 'draft not removed');
  }
  return { report, patch, error };
}

function asCfhError(error: unknown): CfhError {
  return error instanceof CfhError
    ? error
    : new EngineError('run_failed', errorMessage(error), { cause: error });
}
