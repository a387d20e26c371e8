// One `cfh sandbox run -- CMD`: the work of a command run inside its run session
// (run-session.ts owns preflight, evidence, disposal and the terminal record). The work is
// one container: created, attached before start (no output lost), started, waited for,
// stopped by the wall-time limit or a cancellation, and removed on every path.
import { WrittenNotes } from '../cfc/written-notes.js';
import { finished } from 'node:stream/promises';
import type { Logger } from '../../log.js';
import { CfhError, ContainmentError, EngineError, errorMessage } from '../../errors.js';
import { holdTether } from './command-tether.js';
import { OutputCapture, type CaptureResult } from '../../evidence/output-capture.js';
import type { RunDirectory } from '../../evidence/run-directory.js';
import type { CreatedContainer, StartedContainer, TerminalSize } from '../../substrate/runtime.js';
import type { RunPlan } from '../run/run-plan.js';
import type { Assurance } from '../run/snapshot.js';
import {
  errorRecord,
  type ErrorRecord,
  type ResourcesRecord,
  runSession,
  type RunDeps,
  type RunSession,
  type RunWork,
  type SessionTimes,
} from '../run/run-session.js';
import { patchReport, type PatchReport } from '../run/run-summary.js';
import type { HostObeyedReport } from '../run/rw-sweep.js';
import { cancelSignalOf, type RunEnd, type TerminalStatus } from '../run/terminal.js';

export type { RunDeps } from '../run/run-session.js';

/** How long to wait for output streams to drain after the container exited. */
const OUTPUT_DRAIN_MS = 5_000;
const JSON_OUTPUT_BYTES = 1024 * 1024;

export interface RunIo {
  /** Live destinations; undefined captures only (--json). */
  readonly stdout?: NodeJS.WritableStream | undefined;
  readonly stderr?: NodeJS.WritableStream | undefined;
  /** `-i`: what the command's stdin receives (the plan's spec says `stdin: forwarded`). */
  readonly stdin?: NodeJS.ReadableStream | undefined;
  /** `-t`: the operator's terminal, whose size the command's follows. */
  readonly terminal?: TerminalSizeSource | undefined;
}

export interface TerminalSizeSource {
  size(): TerminalSize | undefined;
  /** Calls `listener` on every resize (SIGWINCH); returns the unsubscribe. */
  onResize(listener: () => void): () => void;
}

export interface RunTimings {
  readonly preflightMs: number;
  readonly createMs: number;
  readonly startMs: number;
  readonly runMs: number;
  readonly cleanupMs: number;
  readonly totalMs: number;
}

export interface RunOutcome {
  readonly runId: string;
  readonly status: TerminalStatus;
  readonly exitCode: number;
  readonly commandExitCode: number | null;
  readonly oomKilled: boolean;
  readonly terminalReason: string;
  readonly artifactDir: string;
  readonly stdout: { text: string; truncated: boolean };
  readonly stderr: { text: string; truncated: boolean };
  readonly timings: RunTimings;
  readonly assurance: Assurance;
  /** What the run's container used (report.json `resources`). */
  readonly resources: ResourcesRecord;
  /** As report.json has it: the code and the failing boundary (AH-DIAG-1), or null. */
  readonly error: ErrorRecord | null;
  /** Draft mode: the patch waiting for `cfh runs apply`; null otherwise. */
  readonly patch: PatchReport | null;
  /** Host-obeyed paths the run created or changed in its host rw mounts (class 9). */
  readonly hostObeyed: HostObeyedReport | undefined;
}

/** What the command's container did, for the report. */
interface CommandResult {
  readonly containerId: string | null;
  readonly removed: boolean;
  readonly commandExitCode: number | null;
  readonly oomKilled: boolean;
  readonly outputs: { stdout: CaptureResult; stderr: CaptureResult };
  readonly createMs: number;
  readonly startMs: number;
  readonly runMs: number;
}

export async function executeSandboxRun(
  plan: RunPlan,
  deps: RunDeps,
  io: RunIo,
  signal: AbortSignal,
): Promise<RunOutcome> {
  const captures: { stdout?: OutputCapture; stderr?: OutputCapture } = {};
  let last: CommandResult | undefined;
  const work: RunWork<CommandResult> = {
    kind: 'command',
    snapshot: (common) => common,
    run: async (session, s) => {
      const r = await runCommand(session, io, s, captures, (partial) => {
        last = partial;
      });
      last = r.result;
      return r;
    },
    report: (result, _terminal, times) => {
      const r = result ?? last;
      return {
        commandExitCode: r?.commandExitCode ?? null,
        oomKilled: r?.oomKilled ?? false,
        container: {
          id: r?.containerId ?? null,
          name: plan.spec.name,
          removed: r?.removed ?? false,
        },
        outputs: relativeOutputs(captures),
        // With a TTY, outputs/stdout is the session's transcript (stderr is merged in it).
        io: { stdin: plan.spec.stdin ?? 'null', tty: plan.spec.tty === true },
        timings: timingsOf(r, times),
      };
    },
  };
  const outcome = await runSession(plan, deps, work, signal);
  const r = outcome.result ?? last;
  captures.stdout?.destroy();
  captures.stderr?.destroy();
  return {
    runId: outcome.runId,
    status: outcome.terminal.status,
    exitCode: outcome.terminal.exitCode,
    commandExitCode: r?.commandExitCode ?? null,
    oomKilled: r?.oomKilled ?? false,
    terminalReason: outcome.terminal.reason,
    artifactDir: outcome.artifactDir,
    stdout: captures.stdout?.text() ?? { text: '', truncated: false },
    stderr: captures.stderr?.text() ?? { text: '', truncated: false },
    timings: timingsOf(r, outcome.times),
    assurance: outcome.assurance,
    resources: outcome.resources,
    error: errorRecord(outcome.error),
    patch: patchReport(outcome.patch),
    hostObeyed: outcome.hostObeyed,
  };
}

async function runCommand(
  session: RunSession,
  io: RunIo,
  signal: AbortSignal,
  captures: { stdout?: OutputCapture; stderr?: OutputCapture },
  progress: (partial: CommandResult) => void,
): Promise<{ end: RunEnd; result: CommandResult }> {
  const { plan, dir, deps, log } = session;
  const stdout = capture('stdout', dir, plan, io.stdout);
  const stderr = capture('stderr', dir, plan, io.stderr);
  captures.stdout = stdout;
  captures.stderr = stderr;
  // Last of all (the stack is LIFO): once the container is gone and its streams ended, the
  // output files' digests enter the chain.
  let attached = false;
  session.stack.defer(async () => {
    // Never attached (the container was refused or never created): nothing will end them.
    if (!attached) for (const c of [stdout, stderr]) c.end();
    await drain([stdout, stderr], log);
    await dir.seal('outputs/stdout');
    await dir.seal('outputs/stderr');
  });
  // What the command may write is in its trees' labels before it runs (cfc/written-notes.ts).
  // It holds a lease on its trees for its life (cfc/written-leases.ts).
  if (plan.cfc.mode !== 'disabled') {
    const notes = session.stack.use(
      await WrittenNotes.open(
        plan,
        deps.writtenLabelsDir,
        { event: (type, data, durable) => dir.events.append(type, data, durable) },
        signal,
      ),
    );
    await notes.command(signal);
  }
  const t0 = performance.now();
  // The workload is created while the guard starts; it starts only once the guard's rules
  // are in force (fail closed, below).
  const egress = await session.openEgress(signal, { overlap: true });
  const created = await deps.runtime.createContainer(plan.spec, signal);
  const state = { removed: false };
  // Removed on every path; a failed removal is recorded and fails the run (`cfh reap` retries).
  session.stack.defer(() => removeContainer(created, dir, log, state));
  const tCreate = performance.now();
  const partial = (exit: number | null, oom: boolean, tStart: number, tExit: number) => ({
    containerId: created.id,
    get removed() {
      return state.removed;
    },
    commandExitCode: exit,
    oomKilled: oom,
    outputs: { stdout: stdout.result(), stderr: stderr.result() },
    createMs: round(tCreate - t0),
    startMs: round(tStart - tCreate),
    runMs: round(tExit - tStart),
  });
  progress(partial(null, false, tCreate, tCreate));
  await dir.events.append(
    'container_created',
    { containerId: created.id, name: created.name, seccompSha256: plan.spec.seccomp.sha256 },
    true,
  );
  // -i: the stdin is handed over now and streamed in once the workload runs (past the gate).
  const forwarded = plan.spec.stdin === 'forwarded' ? io.stdin : undefined;
  const output = await created.attach(signal, { stdin: forwarded });
  output.stdout.pipe(stdout);
  output.stderr.pipe(stderr);
  attached = true;
  signal.throwIfAborted();
  const terminal = plan.spec.tty === true ? io.terminal : undefined;
  // Followed from before the start: a resize while the container starts is not lost.
  const follow = terminal === undefined ? undefined : followTerminal(terminal, log);
  if (follow !== undefined) session.stack.defer(follow.stop);
  // Fail closed: nothing starts in the guard's namespace before its rules are in force
  // (egress_ready recorded); a guard that could not install them fails the run here.
  await egress?.ready;
  const started = await created.start(signal, { terminalSize: follow?.first });
  follow?.attach(started);
  const tStart = performance.now();
  session.markStarted();
  await dir.events.append('container_started', { containerId: started.id }, true);
  await dir.writeProgress('running', { containerId: started.id });
  session.startSweep();
  progress(partial(null, false, tStart, tStart));

  let stop: 'wall_time' | 'cancelled' | 'tether_lost' | undefined;
  const kill = (why: 'wall_time' | 'cancelled' | 'tether_lost'): void => {
    if (stop !== undefined) return;
    stop = why;
    log.info({ cause: why }, 'stopping container');
    started.kill('SIGKILL').catch((e: unknown) => {
      log.error({ err: errorMessage(e) }, 'kill failed');
    });
  };
  const timer = setTimeout(() => {
    kill('wall_time');
  }, plan.wallTimeMs);
  const onAbort = (): void => {
    kill('cancelled');
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  // The command dies with cfh, however cfh ends (command/command-tether.ts).
  const untether = new AbortController();
  const exited = started.wait();
  void holdTether(started, {
    envNames: Object.keys(plan.spec.env),
    workingDir: plan.spec.workingDir,
    log,
    signal: AbortSignal.any([signal, untether.signal]),
    exited,
  }).cut.then((cut) => {
    if (cut) kill('tether_lost');
  });
  let exit: { exitCode: number; oomKilled: boolean };
  try {
    // Not aborted by the signal: a cancellation kills the container, and wait returns then.
    exit = await exited;
  } finally {
    untether.abort();
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
  const tExit = performance.now();
  await drain([stdout, stderr], log);
  await dir.events.append(
    'container_exited',
    {
      containerId: started.id,
      exitCode: exit.exitCode,
      oomKilled: exit.oomKilled,
      signal: exit.exitCode > 128 ? exit.exitCode - 128 : null,
      stdout: stdout.result(),
      stderr: stderr.result(),
    },
    true,
  );
  const stopped = stop;
  if (stopped === 'wall_time') {
    await dir.events.append(
      'limit_reached',
      { limit: 'wall_time', limitMs: plan.wallTimeMs },
      true,
    );
  } else if (exit.oomKilled) {
    await dir.events.append(
      'limit_reached',
      { limit: 'memory', memoryBytes: plan.spec.limits.memoryBytes },
      true,
    );
  }
  for (const r of [stdout.result(), stderr.result()]) {
    if (r.truncated)
      await dir.events.append(
        'limit_reached',
        { limit: 'output_bytes', stream: r.name, bytesSeen: r.bytesSeen, bytesKept: r.bytesKept },
        true,
      );
    if (r.liveDropped > 0)
      await dir.events.append('live_output_dropped', { stream: r.name, bytes: r.liveDropped });
  }
  const end: RunEnd =
    stopped === 'tether_lost'
      ? {
          kind: 'error',
          started: true,
          error: new ContainmentError(
            'command_tether_lost',
            "the command ended cfh's tether in its container: the container was killed",
          ),
        }
      : stopped === 'cancelled'
        ? { kind: 'cancelled', signal: cancelSignalOf(signal) }
        : stopped === 'wall_time'
          ? { kind: 'wall_time' }
          : exit.oomKilled
            ? { kind: 'memory' }
            : { kind: 'exited', exitCode: exit.exitCode };
  return { end, result: partial(exit.exitCode, exit.oomKilled, tStart, tExit) };
}

/**
 * The container's terminal follows the operator's: its first size is set at start, every
 * resize after (SIGWINCH) is applied once the container runs, one that came while it was
 * starting included.
 */
function followTerminal(
  terminal: TerminalSizeSource,
  log: Logger,
): {
  first: TerminalSize | undefined;
  attach(started: StartedContainer): void;
  stop: () => void;
} {
  const first = terminal.size();
  let started: StartedContainer | undefined;
  let missed = false;
  const resize = (): void => {
    const size = terminal.size();
    if (size === undefined) return;
    if (started === undefined) {
      missed = true;
      return;
    }
    started.resize(size).catch((e: unknown) => {
      log.warn({ err: errorMessage(e) }, 'terminal resize failed');
    });
  };
  const stop = terminal.onResize(resize);
  return {
    first,
    attach: (s) => {
      started = s;
      if (missed) resize();
    },
    stop,
  };
}

function capture(
  name: 'stdout' | 'stderr',
  dir: RunDirectory,
  plan: RunPlan,
  live: NodeJS.WritableStream | undefined,
): OutputCapture {
  return new OutputCapture({
    name,
    file: dir.outputPath(name),
    limitBytes: plan.outputBytes,
    live,
    memoryLimitBytes: live === undefined ? JSON_OUTPUT_BYTES : 0,
  });
}

async function removeContainer(
  created: CreatedContainer,
  dir: RunDirectory,
  log: Logger,
  state: { removed: boolean },
): Promise<void> {
  try {
    await created.remove();
  } catch (error) {
    const failure =
      error instanceof CfhError ? error : new EngineError('remove_failed', errorMessage(error));
    log.error({ err: failure.message }, 'container removal failed; `cfh reap` will retry');
    await dir.events.append(
      'container_remove_failed',
      { containerId: created.id, error: failure.message },
      true,
    );
    throw failure;
  }
  state.removed = true;
  await dir.events.append('container_removed', { containerId: created.id }, true);
}

async function drain(captures: readonly OutputCapture[], log: Logger): Promise<void> {
  const timeout = AbortSignal.timeout(OUTPUT_DRAIN_MS);
  try {
    await Promise.all(captures.map((c) => finished(c, { signal: timeout })));
  } catch (error) {
    log.warn({ err: errorMessage(error) }, 'output streams did not finish after exit');
  }
}

function relativeOutputs(captures: {
  stdout?: OutputCapture;
  stderr?: OutputCapture;
}): Record<string, unknown> {
  return Object.fromEntries(
    Object.values(captures).map((c) => {
      const r = c.result();
      return [
        r.name,
        {
          file: `outputs/${r.name}`,
          bytesSeen: r.bytesSeen,
          bytesKept: r.bytesKept,
          truncated: r.truncated,
          liveDropped: r.liveDropped,
        },
      ];
    }),
  );
}

function timingsOf(r: CommandResult | undefined, times: SessionTimes): RunTimings {
  return {
    preflightMs: times.preflightMs,
    createMs: r?.createMs ?? 0,
    startMs: r?.startMs ?? 0,
    runMs: r?.runMs ?? 0,
    cleanupMs: times.disposeMs,
    totalMs: times.totalMs,
  };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
