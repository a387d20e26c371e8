// The one session of a `cfh serve` process. The slot is claimed synchronously, before the
// open's first await: two `session/open` (or `session/restore`) lines written together can
// never both open a run; the second is refused while the first is opening or open. A call
// naming a session that is still opening is refused typed rather than taken for a session
// that does not exist. Stopping (end of input, a signal) refuses every later open, cancels
// an opening (a signal) or waits for it (end of input), and closes the session opened, so
// nothing this process opened outlives it: its run ends with its evidence (AH-INT-5,
// AH-LIFE-3).
import type { Session, CloseReason } from '../session/session.js';
import { SessionError } from '../session/session-error.js';
import { deferred, type Deferred } from '../session/turn-records.js';

type State =
  | { readonly kind: 'empty' }
  | { readonly kind: 'opening'; readonly claim: Claim }
  | { readonly kind: 'open'; readonly session: Session };

/**
 * An open or restore in progress, holding the slot. Disposing it without a session (the open
 * failed or was refused) frees the slot.
 */
export class Claim implements Disposable {
  readonly #slot: SessionSlot;
  readonly #cancel = new AbortController();
  readonly #settled: Deferred<true> = deferred<true>();
  #sessionId: string | undefined;

  constructor(slot: SessionSlot, sessionId: string | undefined) {
    this.#slot = slot;
    this.#sessionId = sessionId;
  }

  /** Aborted when the process stops on a signal while this session is opening. */
  get signal(): AbortSignal {
    return this.#cancel.signal;
  }

  /** The session's id, once known (a restore names it; an open once it is planned). */
  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  name(sessionId: string): void {
    this.#sessionId = sessionId;
  }

  /** Settles once the open has either filled the slot or given it up. */
  get settled(): Promise<true> {
    return this.#settled.promise;
  }

  cancel(reason: unknown): void {
    this.#cancel.abort(reason);
  }

  /** The session opened: it holds the slot until its run ends. */
  fill(session: Session): void {
    this.#slot.fill(this, session);
    this.#settled.resolve(true);
  }

  [Symbol.dispose](): void {
    this.#slot.release(this);
    this.#settled.resolve(true);
  }
}

export class SessionSlot {
  #state: State = { kind: 'empty' };
  #stopping: CloseReason | undefined;

  /** Takes the slot for an open (restoreId: the session a restore continues); never awaits. */
  claim(restoreId: string | undefined): Claim {
    if (this.#stopping !== undefined)
      throw new SessionError(
        'serve_stopping',
        `cfh serve is stopping (${this.#stopping}): no session opens`,
        { reason: this.#stopping },
        'start another cfh serve',
      );
    const state = this.#state;
    if (state.kind !== 'empty') {
      const id = state.kind === 'open' ? state.session.id : (state.claim.sessionId ?? null);
      throw new SessionError(
        'session_open',
        state.kind === 'open'
          ? `session ${state.session.id} is open in this process`
          : `a session${id === null ? '' : ` (${id})`} is opening in this process`,
        { sessionId: id, state: state.kind },
        'one session at a time per process: close it first (session/close)',
      );
    }
    const claim = new Claim(this, restoreId);
    this.#state = { kind: 'opening', claim };
    return claim;
  }

  /**
   * The open session named `sessionId`; undefined if none is. One still opening under that
   * id is refused: it is not open yet, and the caller waits for its open's answer.
   */
  find(sessionId: string): Session | undefined {
    const state = this.#state;
    if (state.kind === 'open') return state.session.id === sessionId ? state.session : undefined;
    if (state.kind === 'opening' && state.claim.sessionId === sessionId)
      throw new SessionError(
        'session_opening',
        `session ${sessionId} is still opening`,
        { sessionId },
        'wait for the answer to its session/open or session/restore',
      );
    return undefined;
  }

  fill(claim: Claim, session: Session): void {
    if (this.#state.kind !== 'opening' || this.#state.claim !== claim)
      throw new Error('a session filled a slot its claim does not hold');
    this.#state = { kind: 'open', session };
    void session.ended.then(
      () => {
        if (this.#state.kind === 'open' && this.#state.session === session)
          this.#state = { kind: 'empty' };
      },
      () => undefined,
    );
  }

  release(claim: Claim): void {
    if (this.#state.kind === 'opening' && this.#state.claim === claim)
      this.#state = { kind: 'empty' };
  }

  /**
   * No session opens from now on; one opening is cancelled on a signal (`cause`: the
   * signal's reason, which the run records) or waited for at end of input; then the open
   * session is closed and its run ends.
   */
  async stop(reason: CloseReason, cause?: unknown): Promise<void> {
    this.#stopping ??= reason;
    const state = this.#state;
    if (state.kind === 'opening') {
      if (reason === 'signal') state.claim.cancel(cause);
      await state.claim.settled;
    }
    const now = this.#state;
    if (now.kind === 'open') await now.session.close(reason).catch(() => undefined);
  }
}
