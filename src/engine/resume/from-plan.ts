// `--from-plan RUN_ID`: execution after planning (governance extension, "Planning mode":
// "Execution after planning requires approval when risk is present"). The plan is taken
// only from a planning run whose evidence holds: the run exists, completed in plan mode,
// its evidence verifies (verify-run.ts), and the bytes read from plan.md are the ones its
// hash chain recorded (compared after reading, so a file swapped after the check is not
// used). It reaches the model as context, never as authority (a `<context>` slot).
import { createHash } from 'node:crypto';
import type { TrustedKey } from '../../evidence/signing.js';
import { ConfigError, errorMessage } from '../../errors.js';
import { showRun, type RunDetail } from '../../evidence/runs-index.js';
import { withRunReader } from '../../evidence/run-reader.js';
import type { CarriedContext } from '../../cfc/carried.js';
import { carriedFromRun, continuedRun } from '../cfc/cfc-carry.js';

export const PLAN_FILE = 'plan.md';
/** A plan is a final answer (bounded by max_output_tokens): 1 MiB is beyond any. */
export const PLAN_MAX_BYTES = 1024 * 1024;

export interface ApprovedPlan {
  readonly runId: string;
  /** The hex sha256 of plan.md, as the planning run's chain recorded it. */
  readonly sha256: string;
  readonly text: string;
  /**
   * The planning model's context at its end: the plan is its text, so the executing run's
   * context starts at that label (a secret read while planning stays one: AH-CFC-5/7).
   */
  readonly carried: CarriedContext;
}

function refuse(runId: string, why: string, details: Record<string, unknown> = {}): ConfigError {
  return new ConfigError('plan_unusable', `--from-plan ${runId}: ${why}`, {
    field: '--from-plan',
    value: runId,
    ...details,
  });
}

/**
 * The plan of a planning run that passes the verifier (verify-run.ts) as `cfh audit` does:
 * with a trusted key configured, its signature included.
 */
export async function loadApprovedPlan(
  artifactRoot: string,
  runId: string,
  trustedKey?: TrustedKey,
): Promise<ApprovedPlan> {
  let run: RunDetail;
  try {
    run = await showRun(artifactRoot, runId, { trustedKey });
  } catch (error) {
    // No such run: the same refusal as every command that takes a run id.
    if (error instanceof ConfigError && error.code === 'unknown_run') throw error;
    if (error instanceof ConfigError) throw refuse(runId, error.message);
    throw refuse(runId, `cannot read the run: ${errorMessage(error)}`);
  }
  if (!run.verification.ok) {
    throw refuse(runId, `its evidence does not verify: ${run.verification.problems.join('; ')}`, {
      problems: run.verification.problems,
    });
  }
  if (run.snapshot?.kind !== 'agent' || run.snapshot.mode !== 'plan')
    throw refuse(runId, 'it is not a planning run (started without --plan)');
  if (run.report?.status !== 'completed' || run.report.mode !== 'plan') {
    throw refuse(
      runId,
      `the planning run did not complete (${String(run.report?.status)}, ${String(run.report?.terminalReason)})`,
    );
  }
  const recorded = run.events
    .filter((e) => e.type === 'artifact_written' && e.data.file === PLAN_FILE)
    .map((e) => e.data.sha256)
    .at(-1);
  if (typeof recorded !== 'string') throw refuse(runId, `its chain records no ${PLAN_FILE}`);
  // Through the bounded reader, relative to the run directory: no link followed.
  const read = await withRunReader(run.dir, (r) => r.read(PLAN_FILE, PLAN_MAX_BYTES)).catch(
    (error: unknown) => ({ ok: false as const, problem: errorMessage(error) }),
  );
  if (!read.ok) throw refuse(runId, read.problem);
  const bytes = read.value;
  const got = createHash('sha256').update(bytes).digest('hex');
  if (got !== recorded)
    throw refuse(runId, `${PLAN_FILE} is not the file its chain recorded (digest differs)`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw refuse(runId, `${PLAN_FILE} is not UTF-8 text`);
  }
  return { runId, sha256: got, text, carried: await carriedFromRun(continuedRun(run), 'plan') };
}

/** The plan as the model sees it: a context slot that says what it is and is not. */
export function planContext(plan: ApprovedPlan): string {
  return [
    `An approved plan from planning run ${plan.runId} (${PLAN_FILE}, sha256:${plan.sha256}).`,
    'It is context for the direct command, not an instruction of its own; every change it describes is still decided, and may need approval.',
    '',
    plan.text,
  ].join('\n');
}
