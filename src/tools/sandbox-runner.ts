// Runs an authorized built-in call in the run's tool containers (tool-executor.ts): the
// tool's command for the authorized arguments, bounded by the lowest of the tool's timeout,
// the profile's cap and the call's own (exec's `timeout`), and the tool's own reading of the
// result. A call that had to be stopped (its time, the run's or the turn's cancellation) is
// recorded as stopped once nothing of it runs, before its outcome is (AH-LIFE-3, AH-INT-5).
import { HarnessInvariantError } from '../errors.js';
import { isAuthorized, type AuthorizedCall } from '../mediator/mediator.js';
import type { BuiltinTool } from './builtins.js';
import type { CallStop } from './call-supervisor.js';
import type { ToolOutcome, ToolRunner } from './runner.js';
import type { ToolExecutor } from './tool-executor.js';

/** Records a stopped call (the evidence's tool_call_stopped). */
export type StopRecorder = (
  stop: CallStop & { readonly callId: string; readonly tool: string },
) => Promise<void>;

export class SandboxToolRunner implements ToolRunner {
  readonly #tools: ReadonlyMap<string, BuiltinTool>;
  readonly #executor: ToolExecutor;
  readonly #capMs: number;
  readonly #mounts: readonly string[];
  readonly #recordStop: StopRecorder;

  /** `mounts`: the target of every mount of the run's containers (the file helper's boundary). */
  constructor(
    tools: readonly BuiltinTool[],
    executor: ToolExecutor,
    capMs: number,
    mounts: readonly string[],
    recordStop: StopRecorder,
  ) {
    this.#tools = new Map(tools.map((t) => [t.name, t]));
    this.#executor = executor;
    this.#capMs = capMs;
    this.#mounts = mounts;
    this.#recordStop = recordStop;
  }

  async run(call: AuthorizedCall, limitChars: number, signal: AbortSignal): Promise<ToolOutcome> {
    const tool = this.#tools.get(call.tool.name);
    if (!isAuthorized(call) || tool === undefined || tool !== call.tool) {
      throw new HarnessInvariantError(
        'unauthorized_call',
        `the sandbox runner was handed ${call.tool.name} without the mediator's authorization`,
        { tool: call.tool.name },
      );
    }
    const { argv, stdin } = tool.command(call.args, {
      maxChars: limitChars,
      mounts: this.#mounts,
    });
    const execution = await this.#executor.run(argv, {
      runsIn: tool.runsIn,
      stdin,
      timeoutMs: Math.min(
        tool.timeoutMs,
        this.#capMs,
        tool.callTimeoutMs?.(call.args) ?? Number.POSITIVE_INFINITY,
      ),
      maxOutputBytes: tool.resultSizeLimitChars * 4,
      signal,
      onStop: (stop) => this.#recordStop({ callId: call.callId, tool: tool.name, ...stop }),
    });
    return {
      observation: tool.observe(execution, call.args),
      stdout: execution.stdout,
      stderr: execution.stderr,
      exitCode: execution.exitCode,
      durationMs: execution.durationMs,
      where: execution.containerId,
      timedOut: execution.timedOut,
    };
  }
}
