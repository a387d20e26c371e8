// An `exec` host tool's calls: the declared argv template with each `{field}` replaced by the
// validated value as one whole argument (no shell, so nothing in a value is ever parsed as
// syntax), run by execa with cfh's clean environment plus the declared one, in its own
// process group, bounded by the tool's timeout (the whole tree killed) and output cap. The
// tree is ended after every call too: nothing it started outlives the call.
import { execa } from 'execa';
import { z } from 'zod';
import type { ExecHostTool } from '../../config/host-tools-schema.js';
import { onAbort } from '../../abort.js';
import { HostToolError, errorMessage } from '../../errors.js';
import { HOST_BASE_ENV, HOST_PROCESS_MARKER, stopTree } from './host-process.js';
import type { HostLaunch } from './host-launch.js';
import { assertPinned } from './host-pin.js';
import type { PlannedHostTool } from './host-plan.js';
import { execObservation, type Sanitizer } from './host-results.js';
import type { HostTool } from './host-tool.js';
import type { ChannelOutcome, HostChannel } from './host-channel.js';

const PLACEHOLDER = /^\{([A-Za-z_][A-Za-z0-9_]{0,63})\}$/;
const Args = z.record(z.string(), z.union([z.string(), z.number()]));

/** The argv for validated arguments: a `{field}` is replaced whole, never spliced. */
export function fillArgv(template: readonly string[], args: unknown): string[] {
  const values = Args.parse(args);
  return template.map((arg) => {
    const m = PLACEHOLDER.exec(arg);
    if (m === null) return arg;
    const value = values[m[1] ?? ''];
    if (value === undefined) throw new Error(`argument {${m[1] ?? ''}} has no value`);
    return String(value);
  });
}

export class ExecChannel implements HostChannel {
  readonly #planned: PlannedHostTool;
  readonly #entry: ExecHostTool;
  readonly #launch: HostLaunch;

  constructor(planned: PlannedHostTool, entry: ExecHostTool, launch: HostLaunch) {
    this.#planned = planned;
    this.#entry = entry;
    this.#launch = launch;
  }

  async run(
    tool: HostTool,
    args: unknown,
    callId: string,
    sanitizer: Sanitizer,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ChannelOutcome> {
    signal.throwIfAborted();
    const argv = fillArgv(this.#entry.argv, args);
    const [, ...rest] = argv;
    const launch = this.#launch;
    // What runs is what planning checked: the same objects, the same content (AH-TOOL-7).
    await assertPinned(this.#entry.name, this.#planned.pins, launch.sink, {
      purpose: 'call',
      callId,
    });
    const entry = await launch.ledger.open(
      launch.runId,
      this.#entry.name,
      launch.owner,
      this.#planned.program,
    );
    const timer = new AbortController();
    const started = performance.now();
    // By the real path the pin names, not by a name a link could send elsewhere.
    const child = execa(this.#planned.executable, rest, {
      argv0: this.#planned.program,
      cwd: this.#planned.cwd,
      env: {
        ...HOST_BASE_ENV,
        ...this.#planned.env.env,
        [HOST_PROCESS_MARKER]: entry.record.marker,
      },
      extendEnv: false,
      shell: false,
      detached: true,
      stdin: 'ignore',
      encoding: 'buffer',
      // Past the cap by the longest credential spelling: scrubbed before it is cut.
      maxBuffer: this.#entry.outputBytes + sanitizer.margin,
      reject: false,
      cleanup: false,
    });
    const pid = child.pid;
    if (pid !== undefined) await entry.started(pid);
    await launch.sink.event('host_tool_started', {
      tool: this.#entry.name,
      kind: 'exec',
      callId,
      pid: pid ?? null,
      start: entry.record.start ?? null,
    });
    // Timeout and cancellation end the whole group, not only the direct child.
    const kill = (): void => {
      stopTree(pid, entry.record.start, entry.record.marker, 0).catch(() => undefined);
    };
    const timeout = setTimeout(() => {
      timer.abort();
      kill();
    }, timeoutMs);
    // A cancellation while the start was being recorded ends it too, at once.
    const aborting = onAbort(signal, kill);
    let result: Awaited<typeof child>;
    try {
      result = await child;
    } finally {
      clearTimeout(timeout);
      aborting[Symbol.dispose]();
    }
    const { strays } = await stopTree(pid, entry.record.start, entry.record.marker, 0);
    await entry.close();
    const durationMs = Math.round(performance.now() - started);
    await launch.sink.event('host_tool_stopped', {
      tool: this.#entry.name,
      callId,
      pid: pid ?? null,
      reason: timer.signal.aborted ? 'timeout' : signal.aborted ? 'cancelled' : 'exited',
      exitCode: result.exitCode ?? null,
      signal: result.signal ?? null,
      strays,
    });
    signal.throwIfAborted();
    if (result.failed && result.exitCode === undefined && result.signal === undefined) {
      // It never ran (a spawn failure): the tool's setup is broken, not the model's call.
      throw new HostToolError(
        'host_tool_spawn_failed',
        `host tool ${this.#entry.name}: cannot run ${this.#planned.program}: ${sanitizer.evidenceText(errorMessage(result.cause ?? result.shortMessage))}`,
        { tool: this.#entry.name },
      );
    }
    const cap = this.#entry.outputBytes;
    const out = sanitizer.scrubThenCut(Buffer.from(result.stdout), cap, result.isMaxBuffer);
    const err = sanitizer.scrubThenCut(Buffer.from(result.stderr), cap, result.isMaxBuffer);
    const stdout = out.bytes;
    const stderr = err.bytes;
    const shown = execObservation(
      {
        exitCode: result.exitCode,
        signal: result.signal,
        stdout,
        stdoutCut: out.cut,
        timedOut: timer.signal.aborted,
        timeoutMs,
      },
      sanitizer,
      this.#entry.output,
      tool.resources,
    );
    return {
      observation: shown.observation,
      raw: sanitizer.forEvidence(stdout),
      rawStderr: sanitizer.forEvidence(stderr),
      created: shown.created,
      exitCode: result.exitCode ?? null,
      durationMs,
      timedOut: timer.signal.aborted,
    };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
