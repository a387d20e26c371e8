// One `cfh sandbox run -- CMD`: preflight, evidence, container lifecycle, limits,
// cancellation and the terminal record. Every engine object it creates is removed before
// it returns, whatever happened (AH-LIFE-3).
import { finished } from 'node:stream/promises';
import type { Logger } from '../log.js';
import { CfhError, EngineError, errorMessage } from '../errors.js';
import { RUN_FILES, RunDirectory } from '../evidence/run-directory.js';
import { OutputCapture, type CaptureResult } from '../evidence/output-capture.js';
import type { ContainerRuntime, CreatedContainer, StartedContainer } from '../substrate/runtime.js';
import type { OwnerIdentity } from '../sandbox/owner.js';
import { preflight } from './preflight.js';
import type { RunPlan } from './run-plan.js';
import { assuranceOf, buildSnapshot, type Assurance } from './snapshot.js';
import { cancelSignalOf, decideTerminal, type StopCause, type TerminalStatus } from './terminal.js';
import { reapOrphans } from './reaper.js';
import type { OpenEgress } from '../sandbox/egress-sandbox.js';
import { startRunEgress } from './run-egress.js';

/** How long to wait for output streams to drain after the container exited. */
const OUTPUT_DRAIN_MS = 5_000;
const JSON_OUTPUT_BYTES = 1024 * 1024;

export interface RunDeps {
  readonly runtime: ContainerRuntime;
  readonly logger: Logger;
  readonly owner: OwnerIdentity;
  /** DNS server the egress gateway asks (CFH_EGRESS_RESOLVER); unset: the host's resolver. */
  readonly egressResolver?: string | undefined;
}

export interface RunIo {
  /** Live destinations; undefined captures only (--json). */
  readonly stdout?: NodeJS.WritableStream | undefined;
  readonly stderr?: NodeJS.WritableStream | undefined;
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
}

export async function executeSandboxRun(
  plan: RunPlan,
  deps: RunDeps,
  io: RunIo,
  signal: AbortSignal,
): Promise<RunOutcome> {
  const t0 = performance.now();
  const log: Logger = deps.logger.child({ component: 'sandbox-run', runId: plan.runId });
  // Leftovers of a cfh that was SIGKILLed are swept by the next run (issue 2, section 6).
  // Off the cold path: the sweep starts once this run's container is running, overlaps the
  // command, and is awaited before the run returns.
  let sweep: Promise<void> | undefined;
  const startSweep = (): void => {
    sweep ??= reapOrphans(deps.runtime, { dryRun: false, logger: log }).then(
      () => undefined,
      (e: unknown) => {
        log.warn({ err: errorMessage(e) }, 'orphan sweep failed; continuing');
      },
    );
  };
  try {
    return await runAccepted(plan, deps, io, signal, log, t0, startSweep);
  } finally {
    await sweep;
  }
}

async function runAccepted(
  plan: RunPlan,
  deps: RunDeps,
  io: RunIo,
  signal: AbortSignal,
  log: Logger,
  t0: number,
  onStarted: () => void,
): Promise<RunOutcome> {
  const facts = await preflight(deps.runtime, plan.spec, signal);
  signal.throwIfAborted();
  const tPreflight = performance.now();

  await using dir = await RunDirectory.create(plan.artifactRoot, plan.runId, deps.owner);
  // The exact filter the engine receives, so an operator can read what the container ran under.
  await dir.writeFile(RUN_FILES.seccomp, plan.spec.seccomp.json);
  await dir.writeSnapshot(buildSnapshot(plan, facts, deps.owner));
  await dir.events.append(
    'run_created',
    { profile: plan.profile.name, imageId: facts.image.id },
    true,
  );
  await dir.writeProgress('created');

  const stdout = new OutputCapture({
    name: 'stdout',
    file: dir.outputPath('stdout'),
    limitBytes: plan.outputBytes,
    live: io.stdout,
    memoryLimitBytes: io.stdout === undefined ? JSON_OUTPUT_BYTES : 0,
  });
  const stderr = new OutputCapture({
    name: 'stderr',
    file: dir.outputPath('stderr'),
    limitBytes: plan.outputBytes,
    live: io.stderr,
    memoryLimitBytes: io.stderr === undefined ? JSON_OUTPUT_BYTES : 0,
  });

  let created: CreatedContainer | undefined;
  let egress: OpenEgress | undefined;
  let started: StartedContainer | undefined;
  let cause: StopCause = { kind: 'exited' };
  let commandExitCode: number | null = null;
  let oomKilled = false;
  let failure: CfhError | undefined;
  let tCreate = performance.now();
  let tStart = tCreate;
  let tExit: number;

  try {
    if (plan.egress !== undefined) {
      egress = await startRunEgress(plan, plan.egress, deps, dir, log, signal);
    }
    created = await deps.runtime.createContainer(plan.spec);
    tCreate = performance.now();
    await dir.events.append(
      'container_created',
      { containerId: created.id, name: created.name, seccompSha256: plan.spec.seccomp.sha256 },
      true,
    );
    const output = await created.attach();
    output.stdout.pipe(stdout);
    output.stderr.pipe(stderr);
    if (signal.aborted) throw signal.reason;
    started = await created.start();
    tStart = performance.now();
    await dir.events.append('container_started', { containerId: started.id }, true);
    onStarted();
    await dir.writeProgress('running', { containerId: started.id });

    const box = started;
    const stop = (next: StopCause): void => {
      if (cause.kind !== 'exited') return;
      cause = next;
      log.info({ cause: next.kind }, 'stopping container');
      box.kill('SIGKILL').catch((e: unknown) => {
        log.error({ err: errorMessage(e) }, 'kill failed');
      });
    };
    const timer = setTimeout(() => {
      stop({ kind: 'wall_time', limitMs: plan.wallTimeMs });
    }, plan.wallTimeMs);
    const onAbort = (): void => {
      stop({ kind: 'cancelled', signal: cancelSignalOf(signal) });
    };
    // The signal may have fired during start(); TypeScript narrowed it before that await.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      const exit = await started.wait();
      commandExitCode = exit.exitCode;
      oomKilled = exit.oomKilled;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
    tExit = performance.now();
    await drain([stdout, stderr], log);
    await dir.events.append(
      'container_exited',
      {
        containerId: started.id,
        exitCode: commandExitCode,
        oomKilled,
        signal: commandExitCode > 128 ? commandExitCode - 128 : null,
        stdout: stdout.result(),
        stderr: stderr.result(),
      },
      true,
    );
    const stopped = cause as StopCause;
    if (stopped.kind === 'wall_time') {
      await dir.events.append(
        'limit_reached',
        { limit: 'wall_time', limitMs: stopped.limitMs },
        true,
      );
    } else if (oomKilled) {
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
    }
  } catch (error) {
    if (signal.aborted && !(error instanceof CfhError)) {
      cause = { kind: 'cancelled', signal: cancelSignalOf(signal) };
    } else {
      failure =
        error instanceof CfhError
          ? error
          : new EngineError('run_failed', errorMessage(error), { cause: error });
      log.error({ err: failure.message, code: failure.code }, 'run failed');
    }
    tExit = performance.now();
  }

  const cleanup = performance.now();
  const removal = await removeContainer(created, dir, log);
  if (egress !== undefined) {
    // After the workload is gone: the gateway closes, the guard and network are removed.
    await egress.close();
    await dir.events.append(
      'egress_closed',
      { network: egress.network.name, guardId: egress.guardId },
      true,
    );
  }
  stdout.destroy();
  stderr.destroy();
  if (removal !== undefined && failure === undefined) failure = removal;
  const stoppedCause = cause as StopCause;
  if (stoppedCause.kind === 'cancelled') {
    await dir.events.append('cancelled', { signal: stoppedCause.signal }, true);
  }

  const terminal =
    failure !== undefined && stoppedCause.kind !== 'cancelled'
      ? { status: 'failed' as const, reason: `error:${failure.code}`, exitCode: failure.exitCode }
      : decideTerminal(stoppedCause, commandExitCode ?? -1, oomKilled);
  const tEnd = performance.now();
  const timings: RunTimings = {
    preflightMs: round(tPreflight - t0),
    createMs: round(tCreate - tPreflight),
    startMs: round(tStart - tCreate),
    runMs: round(tExit - tStart),
    cleanupMs: round(tEnd - cleanup),
    totalMs: round(tEnd - t0),
  };
  const outputs = { stdout: stdout.result(), stderr: stderr.result() };
  const assurance = assuranceOf(facts);
  await dir.finish(terminal, {
    commandExitCode,
    oomKilled,
    error:
      failure === undefined
        ? null
        : { code: failure.code, boundary: failure.boundary, message: failure.message },
    container: { id: created?.id ?? null, name: plan.spec.name, removed: removal === undefined },
    image: { ref: plan.spec.image, id: facts.image.id },
    outputs: relativeOutputs(outputs),
    timings,
    assurance,
  });

  return {
    runId: plan.runId,
    status: terminal.status,
    exitCode: terminal.exitCode,
    commandExitCode,
    oomKilled,
    terminalReason: terminal.reason,
    artifactDir: dir.dir,
    stdout: stdout.text(),
    stderr: stderr.text(),
    timings,
    assurance,
  };
}

async function removeContainer(
  created: CreatedContainer | undefined,
  dir: RunDirectory,
  log: Logger,
): Promise<CfhError | undefined> {
  if (created === undefined) return undefined;
  try {
    await created.remove();
    await dir.events.append('container_removed', { containerId: created.id }, true);
    return undefined;
  } catch (error) {
    const failure =
      error instanceof CfhError ? error : new EngineError('remove_failed', errorMessage(error));
    log.error({ err: failure.message }, 'container removal failed; `cfh reap` will retry');
    await dir.events.append(
      'container_remove_failed',
      { containerId: created.id, error: failure.message },
      true,
    );
    return failure;
  }
}

async function drain(captures: readonly OutputCapture[], log: Logger): Promise<void> {
  const timeout = AbortSignal.timeout(OUTPUT_DRAIN_MS);
  try {
    await Promise.all(captures.map((c) => finished(c, { signal: timeout })));
  } catch (error) {
    log.warn({ err: errorMessage(error) }, 'output streams did not finish after exit');
  }
}

function relativeOutputs(outputs: Record<string, CaptureResult>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(outputs).map(([k, r]) => [
      k,
      {
        file: `outputs/${r.name}`,
        bytesSeen: r.bytesSeen,
        bytesKept: r.bytesKept,
        truncated: r.truncated,
      },
    ]),
  );
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
