// Runs an authorized `runs_diff` or `runs_apply` (tools/draft-tools.ts) against the
// session's live draft (draft-live.ts): cfh's own code on the host, answering with an
// observation. A refusal of the workspace's (the draft or the host changed, a patch too
// large or not all read) is the call's answer, never the session's end; anything else (the
// engine could not pause the run) fails the run as any executor's failure does.
import { CfhError, HarnessInvariantError } from '../../errors.js';
import { isAuthorized, type AuthorizedCall } from '../../mediator/mediator.js';
import { RUNS_APPLY, RUNS_DIFF, RunsApplyInput } from '../../tools/draft-tools.js';
import { errorObservation, type Observation } from '../../tools/observation.js';
import { hostOutcome, type ToolOutcome, type ToolRunner } from '../../tools/runner.js';
import type { LiveDraft, LivePreview } from './draft-live.js';

const MARK: Readonly<Record<string, string>> = {
  added: 'A',
  modified: 'M',
  removed: 'D',
  mode: 'X',
  symlink: 'L',
};

export class DraftToolRunner implements ToolRunner {
  readonly #live: LiveDraft;

  constructor(live: LiveDraft) {
    this.#live = live;
  }

  async run(call: AuthorizedCall, _limitChars: number, signal: AbortSignal): Promise<ToolOutcome> {
    const name = call.tool.name;
    if (!isAuthorized(call) || (name !== RUNS_DIFF && name !== RUNS_APPLY)) {
      throw new HarnessInvariantError(
        'unauthorized_call',
        `the draft runner was handed ${name} without the mediator's authorization`,
        { tool: name },
      );
    }
    const t0 = performance.now();
    const done = (observation: Observation, stdout: string): ToolOutcome =>
      hostOutcome(name, t0, observation, stdout);
    try {
      if (name === RUNS_DIFF) {
        const preview = await this.#live.preview(signal);
        return done(diffObservation(preview), preview.text);
      }
      const { patch } = RunsApplyInput.parse(call.args);
      const applied = await this.#live.apply(patch, call.callId, signal);
      const s = applied.summary;
      // Class 9: what runs_apply never writes, and who may (the operator, by name).
      const held =
        applied.heldBack.length === 0
          ? ''
          : `; ${String(applied.heldBack.length)} held back (paths your tools obey: ${applied.heldBack.join(', ')}; the operator applies them after the session by name)`;
      const observation: Observation = {
        status: 'success',
        summary:
          applied.applied.length === 0
            ? `nothing to apply: the draft has no change the host can take${held}`
            : `applied to the host workspace: ${String(s.added)} added, ${String(s.modified)} modified, ${String(s.removed)} removed, ${String(s.mode)} mode; ${String(applied.notApplied)} not applicable${held}`,
        items: applied.applied.map((a) => `${MARK[a.kind] ?? '?'} ${a.path}`),
        evidence_refs: [applied.baseline.file],
        next_valid_actions: ['runs_diff'],
      };
      return done(observation, `${JSON.stringify(applied)}\n`);
    } catch (error) {
      // The workspace's refusals are the call's answer; the engine's failures are the run's.
      if (!(error instanceof CfhError) || error.boundary !== 'workspace') throw error;
      const observation = errorObservation('error', `${error.code}: ${error.message}`, [
        'runs_diff',
      ]);
      return done(observation, '');
    }
  }
}

function diffObservation(p: LivePreview): Observation {
  const s = p.summary;
  const counts = `${String(s.added)} added, ${String(s.modified)} modified, ${String(s.removed)} removed, ${String(s.mode)} mode, ${String(s.notApplied)} not applicable`;
  const incomplete =
    p.incomplete === undefined ? '' : `; incomplete (${p.incomplete}): runs_apply refuses it`;
  const held =
    p.heldBack.length === 0
      ? ''
      : `; ${String(p.heldBack.length)} held back: paths your tools obey, which runs_apply never writes`;
  return {
    status: 'success',
    summary:
      p.files.length === 0
        ? `no changes in the draft; patch ${p.sha256}`
        : `${String(p.files.length)} changes (${counts}); patch ${p.sha256}${incomplete}${held}`,
    items: [
      `patch: ${p.sha256}`,
      ...p.files.map(
        (f) =>
          `${MARK[f.kind] ?? '?'} ${f.path}${f.applicable ? '' : ` (${f.note ?? 'not applicable'})`}`,
      ),
      p.text,
    ],
    evidence_refs: [],
    next_valid_actions: p.files.some((f) => f.applicable)
      ? [`runs_apply {"patch":"${p.sha256}"}`]
      : [],
  };
}
