// A counting gate: at most `width` holders at once, the rest wait in order. Entering takes a
// signal (a cancelled wait leaves the queue); the pass is AsyncDisposable, so `await using`
// lets the next one in on every path.
export class Gate {
  readonly #width: number;
  #inside = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(width: number) {
    if (!Number.isInteger(width) || width < 1) throw new Error(`gate width ${String(width)}`);
    this.#width = width;
  }

  async enter(signal: AbortSignal): Promise<AsyncDisposable> {
    signal.throwIfAborted();
    if (this.#inside >= this.#width) {
      await new Promise<void>((resolve, reject) => {
        const go = (): void => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = (): void => {
          const at = this.#waiting.indexOf(go);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        };
        this.#waiting.push(go);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    } else {
      this.#inside += 1;
    }
    let left = false;
    return {
      [Symbol.asyncDispose]: () => {
        if (!left) {
          left = true;
          const next = this.#waiting.shift();
          // The place passes to the next in line; otherwise it is free.
          if (next === undefined) this.#inside -= 1;
          else next();
        }
        return Promise.resolve();
      },
    };
  }
}
