// Runs an authorized built-in call in the run's tool containers (tool-executor.ts): the
// tool's command for the authorized arguments, bounded by the lowest of the tool's timeout,
// the profile's cap and the call's own (exec's `timeout`), and the tool's own reading of the result.
import { HarnessInvariantError } from '../errors.js';
import { isAuthorized, type AuthorizedCall } from '../mediator/mediator.js';
import type { BuiltinTool } from './builtins.js';
import type { ToolOutcome, ToolRunner } from './runner.js';
import type { ToolExecutor } from './tool-executor.js';

export class SandboxToolRunner implements ToolRunner {
  readonly #tools: ReadonlyMap<string, BuiltinTool>;
  readonly #executor: ToolExecutor;
  readonly #capMs: number;
  readonly #mounts: readonly string[];

  /** `mounts`: the target of every mount of the run's containers (the file helper's boundary). */
  constructor(
    tools: readonly BuiltinTool[],
    executor: ToolExecutor,
    capMs: number,
    mounts: readonly string[],
  ) {
    this.#tools = new Map(tools.map((t) => [t.name, t]));
    this.#executor = executor;
    this.#capMs = capMs;
    this.#mounts = mounts;
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
