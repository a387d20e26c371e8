// One interactive session: one agent run (executeAgentRun with the session driver) whose
// profile, workspace, policy, model route, CFC mode and budgets are fixed at open. Its turns
// share one Conversation, the run's tool containers (warm between turns, reaped at close),
// its budgets and its one evidence directory; each turn is `turn_started`/`turn_completed`
// in the run's hash chain (AH-INT-1). Turns are serial: a second while one runs is refused
// (AH-INT-2). Cancelling a turn answers its in-flight calls `aborted` and leaves the session
// open; closing it ends the run: terminal record, every container removed (AH-INT-5,
// AH-LIFE-3). Events reach the caller only once durable and replay from the file (AH-INT-3).
import path from 'node:path';
import { answeredOrBlocked, type AgentDriveContext } from '../engine/agent/agent-drivers.js';
import {
  executeAgentRun,
  type AgentOutcome,
  type AgentResult,
  type AgentRunDeps,
  type ApprovalSetup,
} from '../engine/agent/agent-run.js';
import {
  newConversation,
  runAgentLoop,
  type AgentLoopResult,
  type Conversation,
  type PromptSlots,
} from '../engine/agent/agent-loop.js';
import { captureOfPrompt } from '../engine/cfc/cfc-plan.js';
import type { RunPlan } from '../engine/run/run-plan.js';
import type { RunEnd } from '../engine/run/terminal.js';
import type { EventRecord } from '../evidence/event-log.js';
import type { InputCaptureRecord } from '../evidence/schema/events-cfc.js';
import { RUN_FILES } from '../evidence/run-directory.js';
import type { ErrorCode } from '../errors.js';
import type { SessionAuthority } from './authority.js';
import { DurableFeed, replayEvents } from './event-feed.js';
import type { Restorable } from './restore.js';
import { SessionError } from './session-error.js';
import {
  SessionTotals,
  deferred,
  transcriptState,
  turnStarted,
  type Deferred,
} from './turn-records.js';

export type CaptureSurface = InputCaptureRecord['surface'];

/** A subject the caller authenticated itself and vouches for (recorded as vouched). */
export interface VouchedSubject {
  readonly user: string;
  readonly uid?: number | null | undefined;
}

export interface TurnInput {
  /** The caller's id of the request that starts the turn (JSON-RPC id), recorded. */
  readonly requestId: string | number | null;
  readonly slots: PromptSlots;
  readonly subject?: VouchedSubject | undefined;
}

export type TurnStatus = 'answered' | 'cancelled' | 'failed' | 'budget';

export interface TurnResult {
  readonly turnId: string;
  readonly status: TurnStatus;
  readonly reason: string;
  readonly finalAnswer: string | null;
  readonly toolCalls: number;
}

export type CloseReason = 'session/close' | 'eof' | 'signal';

export interface SessionOptions {
  readonly plan: RunPlan;
  readonly deps: AgentRunDeps;
  readonly approvals: ApprovalSetup;
  readonly mode: 'run' | 'plan';
  readonly surface: CaptureSurface;
  readonly authority: SessionAuthority;
  /** A session continued from an earlier run (restore.ts); none: a new session. */
  readonly restored?: Restorable | undefined;
  /** Each event record, once durable, in seq order. */
  readonly send: (record: EventRecord) => void;
  /**
   * Cancels the opening: aborted before the surface is open, the run ends cancelled (its
   * reason, a CancelRequest, says which signal) and `open` fails. Once open, close() ends it.
   */
  readonly signal?: AbortSignal | undefined;
}

type Next = { kind: 'turn'; input: TurnInput; turnId: string } | { kind: 'close'; reason: string };

interface Running {
  readonly turnId: string;
  readonly abort: AbortController;
  readonly done: Deferred<TurnResult>;
}

const pad = (n: number): string => String(n).padStart(4, '0');

export class Session {
  readonly id: string;
  readonly runId: string;
  readonly runDir: string;
  readonly restoredFrom: string | null;
  readonly #o: SessionOptions;
  readonly #feed: DurableFeed;
  /** Aborts the whole run (a second signal): the run ends cancelled. */
  readonly #hard = new AbortController();
  readonly #opened = deferred<true>();
  #outcome: Promise<AgentOutcome> | undefined;
  #waiting: ((next: Next) => void) | undefined;
  /** Delivered while the driver was between turns: taken by its next wait. */
  #inbox: Next | undefined;
  #opening = true;
  #running: Running | undefined;
  #closing = false;
  #finished = false;
  #turns: number;

  private constructor(o: SessionOptions) {
    this.#o = o;
    this.runId = o.plan.runId;
    this.id = o.restored?.sessionId ?? o.plan.runId;
    this.restoredFrom = o.restored?.fromRunId ?? null;
    this.runDir = path.join(o.plan.artifactRoot, o.plan.runId);
    this.#turns = o.restored?.turns ?? 0;
    this.#feed = new DurableFeed(o.send);
  }

  /** Opens the run and waits until its surface is open (containers, mediator, evidence). */
  static async open(o: SessionOptions): Promise<Session> {
    const session = new Session(o);
    const outcome = executeAgentRun(
      o.plan,
      {
        slots: { prompt: '' },
        mode: o.mode,
        approvals: o.approvals,
        // Each turn's direct command is captured at its turn (turn_started.capture).
        promptCapture: undefined,
        // A restored conversation keeps its label and its handles (cfc/carried.ts).
        carried: o.restored === undefined ? [] : [o.restored.carried],
        session: {
          id: session.id,
          transport: 'stdio',
          turns: 'serial',
          authority: { ...o.authority },
          restoredFrom:
            o.restored === undefined
              ? null
              : {
                  runId: o.restored.fromRunId,
                  lastSeq: o.restored.lastSeq,
                  lastHash: o.restored.lastHash,
                },
        },
      },
      { ...o.deps, events: session.#feed.listener },
      session.#hard.signal,
      (ctx, signal) => session.#drive(ctx, signal),
    ).finally(() => {
      session.#finished = true;
      session.#running?.done.reject(session.#closedError());
    });
    session.#outcome = outcome;
    const cancel = (): void => {
      session.#hard.abort(o.signal?.reason);
    };
    if (o.signal?.aborted === true) cancel();
    else o.signal?.addEventListener('abort', cancel, { once: true });
    let opened: boolean;
    try {
      opened = await Promise.race([
        session.#opened.promise.then(() => true),
        outcome.then(() => false),
      ]);
    } finally {
      o.signal?.removeEventListener('abort', cancel);
    }
    if (!opened) {
      const ended = await outcome;
      await session.#feed.close();
      throw new SessionError(
        (ended.error?.code ?? 'run_failed') as ErrorCode,
        `the session could not be opened: ${ended.error?.message ?? ended.terminalReason}`,
        { runId: ended.runId },
      );
    }
    return session;
  }

  get state(): 'idle' | 'turn' | 'closing' | 'closed' {
    if (this.#finished) return 'closed';
    if (this.#closing) return 'closing';
    return this.#running === undefined ? 'idle' : 'turn';
  }

  /** How the session's run ended, once it has (closed, or ended by a budget or a failure). */
  get ended(): Promise<AgentOutcome> {
    if (this.#outcome === undefined) throw this.#closedError();
    return this.#outcome;
  }

  get turns(): number {
    return this.#turns;
  }

  /** Starts a turn; refused while another runs (AH-INT-2) or once the session is closing. */
  startTurn(input: TurnInput): { turnId: string; done: Promise<TurnResult> } {
    if (this.#finished || this.#closing) throw this.#closedError();
    if (this.#running !== undefined || this.#opening) {
      throw new SessionError(
        'turn_in_progress',
        `turn ${this.#running?.turnId ?? '(starting)'} is running; turns of a session are serial`,
        { sessionId: this.id, running: this.#running?.turnId ?? null },
        'wait for its turn/completed notification, or send turn/cancel',
      );
    }
    this.#turns += 1;
    const turnId = `turn-${pad(this.#turns)}`;
    const running: Running = {
      turnId,
      abort: new AbortController(),
      done: deferred<TurnResult>(),
    };
    // A caller that never awaits the turn must not see an unhandled rejection.
    running.done.promise.catch(() => undefined);
    this.#running = running;
    this.#deliver({ kind: 'turn', input, turnId });
    return { turnId, done: running.done.promise };
  }

  /** Aborts the running turn; its calls are answered `aborted`; the session stays open. */
  cancelTurn(turnId?: string): string {
    const running = this.#running;
    if (running === undefined || (turnId !== undefined && turnId !== running.turnId)) {
      throw new SessionError(
        'turn_not_running',
        turnId === undefined ? 'no turn is running' : `turn ${turnId} is not running`,
        { sessionId: this.id, running: running?.turnId ?? null },
      );
    }
    running.abort.abort(new Error('turn/cancel'));
    return running.turnId;
  }

  /** Ends the session: a running turn is cancelled, then the run ends and is reaped. */
  async close(reason: CloseReason): Promise<AgentOutcome> {
    const outcome = this.#outcome;
    if (outcome === undefined) throw this.#closedError();
    if (!this.#closing && !this.#finished) {
      this.#closing = true;
      this.#running?.abort.abort(new Error(reason));
      await this.#running?.done.promise.catch(() => undefined);
      this.#deliver({ kind: 'close', reason });
    }
    const ended = await outcome;
    await this.#feed.close();
    return ended;
  }

  /** Stops everything now: the run ends `cancelled` (a second signal). */
  abort(): void {
    this.#hard.abort();
  }

  /** Events from `fromSeq` on, read back from events.jsonl, only those already sent. */
  async replay(fromSeq: number): Promise<ReturnType<typeof replayEvents>> {
    await this.#feed.settle();
    return replayEvents(path.join(this.runDir, RUN_FILES.events), fromSeq, this.#feed.durableSeq);
  }

  #deliver(next: Next): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting === undefined) this.#inbox = next;
    else waiting(next);
  }

  /** Every event written so far has been sent. */
  settle(): Promise<void> {
    return this.#feed.settle();
  }

  #closedError(): SessionError {
    return new SessionError('session_closed', `session ${this.id} is closed`, {
      sessionId: this.id,
    });
  }

  /** Waits for the next turn or the close; the wall-time budget runs while idle too. */
  #next(deadline: AbortSignal | undefined, signal: AbortSignal): Promise<Next | 'deadline'> {
    return new Promise((resolve, reject) => {
      const stop = (): void => {
        deadline?.removeEventListener('abort', onDeadline);
        signal.removeEventListener('abort', onAbort);
      };
      const onDeadline = (): void => {
        stop();
        this.#waiting = undefined;
        resolve('deadline');
      };
      const onAbort = (): void => {
        stop();
        this.#waiting = undefined;
        reject(signal.reason as Error);
      };
      const queued = this.#inbox;
      if (queued !== undefined) {
        this.#inbox = undefined;
        resolve(queued);
        return;
      }
      if (deadline?.aborted === true) {
        onDeadline();
        return;
      }
      if (signal.aborted) {
        onAbort();
        return;
      }
      deadline?.addEventListener('abort', onDeadline, { once: true });
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiting = (next) => {
        stop();
        resolve(next);
      };
    });
  }

  async #drive(
    ctx: AgentDriveContext,
    signal: AbortSignal,
  ): Promise<{ end: RunEnd; result: AgentResult }> {
    const events = ctx.session.dir.events;
    const conversation = newConversation();
    const restored = this.#o.restored;
    if (restored !== undefined) {
      // The conversation the old run's chain vouches for, written again here so this run's
      // transcript holds the whole model context it continues (AH-INT-4).
      for (const m of restored.messages) {
        conversation.messages.push(m);
        await ctx.open.loopDeps.recorder.transcript(m);
      }
      conversation.requests = restored.modelRequests;
      await events.append(
        'session_restored',
        {
          sessionId: restored.sessionId,
          fromRunId: restored.fromRunId,
          fromLastSeq: restored.lastSeq,
          fromLastHash: restored.lastHash,
          turns: restored.turns,
          modelRequests: restored.modelRequests,
          transcriptMessages: restored.messages.length,
          transcriptSha256: restored.transcriptSha256,
        },
        true,
      );
    }
    const totals = new SessionTotals();
    this.#opening = false;
    this.#opened.resolve(true);
    let end: RunEnd | undefined;
    let closeReason: string;
    for (;;) {
      const next = await this.#next(ctx.open.loopDeps.deadline, signal);
      if (next === 'deadline') {
        const wall = ctx.open.tracker.budgets.maxWallTimeSeconds;
        await events.append(
          'budget_exceeded',
          {
            budget: 'max_wall_time_seconds',
            limit: wall,
            used: Math.max(wall, ctx.open.tracker.elapsedSeconds()),
          },
          true,
        );
        end = { kind: 'budget', budget: 'max_wall_time_seconds' };
        closeReason = 'budget';
        break;
      }
      if (next.kind === 'close') {
        closeReason = next.reason;
        break;
      }
      const result = await this.#turn(ctx, conversation, next, totals, signal);
      if (result.status === 'budget') {
        end = { kind: 'budget', budget: result.reason.replace(/^budget_exceeded:/, '') };
        closeReason = 'budget';
        break;
      }
    }
    await events.append(
      'session_closed',
      { reason: closeReason as 'session/close' | 'eof' | 'signal' | 'budget', turns: this.#turns },
      true,
    );
    end ??= await answeredOrBlocked(ctx.session, ctx.request.mode, ctx.surface.blocked);
    // Usage from the log: a cancelled turn's attempts count too (AH-USAGE-1).
    return { end, result: totals.result(end, ctx.open.attempts.records) };
  }

  async #turn(
    ctx: AgentDriveContext,
    conversation: Conversation,
    next: Extract<Next, { kind: 'turn' }>,
    totals: SessionTotals,
    signal: AbortSignal,
  ): Promise<TurnResult> {
    const running = this.#running;
    if (running === undefined) throw new Error('a turn was delivered with none running');
    const { input, turnId } = next;
    const events = ctx.session.dir.events;
    try {
      const slots = input.slots;
      // Not synced on its own: the turn's first durable record (the decision before any
      // side effect, or the turn's end) syncs it with everything before it, and the caller
      // is sent nothing the disk lacks (event-feed.ts).
      await events.append(
        'turn_started',
        turnStarted(turnId, input.requestId, slots, this.#capture(slots.prompt, input.subject)),
      );
      const work = AbortSignal.any([signal, running.abort.signal]);
      let status: TurnStatus;
      let reason: string;
      let loop: AgentLoopResult | undefined;
      try {
        // turn_completed, synced, follows the loop at once: the answer's record rides on it.
        const deps = { ...ctx.open.loopDeps, syncFinalAnswer: false };
        loop = await runAgentLoop(slots, deps, work, conversation);
        status = loop.status === 'completed' ? 'answered' : 'budget';
        reason = loop.terminalReason;
      } catch (error) {
        // The caller cancelled the turn: its calls were answered `aborted` (the loop closed
        // them); the run goes on. Anything else ends the run.
        if (!running.abort.signal.aborted || signal.aborted) throw error;
        status = 'cancelled';
        reason = 'turn/cancel';
      }
      if (loop !== undefined) totals.add(loop);
      const transcript =
        ctx.open.loopDeps.recorder.transcriptState?.() ??
        (await transcriptState(ctx.session.dir.path('transcript.jsonl')));
      await events.append(
        'turn_completed',
        {
          turnId,
          status,
          reason,
          finalAnswerChars: loop?.finalAnswer?.length ?? null,
          modelRequests: conversation.requests,
          transcriptMessages: transcript.messages,
          transcriptSha256: transcript.sha256,
        },
        true,
      );
      const result: TurnResult = {
        turnId,
        status,
        reason,
        finalAnswer: loop?.finalAnswer ?? null,
        toolCalls: loop?.toolCalls.total ?? 0,
      };
      running.done.resolve(result);
      return result;
    } catch (error) {
      running.done.reject(error);
      throw error;
    } finally {
      this.#running = undefined;
    }
  }

  /** The turn's input-capture record: cfh read the direct command from its caller. */
  #capture(prompt: string, subject: VouchedSubject | undefined): InputCaptureRecord {
    const own = captureOfPrompt(prompt);
    return {
      ...own,
      captureId: `capture-${this.#turns}`,
      surface: this.#o.surface,
      subject:
        subject === undefined
          ? own.subject
          : { uid: subject.uid ?? null, user: subject.user, vouched: true },
    };
  }
}
