// What `cfh sandbox resume RUN_ID` takes from the old run, and every reason it refuses to
// (AH-ART-5): the run exists and has ended (or was abandoned: not terminal, its cfh gone),
// its evidence passes the verifier (verify-run.ts) as `cfh audit` runs it, its snapshot is
// of this schema version and of an agent run, its transcript is the file its chain recorded
// and pairs every tool_use. Nothing is repaired or synthesised: a problem is a refusal
// naming it (resume_unusable, 125).
import { createHash } from 'node:crypto';
import { ConfigError, errorMessage } from '../../errors.js';
import { showRun, TERMINAL_STATES, type RunDetail } from '../../evidence/runs-index.js';
import { withRunReader } from '../../evidence/run-reader.js';
import { Snapshot } from '../../evidence/schema/snapshot.js';
import type { TranscriptMessage } from '../../evidence/schema/transcript.js';
import type { TrustedKey } from '../../evidence/signing.js';
import { Profile } from '../../config/profile-schema.js';
import type { CarriedContext } from '../../cfc/carried.js';
import { HeldValuesUnreadable } from '../../evidence/held-values.js';
import { carriedFromRun, continuedRun } from '../cfc/cfc-carry.js';
import { parseTranscript, refence, unpaired } from './resume-conversation.js';

/** A transcript is the model context: bounded by the input-token budget, far below this. */
export const TRANSCRIPT_MAX_BYTES = 64 * 1024 * 1024;

export interface ResumeState {
  readonly runId: string;
  readonly dir: string;
  readonly snapshot: Snapshot;
  /** The profile the old run resolved (as its snapshot records it). */
  readonly profile: Profile;
  readonly status: 'completed' | 'failed' | 'cancelled' | 'abandoned';
  /** The last event of the old chain: what the resumed run links to. */
  readonly finalSeq: number;
  readonly finalHash: string;
  readonly transcript: {
    readonly sha256: string;
    readonly messages: number;
    /** false: an abandoned run's transcript, which its chain never sealed. */
    readonly anchored: boolean;
  };
  /** The rebuilt context, the old direct commands re-fenced as context. */
  readonly messages: readonly TranscriptMessage[];
  /** The old model context: its label at its end and the values its handles name. */
  readonly carried: CarriedContext;
}

export function refuseResume(
  runId: string,
  why: string,
  details: Record<string, unknown> = {},
): ConfigError {
  return new ConfigError(
    'resume_unusable',
    `resume ${runId}: ${why}`,
    { field: 'runId', value: runId, ...details },
    'nothing was started; cfh runs show RUN_ID says what the run recorded',
  );
}

export async function loadResumeState(
  artifactRoot: string,
  runId: string,
  trustedKey: TrustedKey | undefined,
): Promise<ResumeState> {
  const run = await showRun(artifactRoot, runId, { trustedKey }).catch((error: unknown) => {
    if (error instanceof ConfigError && error.code === 'unknown_run') throw error;
    throw refuseResume(runId, `cannot read the run: ${errorMessage(error)}`);
  });
  const status = statusOf(run);
  if (!run.verification.ok) {
    throw refuseResume(
      runId,
      `its evidence does not verify (chain or files): ${run.verification.problems.join('; ')}`,
      { problems: run.verification.problems },
    );
  }
  const parsed = Snapshot.safeParse(run.snapshot);
  if (!parsed.success) {
    const schema = typeof run.snapshot?.schema === 'string' ? run.snapshot.schema : 'none';
    throw refuseResume(
      runId,
      `its snapshot is not one this cfh reads (schema ${schema}): ${parsed.error.issues[0]?.message ?? ''}`,
    );
  }
  const snapshot = parsed.data;
  if (snapshot.kind !== 'agent') throw refuseResume(runId, 'it is a command run, not an agent run');
  const profile = Profile.safeParse(snapshot.profile.resolved);
  if (!profile.success)
    throw refuseResume(runId, 'its snapshot records a profile this cfh cannot read');
  checkDraft(run, snapshot);
  const last = run.events.at(-1);
  if (last === undefined) throw refuseResume(runId, 'its event log is empty');
  const transcript = await readTranscript(run, status === 'abandoned');
  return {
    runId,
    dir: run.dir,
    snapshot,
    profile: profile.data,
    status,
    finalSeq: last.seq,
    finalHash: last.hash,
    transcript: transcript.record,
    messages: transcript.messages,
    carried: await carriedOf(run),
  };
}

function statusOf(run: RunDetail): ResumeState['status'] {
  const state = run.summary.state;
  if (TERMINAL_STATES.includes(state)) return state as ResumeState['status'];
  // Its cfh's heartbeat still holds the run's lock: still running, or still shutting down.
  if (run.summary.locked)
    throw refuseResume(
      run.runId,
      `it is still running (state ${state}; its cfh holds the run's lock)`,
    );
  return 'abandoned';
}

/**
 * A draft run's changes are in its patch, not in the workspace: resumed before the patch is
 * applied, the model would go on from changes the workspace does not hold.
 */
function checkDraft(run: RunDetail, snapshot: Snapshot): void {
  if (snapshot.workspace.mode !== 'draft') return;
  const draft = run.report?.draft as { file?: unknown } | undefined;
  const applied = run.events.some((e) => e.type === 'applied');
  if (draft?.file !== undefined && !applied)
    throw refuseResume(
      run.runId,
      'it is a draft run whose patch is not applied: the workspace does not hold what the model did',
      { hint: `cfh runs apply ${run.runId}` },
    );
}

async function readTranscript(
  run: RunDetail,
  abandoned: boolean,
): Promise<{ record: ResumeState['transcript']; messages: TranscriptMessage[] }> {
  const recorded = run.events
    .filter((e) => e.type === 'artifact_written' && e.data.file === 'transcript.jsonl')
    .map((e) => e.data.sha256)
    .at(-1);
  if (typeof recorded !== 'string' && !abandoned)
    throw refuseResume(run.runId, 'its chain records no transcript.jsonl');
  // Through the bounded reader, relative to the run directory: no link followed.
  const read = await withRunReader(run.dir, (r) =>
    r.read('transcript.jsonl', TRANSCRIPT_MAX_BYTES),
  ).catch((error: unknown) => ({ ok: false as const, problem: errorMessage(error) }));
  if (!read.ok) throw refuseResume(run.runId, `its transcript cannot be read: ${read.problem}`);
  const sha256 = createHash('sha256').update(read.value).digest('hex');
  // Compared after reading: a file swapped after the verifier's check is not used.
  if (typeof recorded === 'string' && sha256 !== recorded)
    throw refuseResume(run.runId, 'transcript.jsonl is not the file its chain recorded');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(read.value);
  } catch {
    throw refuseResume(run.runId, 'transcript.jsonl is not UTF-8 text');
  }
  const parsed = parseTranscript(text);
  if (!parsed.ok) throw refuseResume(run.runId, parsed.problem);
  const broken = unpaired(parsed.messages);
  if (broken !== undefined) throw refuseResume(run.runId, `its transcript is unpaired: ${broken}`);
  const fenced = refence(parsed.messages, run.runId);
  if (!fenced.ok) throw refuseResume(run.runId, fenced.problem);
  return {
    record: { sha256, messages: parsed.messages.length, anchored: typeof recorded === 'string' },
    messages: fenced.messages,
  };
}

/** The old context's label and held values (cfc-carry.ts); a value that cannot be read refuses. */
async function carriedOf(run: RunDetail): Promise<CarriedContext> {
  try {
    return await carriedFromRun(continuedRun(run), 'resume');
  } catch (error) {
    if (error instanceof HeldValuesUnreadable)
      throw refuseResume(run.runId, `a value its handles name cannot be read: ${error.message}`);
    throw error;
  }
}
