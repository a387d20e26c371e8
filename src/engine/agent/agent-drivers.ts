// What drives an opened agent surface to the end of the run: one loop over the prompt
// (`cfh sandbox run --prompt`), one over a rebuilt conversation (resume); a session and
// `cfh mcp` bring drivers of their own. Each ends the run as answered, blocked
// (`--fail-on-blocked`) or out of budget, and a planning run leaves its plan.
import type { RunSession } from '../run/run-session.js';
import type { RunEnd } from '../run/terminal.js';
import { PLAN_FILE } from '../resume/from-plan.js';
import { runAgentLoop, type AgentLoopResult, type Conversation } from './agent-loop.js';
import type { AgentResult, AgentRequest, AgentRunDeps } from './agent-request.js';
import type { AgentSurface, OpenAgentSurface } from './agent-surface.js';
import type { BlockedCalls } from './blocked-calls.js';

/** What a driver is given: the opened surface and what it was opened for. */
export interface AgentDriveContext {
  readonly session: RunSession;
  readonly request: AgentRequest;
  readonly deps: AgentRunDeps;
  readonly surface: AgentSurface;
  readonly open: OpenAgentSurface;
}

/**
 * What drives an opened agent surface to the end of the run: by default one loop over the
 * request's prompt (`cfh sandbox run --prompt`). A session drives it turn after turn; it
 * returns how the run ended, as the one-prompt driver does.
 */
export type AgentDriver = (
  context: AgentDriveContext,
  signal: AbortSignal,
) => Promise<{ end: RunEnd; result: AgentResult }>;

/**
 * One loop over `conversation` (a new one by default) until the model answers or a budget
 * ends it; a resumed run passes the context it rebuilt (resume-run.ts).
 */
export const answerIn =
  (conversation?: Conversation): AgentDriver =>
  async ({ session, request, surface, open }, signal) => {
    const loop = await runAgentLoop(request.slots, open.loopDeps, signal, conversation);
    return endOfLoop(session, request, surface, loop);
  };

/** The one-prompt driver: one loop until the model answers or a budget ends it. */
export const answerOnce: AgentDriver = answerIn();

async function endOfLoop(
  session: RunSession,
  request: AgentRequest,
  surface: AgentSurface,
  loop: AgentLoopResult,
): Promise<{ end: RunEnd; result: AgentResult }> {
  const end: RunEnd =
    loop.status === 'completed'
      ? await answeredOrBlocked(session, request.mode, surface.blocked)
      : { kind: 'budget', budget: loop.budget?.budget ?? loop.terminalReason };
  // A planning run that answered leaves its plan, in the hash chain like every evidence
  // file; `--from-plan` takes it only from there.
  if (request.mode === 'plan' && loop.status === 'completed' && loop.finalAnswer !== undefined) {
    const sha256 = await session.dir.writeFile(PLAN_FILE, loop.finalAnswer);
    return { end, result: { ...loop, plan: { file: PLAN_FILE, sha256 } } };
  }
  return { end, result: loop };
}

/**
 * `--fail-on-blocked` / `failOnBlocked`: an answer after blocked calls fails the run, and the
 * evidence says which calls, durably, before the terminal record (AH-LIFE-2).
 */
export async function answeredOrBlocked(
  session: RunSession,
  mode: 'run' | 'plan',
  blocked: BlockedCalls,
): Promise<RunEnd> {
  if (!session.plan.profile.failOnBlocked) return { kind: 'answered' };
  const failing = blocked.failing(mode);
  if (failing.calls.length === 0) return { kind: 'answered' };
  await session.dir.events.append('run_blocked', failing, true);
  return { kind: 'blocked', denied: failing.denied, unapproved: failing.unapproved };
}
