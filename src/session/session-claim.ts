// A session is continued by one cfh process at a time (AH-INT-4, AH-LIFE-1): a restore
// claims the session across processes, under the artifact root, before it reads anything
// of it, and holds the claim until the session it opened has ended. Without it, two
// processes asked at once both find no live writer (the check and the new run that makes
// one are two steps) and both continue the session: two runs from one tail. The claim is
// proper-lockfile's (an atomic mkdir, refreshed while held, taken over once stale): a cfh
// that was SIGKILLed leaves a lock that goes stale, never a session that cannot continue.
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { isRunId } from '../evidence/run-id.js';
import { SessionError } from './session-error.js';

/** A held lock whose refresh stopped this long ago is taken over (a dead cfh's). */
const CLAIM_STALE_MS = 30_000;
const CLAIM_REFRESH_MS = 10_000;

/** Where the claim on `sessionId` lives under `root`; undefined for a name that is no id. */
export function sessionClaimPath(root: string, sessionId: string): string | undefined {
  // Session ids are run ids: anything else (a path, `..`) names no session and no file.
  return isRunId(sessionId) ? path.join(root, `.session-${sessionId}.lock`) : undefined;
}

/**
 * Claims `sessionId` under `root`, or throws `session_live_elsewhere` when another process
 * holds it. Resolves with the release (idempotent). A name that is no session id claims
 * nothing: the restore that follows finds no such session and says so.
 */
export async function claimSession(root: string, sessionId: string): Promise<() => Promise<void>> {
  const file = sessionClaimPath(root, sessionId);
  if (file === undefined) return () => Promise.resolve();
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(file, {
      lockfilePath: file,
      realpath: false,
      stale: CLAIM_STALE_MS,
      update: CLAIM_REFRESH_MS,
      retries: 0,
      // A refresh that fails later must not end the session: the claim only keeps a
      // second writer out, and it was held when the run began.
      onCompromised: () => undefined,
    });
  } catch (error) {
    if (codeOf(error) === 'ELOCKED')
      throw new SessionError(
        'session_live_elsewhere',
        `session ${sessionId} is being continued by another cfh process`,
        { sessionId },
        'close it there first, or end that process',
      );
    if (codeOf(error) === 'ENOENT') return () => Promise.resolve(); // no artifact root: the restore says there is no session
    throw error;
  }
  let released: Promise<void> | undefined;
  return () => (released ??= release().catch(() => undefined));
}

function codeOf(error: unknown): unknown {
  return error instanceof Error && 'code' in error ? error.code : undefined;
}
