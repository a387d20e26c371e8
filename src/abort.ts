// An abort listener that cannot miss its abort. `addEventListener('abort')` on a signal that
// is already aborted never fires, so a listener added after an await would not hear an abort
// that came during it, and the work it should stop runs on to its own timeout.
const NOTHING: Disposable = { [Symbol.dispose]: () => undefined };

/** Calls `act` once the signal aborts, or now if it has; disposing stops listening. */
export function onAbort(signal: AbortSignal | undefined, act: () => void): Disposable {
  if (signal === undefined) return NOTHING;
  if (signal.aborted) {
    act();
    return NOTHING;
  }
  signal.addEventListener('abort', act, { once: true });
  return {
    [Symbol.dispose]: () => {
      signal.removeEventListener('abort', act);
    },
  };
}
