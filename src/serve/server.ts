// The methods of `cfh serve --stdio` over the session core (src/session): one session open at
// a time per process, held in its slot (session-slot.ts), claimed before an open awaits
// anything. `session/open` and `session/restore` plan the run as this process would (the
// flags it was started with, then the params); a restore must match what the session
// recorded (AH-INT-4). `turn/start` answers with the turn id at once; the turn's end is the
// `turn/completed` notification, after every event of the turn was sent. End of input or a
// signal closes the session, or cancels the one opening: the run ends and everything it
// started is removed.
import path from 'node:path';
import type { AgentOutcome, AgentRunDeps, ApprovalSetup } from '../engine/agent/agent-run.js';
import type { RunPlan } from '../engine/run/run-plan.js';
import { RUN_FILES } from '../evidence/run-directory.js';
import type { ApprovalSource } from '../mediator/approvals.js';
import { checkAuthority, type SessionAuthority } from '../session/authority.js';
import { replayEvents } from '../session/event-feed.js';
import { loadRestorable, runsOf } from '../session/restore.js';
import { claimSession } from '../session/session-claim.js';
import { Session } from '../session/session.js';
import { SessionError } from '../session/session-error.js';
import {
  METHOD_PARAMS,
  PROTOCOL,
  RPC,
  isMethod,
  type Method,
  type OpenParams,
  type ParamsOf,
  type RequestId,
} from './protocol.js';
import type { LinePeer } from './rpc.js';
import { RpcError, issuesText } from './rpc.js';
import { SessionSlot } from './session-slot.js';
import { StdioApprovals } from './stdio-approvals.js';

/** A session planned as this process would open it. */
export interface PreparedSession {
  readonly plan: RunPlan;
  readonly deps: AgentRunDeps;
  readonly approvals: ApprovalSetup;
  readonly mode: 'run' | 'plan';
  readonly authority: SessionAuthority;
}

/** What the command line gives the server: how to plan a session from its params. */
export interface ServeHost {
  /** `caller`: the approval source that asks the client; the host adds the session's rules. */
  prepare(params: OpenParams, caller: ApprovalSource): Promise<PreparedSession>;
  /** The OS user of this process (the approver, the capture's subject). */
  readonly user: string;
}

type Handler<M extends Method> = (
  params: ParamsOf<M>,
  id: RequestId | undefined,
) => Promise<unknown>;

export class SessionServer {
  readonly #peer: LinePeer;
  readonly #host: ServeHost;
  readonly #slot = new SessionSlot();
  /** Sessions closed in this process: their run directories, for replay. */
  readonly #closed = new Map<string, { runDir: string; artifactRoot: string }>();
  /** The cross-process claim each session opened here holds (session-claim.ts). */
  readonly #claims = new WeakMap<Session, () => Promise<void>>();
  #artifactRoot: string | undefined;

  constructor(peer: LinePeer, host: ServeHost) {
    this.#peer = peer;
    this.#host = host;
  }

  /** Serves until end of input or `signal`; then closes the session opened, or opening. */
  async run(signal: AbortSignal): Promise<void> {
    const onSignal = (): void => {
      void this.#slot.stop('signal', signal.reason);
    };
    signal.addEventListener('abort', onSignal, { once: true });
    const stopped = new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener(
        'abort',
        () => {
          resolve();
        },
        { once: true },
      );
    });
    try {
      // A signal stops reading too: input may never end.
      await Promise.race([
        this.#peer.serve((method, params, id) => this.#handle(method, params, id)),
        stopped,
      ]);
    } finally {
      signal.removeEventListener('abort', onSignal);
    }
    await this.#slot.stop(signal.aborted ? 'signal' : 'eof', signal.reason);
  }

  #handle(method: string, raw: unknown, id: RequestId | undefined): Promise<unknown> {
    if (!isMethod(method))
      return Promise.reject(
        new RpcError(RPC.methodNotFound, `no method ${JSON.stringify(method)}`),
      );
    const parsed = METHOD_PARAMS[method].safeParse(raw ?? {});
    if (!parsed.success)
      return Promise.reject(
        new RpcError(RPC.invalidParams, `${method}: ${issuesText(parsed.error)}`, {
          issues: parsed.error.issues.map((i) => ({
            path: i.path.map(String),
            message: i.message,
          })),
        }),
      );
    const handler = this.#handlers[method] as Handler<Method>;
    return handler(parsed.data, id);
  }

  readonly #handlers: { [M in Method]: Handler<M> } = {
    'session/open': (params) => this.#open(params, undefined),
    'session/restore': (params) => this.#open(params, params.sessionId),
    'turn/start': (params, id) => {
      const session = this.#current(params.sessionId);
      const { turnId, done } = session.startTurn({
        requestId: id ?? null,
        slots: {
          prompt: params.prompt,
          ...(params.context === undefined ? {} : { context: params.context }),
          ...(params.quoted === undefined ? {} : { quoted: params.quoted }),
        },
        subject: params.subject,
      });
      void done.then(
        async (r) => {
          await session.settle();
          this.#peer.notify('turn/completed', { sessionId: session.id, ...r });
        },
        async (error: unknown) => {
          await session.settle().catch(() => undefined);
          this.#peer.notify('turn/completed', {
            sessionId: session.id,
            turnId,
            status: 'failed',
            reason: error instanceof Error ? error.message : String(error),
            finalAnswer: null,
            toolCalls: 0,
          });
        },
      );
      return Promise.resolve({ sessionId: session.id, turnId });
    },
    'turn/cancel': (params) => {
      const turnId = this.#current(params.sessionId).cancelTurn(params.turnId);
      return Promise.resolve({ sessionId: params.sessionId, turnId, cancelling: true });
    },
    'events/replay': (params) => this.#replay(params),
    'session/close': async (params) => {
      const session = this.#current(params.sessionId);
      const outcome = await session.close('session/close');
      // Free before the answer: the caller may restore it from another process next.
      await this.#claims.get(session)?.();
      return closedResult(session, outcome);
    },
    'approval/answer': (params) => {
      const { approvalId, ...answer } = params;
      if (!this.#peer.settle(approvalId, answer))
        throw new RpcError(
          RPC.invalidParams,
          `approval/answer: no approval ${approvalId} is waiting`,
        );
      return Promise.resolve({ approvalId, accepted: true });
    },
  };

  #current(sessionId: string): Session {
    const session = this.#slot.find(sessionId);
    if (session !== undefined) return session;
    if (this.#closed.has(sessionId))
      throw new SessionError(
        'session_closed',
        `session ${sessionId} is closed`,
        { sessionId },
        'session/restore continues it',
      );
    throw new SessionError(
      'session_not_open',
      `session ${sessionId} is not open in this process`,
      {
        sessionId,
      },
      'session/open, or session/restore to continue a session of another process',
    );
  }

  async #open(params: OpenParams, restoreId: string | undefined): Promise<unknown> {
    // Before the first await: a second open meanwhile is refused, never interleaved.
    using claim = this.#slot.claim(restoreId);
    let sessionId = restoreId ?? '';
    const caller = new StdioApprovals(this.#peer, this.#host.user, () => sessionId);
    const prepared = await this.#host.prepare(params, caller);
    const root = prepared.plan.artifactRoot;
    // Claimed across processes before anything of it is read: a second process asked to
    // continue the same session at the same moment is refused, never a second tail.
    const release = await claimSession(root, restoreId ?? prepared.plan.runId);
    let session: Session;
    try {
      const restored = restoreId === undefined ? undefined : await loadRestorable(root, restoreId);
      sessionId = restored?.sessionId ?? prepared.plan.runId;
      claim.name(sessionId);
      if (restored !== undefined)
        checkAuthority(restored.sessionId, restored.authority, prepared.authority);
      session = await this.#opened(claim.signal, () =>
        Session.open({
          ...prepared,
          surface: 'stdio',
          restored,
          signal: claim.signal,
          send: (record) => {
            this.#peer.notify('event', { sessionId, runId: record.runId, record });
          },
        }),
      );
    } catch (error) {
      await release();
      throw error;
    }
    // Held while the session lives: its run's end frees it for the next restore.
    this.#claims.set(session, release);
    void session.ended.finally(release).catch(() => undefined);
    claim.fill(session);
    this.#artifactRoot = prepared.plan.artifactRoot;
    void session.ended.then(
      (outcome) => {
        this.#closed.set(session.id, {
          runDir: session.runDir,
          artifactRoot: prepared.plan.artifactRoot,
        });
        this.#peer.notify('session/closed', closedResult(session, outcome));
      },
      () => undefined,
    );
    return {
      protocol: PROTOCOL,
      sessionId: session.id,
      runId: session.runId,
      runDir: session.runDir,
      turns: session.turns,
      restoredFrom: session.restoredFrom,
    };
  }

  /** The open, unless the process stopped meanwhile: then refused, its run ended cancelled. */
  async #opened(cancel: AbortSignal, open: () => Promise<Session>): Promise<Session> {
    const stopping = (details: Record<string, unknown>): SessionError =>
      new SessionError(
        'serve_stopping',
        'cfh serve is stopping (signal): the session was not opened',
        details,
        'start another cfh serve',
      );
    try {
      cancel.throwIfAborted();
      return await open();
    } catch (error) {
      if (!cancel.aborted) throw error;
      throw stopping(error instanceof SessionError ? error.details : {});
    }
  }

  async #replay(params: ParamsOf<'events/replay'>): Promise<unknown> {
    const open = this.#slot.find(params.sessionId);
    const closed = this.#closed.get(params.sessionId);
    const root = closed?.artifactRoot ?? this.#artifactRoot;
    if (open === undefined && closed === undefined) this.#current(params.sessionId);
    const current = open?.runId ?? path.basename(closed?.runDir ?? '');
    const runId = params.runId ?? current;
    if (open !== undefined && runId === open.runId)
      return { sessionId: params.sessionId, runId, ...(await open.replay(params.fromSeq)) };
    // Another run of the session (one it restored from), or a closed session: from its file.
    if (runId !== current) {
      const runs = await runsOf(root ?? '', params.sessionId);
      if (!runs.some((r) => r.runId === runId))
        throw new SessionError(
          'session_not_open',
          `run ${runId} is no run of session ${params.sessionId}`,
          {
            sessionId: params.sessionId,
            runId,
          },
        );
    }
    const file = path.join(root ?? '', runId, RUN_FILES.events);
    return {
      sessionId: params.sessionId,
      runId,
      ...(await replayEvents(file, params.fromSeq, Number.POSITIVE_INFINITY)),
    };
  }
}

function closedResult(session: Session, outcome: AgentOutcome): Record<string, unknown> {
  return {
    sessionId: session.id,
    runId: outcome.runId,
    status: outcome.status,
    exitCode: outcome.exitCode,
    terminalReason: outcome.terminalReason,
  };
}
