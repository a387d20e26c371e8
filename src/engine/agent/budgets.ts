// Hard limits of an agent run (AH-LIFE-4): each from the profile, with CLI
// overrides. Charging past a limit reports which one, so the terminal reason can name it.
// The token and cost budgets are ceilings: before each model request the worst case it can
// cost is reserved (`reserve`), a request that cannot be afforded is never sent, and the
// request's max_tokens is capped at what is left; after it, what the provider billed is
// charged (`recordModelTurn`).
export interface Budgets {
  readonly maxModelTurns: number;
  readonly maxToolCalls: number;
  readonly maxParallelToolCalls: number;
  readonly maxWallTimeSeconds: number;
  readonly maxInputTokens: number;
  readonly maxOutputTokens: number;
  /** In the rate card's currency; undefined: no cost limit. */
  readonly maxTotalCost: number | undefined;
  readonly maxToolResultChars: number;
  readonly maxRetriesPerModelCall: number;
  readonly maxRetriesPerToolCall: number;
  /** Children side by side at most, and levels of delegation below this run (AH-DEL). */
  readonly maxParallelChildren?: number | undefined;
  readonly maxDelegationDepth?: number | undefined;
}

export type BudgetName =
  | 'max_model_turns'
  | 'max_tool_calls'
  | 'max_parallel_tool_calls'
  | 'max_wall_time_seconds'
  | 'max_input_tokens'
  | 'max_output_tokens'
  | 'max_total_cost';

export interface BudgetExceeded {
  readonly budget: BudgetName;
  readonly limit: number;
  readonly used: number;
  /** max_total_cost only: an attempt the rate card cannot price, so the limit cannot hold. */
  readonly unpriced?: true;
  /** A request refused before it was sent: the worst case it would have added to `used`. */
  readonly reserved?: number;
}

/** Per-token prices of the requested model (the rate card's, divided by a million). */
export interface TokenPrices {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
}

/** What one request may cost at most, as the loop found it before sending it. */
export interface RequestReservation {
  /** The request's counted (or bounded) input tokens. */
  readonly inputTokens: number;
  /** The request's max_tokens: min(the per-request cap, what the budgets leave). */
  readonly maxTokens: number;
  /** Worst-case cost of the request, when a cost limit is set. */
  readonly cost?: number;
}

/** What the provider billed for one attempt, as charged to the budgets. */
export interface BilledTurn {
  /** Every input kind the provider bills: input + cache_creation + cache_read. */
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cost?: TurnCost;
}

/** What a finished child used, as its parent is charged for it. */
export interface ChildUse {
  readonly turns: number;
  readonly calls: number;
  readonly input: number;
  readonly output: number;
  readonly cost: number | 'unpriced';
}

/** A model turn's charge: its estimated cost, or `unpriced` when the card has no price. */
export type TurnCost = number | 'unpriced' | undefined;

export class BudgetTracker {
  readonly budgets: Budgets;
  readonly #startedAt: number;
  #modelTurns = 0;
  #toolCalls = 0;
  /**
   * Calls admitted by beforeToolCalls and not yet recorded: a turn's own calls (its delegate
   * calls among them) count against what a child's slice may take while they run.
   */
  #inFlightCalls = 0;
  #inputTokens = 0;
  #outputTokens = 0;
  #cost = 0;
  #unpriced = false;
  #pauseDepth = 0;
  #pausedAt = 0;
  #pausedMs = 0;
  #deadline: AbortController | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** What running children's slices hold back (AH-DEL, AH-USAGE-2): carve() and settle(). */
  readonly #held = { turns: 0, calls: 0, input: 0, output: 0, cost: 0 };
  /** What finished children used: charged to these limits, reported apart (AH-USAGE-2). */
  readonly #descendants = { turns: 0, calls: 0, input: 0, output: 0, cost: 0 };
  #descendantsUnpriced = false;

  constructor(budgets: Budgets, now: number = Date.now()) {
    this.budgets = budgets;
    this.#startedAt = now;
  }

  /** Before a model turn: may one more start? (Tokens and cost: `reserve`.) */
  beforeModelTurn(now: number = Date.now()): BudgetExceeded | undefined {
    return (
      this.#wallTime(now) ??
      exceeded(
        'max_model_turns',
        this.budgets.maxModelTurns,
        this.#modelTurns + this.#held.turns + 1,
      )
    );
  }

  /**
   * A child's budget slice (AH-DEL, "Budgets"): for each limit, the least of what the child
   * asks (its profile's budgets) and an equal share of what this run has neither used nor
   * lent to a running child: what is left divided by `shares` (the most children that may
   * run side by side), at least one. The slice is held until settle(), so the parent and
   * its descendants together stay within these limits however many children run, and a
   * sibling started later still finds a share. A limit with nothing left refuses the child.
   */
  carve(requested: Budgets, shares = 1, now: number = Date.now()): Budgets | BudgetExceeded {
    const b = this.budgets;
    const h = this.#held;
    const left = {
      turns: b.maxModelTurns - this.#modelTurns - h.turns,
      calls: b.maxToolCalls - this.#toolCalls - this.#inFlightCalls - h.calls,
      input: b.maxInputTokens - this.#inputTokens - h.input,
      output: b.maxOutputTokens - this.#outputTokens - h.output,
      wall: b.maxWallTimeSeconds - this.elapsedSeconds(now),
    };
    const none = (budget: BudgetName, limit: number, used: number): BudgetExceeded => ({
      budget,
      limit,
      used,
      reserved: 1,
    });
    if (left.turns < 1)
      return none('max_model_turns', b.maxModelTurns, b.maxModelTurns - left.turns);
    if (left.calls < 1) return none('max_tool_calls', b.maxToolCalls, b.maxToolCalls - left.calls);
    if (left.input < 1)
      return none('max_input_tokens', b.maxInputTokens, b.maxInputTokens - left.input);
    if (left.output < 1)
      return none('max_output_tokens', b.maxOutputTokens, b.maxOutputTokens - left.output);
    if (left.wall <= 0)
      return none('max_wall_time_seconds', b.maxWallTimeSeconds, b.maxWallTimeSeconds);
    let maxTotalCost = requested.maxTotalCost;
    if (b.maxTotalCost !== undefined) {
      const costLeft = b.maxTotalCost - this.#cost - h.cost;
      if (this.#unpriced || costLeft <= 0)
        return { budget: 'max_total_cost', limit: b.maxTotalCost, used: this.cost, reserved: 0 };
      maxTotalCost = round8(Math.min(maxTotalCost ?? costLeft, costLeft / shares));
    }
    const share = (n: number): number => Math.max(1, Math.floor(n / shares));
    const slice: Budgets = {
      ...requested,
      maxModelTurns: Math.min(requested.maxModelTurns, share(left.turns)),
      maxToolCalls: Math.min(requested.maxToolCalls, share(left.calls)),
      maxInputTokens: Math.min(requested.maxInputTokens, share(left.input)),
      maxOutputTokens: Math.min(requested.maxOutputTokens, share(left.output)),
      // Time is not lent: siblings run at once, each within what the parent has left.
      maxWallTimeSeconds: Math.min(requested.maxWallTimeSeconds, left.wall),
      maxTotalCost,
    };
    h.turns += slice.maxModelTurns;
    h.calls += slice.maxToolCalls;
    h.input += slice.maxInputTokens;
    h.output += slice.maxOutputTokens;
    h.cost +=
      slice.maxTotalCost !== undefined && b.maxTotalCost !== undefined ? slice.maxTotalCost : 0;
    return slice;
  }

  /**
   * A child ended: its slice is released and what it used is charged to these limits (so
   * they hold over the tree) and kept apart for the report (AH-USAGE-2).
   */
  settle(slice: Budgets, used: ChildUse): void {
    const b = this.budgets;
    const h = this.#held;
    h.turns -= slice.maxModelTurns;
    h.calls -= slice.maxToolCalls;
    h.input -= slice.maxInputTokens;
    h.output -= slice.maxOutputTokens;
    h.cost -=
      slice.maxTotalCost !== undefined && b.maxTotalCost !== undefined ? slice.maxTotalCost : 0;
    for (const k of ['turns', 'calls', 'input', 'output', 'cost'] as const)
      h[k] = Math.max(0, h[k]);
    this.#modelTurns += used.turns;
    this.#toolCalls += used.calls;
    this.#inputTokens += used.input;
    this.#outputTokens += used.output;
    if (used.cost === 'unpriced') this.#unpriced = true;
    else this.#cost += used.cost;
    const d = this.#descendants;
    d.turns += used.turns;
    d.calls += used.calls;
    d.input += used.input;
    d.output += used.output;
    if (used.cost === 'unpriced') this.#descendantsUnpriced = true;
    else d.cost = round8(d.cost + used.cost);
  }

  /**
   * What finished children used in all (already inside snapshot()'s totals); the cost is
   * `unpriced` once a child's was.
   */
  descendants(): ChildUse {
    const d = this.#descendants;
    return { ...d, cost: this.#descendantsUnpriced ? 'unpriced' : d.cost };
  }

  /**
   * Before sending a request of `inputTokens` (counted or bounded) with at most `cap` output
   * tokens: its max_tokens, capped at what max_output_tokens and max_total_cost leave, or the
   * budget it cannot fit. `prices` undefined with a cost limit: the request cannot be priced,
   * so it is not sent (fail closed).
   */
  reserve(
    inputTokens: number,
    cap: number,
    prices: TokenPrices | undefined,
  ): RequestReservation | BudgetExceeded {
    const b = this.budgets;
    if (this.#inputTokens + this.#held.input + inputTokens > b.maxInputTokens)
      return {
        budget: 'max_input_tokens',
        limit: b.maxInputTokens,
        used: this.#inputTokens,
        reserved: inputTokens,
      };
    let maxTokens = Math.min(cap, b.maxOutputTokens - this.#outputTokens - this.#held.output);
    if (maxTokens < 1)
      return {
        budget: 'max_output_tokens',
        limit: b.maxOutputTokens,
        used: this.#outputTokens,
        reserved: 1,
      };
    const limit = b.maxTotalCost;
    if (limit === undefined) return { inputTokens, maxTokens };
    const unpriced = this.#costCheck(true);
    if (unpriced !== undefined) return unpriced;
    if (prices === undefined)
      return { budget: 'max_total_cost', limit, used: this.cost, unpriced: true };
    // Every input token at the dearest input kind: the provider decides what is cached.
    const inputCost = inputTokens * Math.max(prices.input, prices.cacheWrite, prices.cacheRead);
    const left = limit - this.#cost - this.#held.cost - inputCost;
    // The epsilon absorbs float division (0.00075 / 5e-6 = 149.99999999999997).
    const affordable = prices.output > 0 ? Math.floor(left / prices.output + 1e-9) : maxTokens;
    if (left < 0 || affordable < 1)
      return {
        budget: 'max_total_cost',
        limit,
        used: this.cost,
        reserved: round8(inputCost + prices.output),
      };
    maxTokens = Math.min(maxTokens, affordable);
    return { inputTokens, maxTokens, cost: round8(inputCost + maxTokens * prices.output) };
  }

  /** After a model turn: what the provider billed (see BilledTurn). */
  recordModelTurn(usage: BilledTurn): BudgetExceeded | undefined {
    this.#modelTurns += 1;
    this.#inputTokens += usage.inputTokens;
    this.#outputTokens += usage.outputTokens;
    if (usage.cost === 'unpriced') this.#unpriced = true;
    else this.#cost += usage.cost ?? 0;
    return (
      exceeded('max_input_tokens', this.budgets.maxInputTokens, this.#inputTokens) ??
      exceeded('max_output_tokens', this.budgets.maxOutputTokens, this.#outputTokens) ??
      this.#costCheck(false)
    );
  }

  /** The estimated cost charged so far, in the rate card's currency. */
  get cost(): number {
    return round8(this.#cost);
  }

  /**
   * With a cost limit, an attempt the rate card cannot price exhausts it: the limit could no
   * longer be kept, so the run stops rather than spend blind (fail closed).
   */
  #costCheck(atLimit: boolean): BudgetExceeded | undefined {
    const limit = this.budgets.maxTotalCost;
    if (limit === undefined) return undefined;
    if (this.#unpriced) return { budget: 'max_total_cost', limit, used: this.cost, unpriced: true };
    return exceeded('max_total_cost', limit, this.cost, atLimit);
  }

  /**
   * Before executing `count` tool calls proposed in one turn. Admitted, they are in flight
   * until recordToolCalls: a child carved meanwhile (a delegate call of this very turn) finds
   * them taken, so the calls and the slices they carry stay within maxToolCalls together.
   */
  beforeToolCalls(count: number, now: number = Date.now()): BudgetExceeded | undefined {
    const over =
      this.#wallTime(now) ??
      exceeded('max_parallel_tool_calls', this.budgets.maxParallelToolCalls, count) ??
      exceeded(
        'max_tool_calls',
        this.budgets.maxToolCalls,
        this.#toolCalls + this.#inFlightCalls + this.#held.calls + count,
      );
    if (over === undefined) this.#inFlightCalls += count;
    return over;
  }

  /** Calls admitted by beforeToolCalls have ended (answered, refused or failed). */
  recordToolCalls(count: number): void {
    this.#inFlightCalls = Math.max(0, this.#inFlightCalls - count);
    this.#toolCalls += count;
  }

  /**
   * The agent's time: waiting for a person to approve a call is not counted (docs/operators.md,
   * "Approvals"), so a run is not ended by the wall-time budget while someone reads a prompt.
   */
  elapsedSeconds(now: number = Date.now()): number {
    const paused = this.#pausedMs + (this.#pauseDepth > 0 ? now - this.#pausedAt : 0);
    return (now - this.#startedAt - paused) / 1000;
  }

  /** Aborts when max_wall_time_seconds of the agent's time have passed (pauses excluded). */
  get deadline(): AbortSignal {
    if (this.#deadline === undefined) {
      this.#deadline = new AbortController();
      this.#arm();
    }
    return this.#deadline.signal;
  }

  pause(now: number = Date.now()): void {
    if (this.#pauseDepth++ > 0) return;
    this.#pausedAt = now;
    clearTimeout(this.#timer);
  }

  resume(now: number = Date.now()): void {
    if (this.#pauseDepth === 0 || --this.#pauseDepth > 0) return;
    this.#pausedMs += now - this.#pausedAt;
    this.#arm();
  }

  /** Stops the deadline's timer (the run is over). */
  close(): void {
    clearTimeout(this.#timer);
  }

  #arm(): void {
    const controller = this.#deadline;
    if (controller === undefined || controller.signal.aborted) return;
    const left = this.budgets.maxWallTimeSeconds * 1000 - this.elapsedSeconds() * 1000;
    this.#timer = setTimeout(
      () => {
        controller.abort(new Error('max_wall_time_seconds'));
      },
      Math.max(0, left),
    );
    this.#timer.unref();
  }

  /** What the governance record shows of the budgets when a call is decided. */
  snapshot(now: number = Date.now()): {
    model_turns: number;
    tool_calls: number;
    input_tokens: number;
    output_tokens: number;
    estimated_cost: number | null;
    elapsed_seconds: number;
  } {
    return {
      model_turns: this.#modelTurns,
      tool_calls: this.#toolCalls,
      input_tokens: this.#inputTokens,
      output_tokens: this.#outputTokens,
      estimated_cost: this.#unpriced ? null : this.cost,
      elapsed_seconds: Math.round(this.elapsedSeconds(now) * 1000) / 1000,
    };
  }

  #wallTime(now: number): BudgetExceeded | undefined {
    const seconds = this.elapsedSeconds(now);
    return exceeded('max_wall_time_seconds', this.budgets.maxWallTimeSeconds, seconds, true);
  }
}

/**
 * Passing a limit exceeds it. With `atLimit`, reaching it does too: before a new turn, a
 * token budget with nothing left is exhausted, and so is the wall time.
 */
function exceeded(
  budget: BudgetName,
  limit: number,
  used: number,
  atLimit = false,
): BudgetExceeded | undefined {
  const over = atLimit ? used >= limit : used > limit;
  return over ? { budget, limit, used } : undefined;
}

function round8(n: number): number {
  return Math.round(n * 1e8) / 1e8;
}
