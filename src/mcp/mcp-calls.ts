// The calls of an MCP client, answered inside one cfh run (`cfh mcp`): the run's driver
// (agent-run.ts's AgentDriver) opens the surface and hands it here; every `tools/call` is
// then one proposal through the same path as an agent's tool call (tool-calls.ts's
// answerTurn: checked, decided by the mediator, executed in the run's containers, labelled,
// recorded). The client's word authorizes nothing: a call that needs approval is answered
// `approval_required` with its digest unless the operator approved it (--approve,
// --approvals). Calls are answered one at a time, in the order they arrived, so the evidence
// is deterministic. The run ends when the connection closes, a budget runs out, or cfh is
// cancelled.
import type { ContentBlock, ModelMessage } from '../model/gateway.js';
import { answeredOrBlocked, type AgentDriver } from '../engine/agent/agent-drivers.js';
import type { AgentResult } from '../engine/agent/agent-request.js';
import type { AgentLoopDeps } from '../engine/agent/agent-loop.js';
import type { BudgetTracker } from '../engine/agent/budgets.js';
import { abortUnanswered, answerTurn, type ToolUse } from '../engine/agent/tool-calls.js';
import type { Ruling } from '../mediator/mediator.js';
import { fenceToolOutput } from '../engine/agent/prompt-fence.js';
import type { RunEnd } from '../engine/run/terminal.js';
import { errorObservation, type Observation } from '../tools/observation.js';
import { DraftToolRunner } from '../engine/draft/draft-runner.js';
import type { ToolRegistry } from '../tools/contract.js';

interface Opened {
  readonly deps: AgentLoopDeps;
  readonly tracker: BudgetTracker;
}

/** Where the run's evidence is, once the run directory exists. */
export interface RunEvidence {
  readonly runId: string;
  path(name: string): string;
}

/** What the driver waits on: the client closing, or a call that ended the run. */
interface Ending {
  readonly promise: Promise<RunEnd | undefined>;
  resolve(end: RunEnd | undefined): void;
}

function ending(): Ending {
  let resolve: (end: RunEnd | undefined) => void = () => undefined;
  const promise = new Promise<RunEnd | undefined>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export class McpCalls {
  readonly #registry: ToolRegistry;
  #opened: Opened | undefined;
  #evidence: RunEvidence | undefined;
  readonly #openWaiters: ((o: Opened | undefined) => void)[] = [];
  #finished = false;
  #failure: { error: unknown } | undefined;
  readonly #ending = ending();
  /** Aborted when the connection closes: every call in flight is stopped, not waited for. */
  readonly #gone = new AbortController();
  #queue: Promise<unknown> = Promise.resolve();
  #next = 1;
  #seq = 0;
  readonly #byStatus: Record<string, number> = {};
  readonly #byTool: Record<string, number> = {};

  /** `registry`: what MCP lists (tool-surface.ts); any other name is an unknown tool. */
  constructor(registry: ToolRegistry) {
    this.#registry = registry;
  }

  /**
   * The connection closed (or could not be served): the client that asked for the calls in
   * flight is gone, so they are stopped (tool_call_stopped, AH-LIFE-3) and the run ends once
   * they are recorded; nothing of a call goes on writing after the end of its client.
   */
  close(): void {
    this.#gone.abort(new Error('the MCP client closed the connection'));
    this.#ending.resolve(undefined);
    this.#release(undefined);
  }

  /** One `tools/call`, answered with its observation (never thrown at the client). */
  async call(name: string, input: unknown, signal: AbortSignal): Promise<Observation> {
    const stopped = AbortSignal.any([signal, this.#gone.signal]);
    const answer = this.#queue.then(() => this.#answer(name, input, stopped));
    this.#queue = answer.catch(() => undefined);
    return answer;
  }

  /** The driver given to executeAgentRun: serves calls until the run ends. */
  readonly driver: AgentDriver = async ({ session, request, surface, open }, signal) => {
    this.#evidence = { runId: session.plan.runId, path: (name) => session.dir.path(name) };
    // A draft session's runs_diff/runs_apply run on the host against its live copy: the
    // host runner (MCP serves no host tool) is the draft's.
    const live = session.liveDraft;
    if (live !== undefined) {
      const own = this.#registry.all().filter((t) => t.executor === 'host');
      await session.dir.events.append('draft_tools_ready', { tools: own.map((t) => t.name) }, true);
    }
    this.#opened = {
      deps: {
        ...open.loopDeps,
        registry: this.#registry,
        runners:
          live === undefined
            ? open.loopDeps.runners
            : { ...open.loopDeps.runners, host: new DraftToolRunner(live) },
      },
      tracker: open.tracker,
    };
    this.#release(this.#opened);
    const aborted = new Promise<'aborted'>((resolve) => {
      const any = AbortSignal.any([signal, open.tracker.deadline]);
      if (any.aborted) resolve('aborted');
      else
        any.addEventListener(
          'abort',
          () => {
            resolve('aborted');
          },
          { once: true },
        );
    });
    const stop = await Promise.race([this.#ending.promise, aborted]);
    this.#finished = true;
    // The call in hand is answered (or aborted, on a signal) before the containers go.
    await this.#queue;
    this.#release(undefined);
    const result = this.#result();
    if (signal.aborted) throw signal.reason;
    if (this.#failure !== undefined) throw this.#failure.error;
    if (stop === 'aborted') {
      const wall = open.tracker.budgets.maxWallTimeSeconds;
      await session.dir.events.append(
        'budget_exceeded',
        {
          budget: 'max_wall_time_seconds',
          limit: wall,
          used: Math.max(wall, open.tracker.elapsedSeconds()),
        },
        true,
      );
      return { end: { kind: 'budget', budget: 'max_wall_time_seconds' }, result };
    }
    const end = stop ?? (await answeredOrBlocked(session, request.mode, surface.blocked));
    return { end, result };
  };

  /**
   * The run's evidence (resources.ts reads it): waits, as a call does, until the run is
   * open, so a client that lists resources right after `initialized` sees the run's
   * files rather than an empty list; undefined once the run has ended without opening.
   */
  async evidence(): Promise<RunEvidence | undefined> {
    await this.#surface();
    return this.#evidence;
  }

  #release(opened: Opened | undefined): void {
    for (const w of this.#openWaiters.splice(0)) w(opened);
  }

  async #surface(): Promise<Opened | undefined> {
    if (this.#finished) return undefined;
    if (this.#opened !== undefined) return this.#opened;
    return new Promise((resolve) => this.#openWaiters.push(resolve));
  }

  async #answer(name: string, input: unknown, signal: AbortSignal): Promise<Observation> {
    const opened = await this.#surface();
    if (opened === undefined || this.#finished)
      return errorObservation('aborted', 'not run: the run has ended');
    const { deps, tracker } = opened;
    this.#seq += 1;
    const use: ToolUse = { id: `mcp-${String(this.#seq).padStart(4, '0')}`, name, input };
    const first = this.#next;
    this.#next += 1;
    // The client's proposal, in the transcript as an agent's would be (the tool_use first).
    const proposed: ModelMessage = {
      role: 'assistant',
      content: [{ type: 'tool_use', id: use.id, name: use.name, input: use.input }],
    };
    await deps.recorder.transcript(proposed);
    const exceeded = tracker.beforeToolCalls(1);
    const settled = new Map<string, Observation>();
    const decided = new Map<string, Ruling>();
    let observation: Observation;
    if (exceeded !== undefined) {
      await deps.recorder.event('budget_exceeded', { ...exceeded }, true);
      const reason = `budget_exceeded:${exceeded.budget}`;
      const aborted = await abortUnanswered([use], first, deps, settled, decided, reason);
      observation = aborted.get(use.id) ?? errorObservation('aborted', reason);
      this.#ending.resolve({ kind: 'budget', budget: exceeded.budget });
    } else {
      const s = AbortSignal.any([signal, tracker.deadline]);
      try {
        const [answered] = await answerTurn([use], first, deps, s, settled, decided);
        if (answered === undefined) throw new Error('unreachable: a call without its answer');
        // AH-CFC-7: what the client was shown joins the context it proposes under.
        if (answered.expose !== undefined) deps.cfc?.expose(answered.expose);
        observation = answered.observation;
      } catch (error) {
        const reason = signal.aborted
          ? 'cancelled'
          : tracker.deadline.aborted
            ? 'budget_exceeded:max_wall_time_seconds'
            : 'run_failed';
        // Admitted, the call was made: counted, however it ended.
        tracker.recordToolCalls(1);
        await abortUnanswered([use], first, deps, settled, decided, reason).catch(() => undefined);
        const stopped = settled.get(use.id) ?? errorObservation('aborted', `not run: ${reason}`);
        await this.#recordResult(deps, use, stopped).catch(() => undefined);
        // The run's own failure (an engine, containment or invariant failure) ends it, as
        // it ends an agent's loop: the driver throws it once this call is answered.
        if (!s.aborted) {
          this.#failure = { error };
          this.#ending.resolve(undefined);
        }
        return stopped;
      }
      tracker.recordToolCalls(1);
    }
    await this.#recordResult(deps, use, observation);
    return observation;
  }

  async #recordResult(deps: AgentLoopDeps, use: ToolUse, observation: Observation): Promise<void> {
    this.#byStatus[observation.status] = (this.#byStatus[observation.status] ?? 0) + 1;
    this.#byTool[use.name] = (this.#byTool[use.name] ?? 0) + 1;
    const result: ContentBlock = {
      type: 'tool_result',
      tool_use_id: use.id,
      is_error: observation.status !== 'success',
      content: fenceToolOutput(use.name, observation),
    };
    await deps.recorder.transcript({ role: 'user', content: [result] });
  }

  #result(): AgentResult {
    const total = Object.values(this.#byStatus).reduce((n, c) => n + c, 0);
    return {
      status: 'completed',
      terminalReason: 'client_closed',
      usage: [],
      toolCalls: { total, byStatus: this.#byStatus, byTool: this.#byTool },
    };
  }
}
