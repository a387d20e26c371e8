// One run session: what every kind of run shares, owned in one place (AH-LIFE-1..3,
// AH-INV-1/2). Preflight, the run directory and its lock, the seccomp filter and snapshot,
// the egress posture, the disposal of everything the work opened (reverse order, errors
// aggregated, never masked), the terminal decision and the terminal record. A command run
// and an agent run supply only their own work (sandbox-run.ts, agent-run.ts).
import type { Logger } from '../../log.js';
import { CfhError, ContainmentError, EngineError, errorMessage } from '../../errors.js';
import { RUN_FILES, RunDirectory } from '../../evidence/run-directory.js';
import type { EventListener } from '../../evidence/event-log.js';
import { CfcTally, cfcModeOfSnapshot } from '../../evidence/cfc-summary.js';
import type { TerminalSigner } from '../../evidence/signing.js';
import type { OpenEgress } from '../../sandbox/egress-sandbox.js';
import type { ContainerRuntime, RunResourceUsage } from '../../substrate/runtime.js';
import { preflight, type PreflightFacts } from './preflight.js';
import type { RunPlan } from './run-plan.js';
import { openRunEgress } from './run-egress.js';
import { assuranceOf, buildSnapshot, type Assurance } from './snapshot.js';
import { cancelSignalOf, decideTerminal, type RunEnd, type Terminal } from './terminal.js';
import { reapOrphans } from '../ops/reaper.js';
import { sweepRwMounts, type HostObeyedReport } from './rw-sweep.js';
import { closeDraft, prepareDraft } from '../draft/draft-session.js';
import { DraftWatch } from '../draft/draft-watch.js';
import type { DraftWorkspace, PatchSummary } from '../draft/draft-workspace.js';
import { LiveDraft } from '../draft/draft-live.js';
import { LABEL_RUN_ID, type OwnerIdentity } from '../../sandbox/owner.js';
import { chmod } from 'node:fs/promises';
import { CA_BUNDLE_FILE, type CaBundle } from '../../sandbox/ca-bundle.js';
import { HOSTS_FILE, LOOPBACK_HOSTS } from '../../sandbox/derive-spec.js';

export interface RunDeps {
  readonly runtime: ContainerRuntime;
  readonly logger: Logger;
  readonly owner: OwnerIdentity;
  /** DNS server the egress gateway asks (CFH_EGRESS_RESOLVER); unset: the host's resolver. */
  readonly egressResolver?: string | undefined;
  /** The operator's key (`cfh keys init`): when set, the terminal record is signed. */
  readonly signer?: TerminalSigner | undefined;
  /**
   * The host-process ledger, swept for orphans with the engine objects (`cfh reap`). Required:
   * every kind of run sweeps what a killed run of any kind left (cli/run-deps.ts builds it).
   */
  readonly hostProcessDir: string;
  /** Where draft copies are made, swept for copies of dead runs (`cfh reap`). */
  readonly draftRoot: string;
  /** What runs wrote into host trees (CFH_STATE_DIR/written-labels; engine/cfc/written-notes.ts). */
  readonly writtenLabelsDir: string;
  /** Sees every event record of the run as appended, from the first (`--events jsonl`). */
  readonly events?: EventListener | undefined;
}

/** What a kind of run supplies: its snapshot fields, its work, its report fields. */
export interface RunWork<R> {
  readonly kind: 'command' | 'agent';
  /** Fields added to (or replacing) the common snapshot. */
  snapshot(common: Record<string, unknown>): Record<string, unknown>;
  /**
   * The work itself. Everything it opens goes on `session.stack`; it returns how the run
   * ended and its result, or throws (an error before `session.markStarted()` is a failure
   * to start, exit 125; after it, a failed run, exit 1).
   */
  run(session: RunSession, signal: AbortSignal): Promise<{ end: RunEnd; result: R }>;
  /** Fields of report.json for this kind; `result` is undefined when the work threw. */
  report(result: R | undefined, terminal: Terminal, times: SessionTimes): Record<string, unknown>;
}

/** Where the session's own time went (ms): preflight before the work, disposal after it. */
export interface SessionTimes {
  readonly preflightMs: number;
  readonly disposeMs: number;
  readonly totalMs: number;
}

export interface SessionOutcome<R> {
  readonly runId: string;
  readonly terminal: Terminal;
  readonly result: R | undefined;
  readonly error: CfhError | undefined;
  readonly artifactDir: string;
  readonly assurance: Assurance;
  readonly times: SessionTimes;
  /** Draft mode: the patch the run left (none: not a draft, or no patch was written). */
  readonly patch: PatchSummary | undefined;
  /** Host-obeyed paths the run created or changed in its rw mounts (class 9). */
  readonly hostObeyed: HostObeyedReport | undefined;
  /** What the run's containers used (report.json `resources`). */
  readonly resources: ResourcesRecord;
}

/** What the work sees of its session. */
export class RunSession {
  readonly plan: RunPlan;
  readonly deps: RunDeps;
  readonly dir: RunDirectory;
  readonly facts: PreflightFacts;
  readonly log: Logger;
  /** Disposed in reverse order when the work is done, whatever happened. */
  readonly stack = new AsyncDisposableStack();
  #started = false;
  /** Before any container of the run: what the set-id sweep counts as the run's. */
  // File times come from the kernel's coarse clock, a few ms behind the wall clock.
  readonly startedAt = new Date(Date.now() - 50);
  /** The orphan sweep, started with the workload (off the cold path), awaited at the end. */
  sweep: Promise<void> | undefined;
  /** Draft mode: the copy, diffed and applied while the run goes on (draft-live.ts). */
  readonly liveDraft: LiveDraft | undefined;

  constructor(
    plan: RunPlan,
    deps: RunDeps,
    dir: RunDirectory,
    facts: PreflightFacts,
    log: Logger,
    draft?: DraftWorkspace,
  ) {
    this.plan = plan;
    // Frozen for each walk: every container of the run, by its run-id label.
    this.liveDraft =
      draft === undefined
        ? undefined
        : new LiveDraft(draft, dir, (signal) =>
            deps.runtime.freezeLabelled(LABEL_RUN_ID, plan.runId, signal),
          );
    this.deps = deps;
    this.dir = dir;
    this.facts = facts;
    this.log = log;
  }

  get started(): boolean {
    return this.#started;
  }

  /** The workload began (a container passed its start, or the first model request): from
   * here a failure is a failed run (exit 1), no longer "could not start" (125). */
  markStarted(): void {
    this.#started = true;
  }

  /**
   * Leftovers of a cfh that was SIGKILLed are swept by the next run, beside its workload:
   * called once the run's own start is recorded (`running`), so the sweep's work never
   * stands between the workload starting and the record that says so.
   */
  startSweep(): void {
    this.sweep ??= reapOrphans(this.deps.runtime, {
      dryRun: false,
      logger: this.log,
      hostProcessDir: this.deps.hostProcessDir,
      draftRoot: this.deps.draftRoot,
    }).then(
      () => undefined,
      (e: unknown) => {
        this.log.warn({ err: errorMessage(e) }, 'orphan sweep failed; continuing');
      },
    );
  }

  /**
   * The run's egress posture (`allowlist`/`open`): network, guard and gateway, closed after
   * everything opened later (the stack is LIFO). Returns once the guard's rules are in
   * force, unless `overlap`: then once the guard exists, and the caller, which may create
   * (never start) a container in its namespace meanwhile, awaits `ready` before any start.
   */
  async openEgress(
    signal: AbortSignal,
    options: { readonly overlap?: boolean } = {},
  ): Promise<OpenEgress | undefined> {
    if (this.plan.egress === undefined) return undefined;
    const egress = await openRunEgress(this, this.plan.egress, signal);
    this.stack.defer(async () => {
      await egress.close();
      await this.dir.events.append(
        'egress_closed',
        { network: egress.network.name, guardId: egress.guardId },
        true,
      );
    });
    if (options.overlap !== true) await egress.ready;
    return egress;
  }
}

export async function runSession<R>(
  plan: RunPlan,
  deps: RunDeps,
  work: RunWork<R>,
  signal: AbortSignal,
): Promise<SessionOutcome<R>> {
  const t0 = performance.now();
  const log = deps.logger.child({ component: `${work.kind}-run`, runId: plan.runId });
  let session: RunSession | undefined;
  try {
    const facts = await preflight(deps.runtime, plan.spec, signal, plan.image);
    signal.throwIfAborted();
    const preflightMs = performance.now() - t0;
    await using dir = await RunDirectory.create(
      plan.artifactRoot,
      plan.runId,
      deps.owner,
      deps.events,
    );
    // The exact filter the engine receives, so an operator can read what the container ran under.
    await dir.writeFile(RUN_FILES.seccomp, plan.spec.seccomp.json);
    if (plan.caBundle !== undefined) await writeCaBundle(dir, plan.caBundle);
    // No network: the spec mounts this as /etc/hosts, so `localhost` resolves (derive-spec.ts).
    if (plan.egress === undefined) await writeReadable(dir, HOSTS_FILE, LOOPBACK_HOSTS);
    // Draft mode: the copy exists (and its baseline is recorded) before the snapshot names it.
    const prepared = await prepareDraft(plan, dir, log, signal);
    await using draft = prepared.draft;
    const runPlan = draft?.plan ?? plan;
    // report.json's `cfc` is counted from the events the run records (AH-CFC-14), with the
    // mode its snapshot states: every run, command runs too, says its mode.
    const cfcTally = new CfcTally();
    dir.events.subscribe(cfcTally.listener);
    const snapshot = work.snapshot(buildSnapshot(runPlan, facts, deps.owner, draft?.record));
    await dir.writeSnapshot(snapshot);
    await dir.events.append(
      'run_created',
      { kind: work.kind, profile: plan.profile.name, imageId: facts.image.id },
      true,
    );
    await dir.writeProgress('created');
    session = new RunSession(runPlan, deps, dir, facts, log, draft);
    // The draft's bound holds while the work runs: the watch stops it as a limit. First on
    // the stack, so disposed last: it stops once every container is gone.
    const watch =
      draft !== undefined && prepared.failure === undefined && plan.draft !== undefined
        ? session.stack.use(
            new DraftWatch(draft.record.source, plan.draft.root, draft.maxBytes, log),
          )
        : undefined;
    const workSignal = watch === undefined ? signal : AbortSignal.any([signal, watch.signal]);
    const performed =
      prepared.failure === undefined
        ? await perform(session, work, workSignal)
        : { ...prepared.failure, result: undefined, disposeMs: 0, hostObeyed: undefined };
    const { result, disposeMs, hostObeyed } = performed;
    // Every container of the run is removed: its cgroup's counters are final.
    const resources = await collectResources(deps.runtime, plan.runId, log);
    let { end, error } = performed;
    if (watch?.tripped !== undefined && !signal.aborted) {
      // The work saw a cancellation (or an error it caused); the run ended at the limit.
      await dir.events.append('limit_reached', { ...watch.tripped }, true);
      end = { kind: 'limit', limit: watch.tripped.limit };
      error = undefined;
    }
    let patch: Record<string, unknown> | undefined;
    let written: PatchSummary | undefined;
    if (draft !== undefined) {
      // The orphan sweep first: the draft may be read as its owner, who cannot reach the
      // engine's socket.
      await session.sweep;
      // Every container is gone: what the draft holds now is what the run did.
      const closed = await closeDraft(session, draft);
      patch = closed.report;
      written = closed.patch;
      if (closed.error !== undefined && error === undefined && end.kind !== 'cancelled') {
        error = closed.error;
        end = { kind: 'error', error, started: session.started };
      }
    }
    const terminal = decideTerminal(end);
    if (end.kind === 'cancelled')
      await dir.events.append('cancelled', { signal: end.signal }, true);
    const assurance = assuranceOf(runPlan, facts);
    const times: SessionTimes = {
      preflightMs: round(preflightMs),
      disposeMs: round(disposeMs),
      totalMs: round(performance.now() - t0),
    };
    await dir.finish(
      terminal,
      {
        kind: work.kind,
        image: { ref: plan.spec.image, id: facts.image.id },
        ...work.report(result, terminal, times),
        ...(patch === undefined ? {} : { draft: patch }),
        ...(hostObeyed === undefined ? {} : { hostObeyed }),
        error: errorRecord(error),
        assurance,
        cfc: cfcTally.summary(cfcModeOfSnapshot(snapshot)),
        resources,
      },
      { signer: deps.signer },
    );
    return {
      runId: plan.runId,
      terminal,
      result,
      error,
      artifactDir: dir.dir,
      assurance,
      times,
      patch: written,
      hostObeyed,
      resources,
    };
  } finally {
    await session?.sweep;
  }
}

interface Performed<R> {
  readonly end: RunEnd;
  readonly result: R | undefined;
  readonly error: CfhError | undefined;
  readonly disposeMs: number;
  /** What the end walk of the rw mounts found (rw-sweep.ts); undefined: no host rw mount. */
  readonly hostObeyed: HostObeyedReport | undefined;
}

/** Runs the work, then disposes what it opened; a disposal failure never masks the end. */
async function perform<R>(
  session: RunSession,
  work: RunWork<R>,
  signal: AbortSignal,
): Promise<Performed<R>> {
  let end: RunEnd;
  let result: R | undefined;
  let error: CfhError | undefined;
  try {
    ({ end, result } = await work.run(session, signal));
  } catch (thrown) {
    if (signal.aborted && !(thrown instanceof CfhError)) {
      end = { kind: 'cancelled', signal: cancelSignalOf(signal) };
    } else {
      error = asCfhError(thrown);
      end = { kind: 'error', error, started: session.started };
      session.log.error({ err: error.message, code: error.code }, 'run failed');
      if (error instanceof ContainmentError) {
        // The attempt itself is evidence (what was mounted, what changed), not only its end.
        await session.dir.events.append(
          'containment_failure',
          { code: error.code, message: error.message, details: error.details },
          true,
        );
      }
    }
  }
  const tDispose = performance.now();
  const disposal = await disposeAll(session);
  // Every container is gone: what the run left in its rw mounts can be looked at.
  const hostObeyed = await sweepRwMounts(session.plan, session.dir, session.startedAt);
  const disposeMs = performance.now() - tDispose;
  if (disposal.length > 0) {
    for (const e of disposal) session.log.error({ err: e.message }, 'clean-up step failed');
    // A run that otherwise succeeded still failed if cleaning up failed (AH-LIFE-3): the
    // first clean-up error names it; the others are in the log and the events.
    if (error === undefined && end.kind !== 'cancelled') {
      error = disposal[0];
      if (error !== undefined) end = { kind: 'error', error, started: session.started };
    }
  }
  return { end, result, error, disposeMs, hostObeyed };
}

/** Disposes the session's stack, returning every error (SuppressedError chains unrolled). */
async function disposeAll(session: RunSession): Promise<CfhError[]> {
  try {
    await session.stack.disposeAsync();
    return [];
  } catch (thrown) {
    const errors: CfhError[] = [];
    let e: unknown = thrown;
    while (e instanceof SuppressedError) {
      errors.push(asCfhError(e.error));
      e = e.suppressed;
    }
    errors.push(asCfhError(e));
    // SuppressedError nests the latest first; report them in the order they happened.
    return errors.reverse();
  }
}

function asCfhError(error: unknown): CfhError {
  return error instanceof CfhError
    ? error
    : new EngineError('run_failed', errorMessage(error), { cause: error });
}

/** report.json `resources`: the substrate's reading, without its housekeeping flag. */
export type ResourcesRecord =
  Omit<Extract<RunResourceUsage, { source: string }>, 'removed'> | { readonly unavailable: string };

async function collectResources(
  runtime: ContainerRuntime,
  runId: string,
  log: Logger,
): Promise<ResourcesRecord> {
  // Not the run's signal: read even when the run was cancelled, since the containers ran
  // and their accounting must go; the read is a few files (bounded, not cancellable).
  const usage = await runtime.collectUsage(runId, AbortSignal.timeout(10_000));
  if ('unavailable' in usage) return usage;
  const { removed, ...record } = usage;
  if (!removed)
    log.warn({ runId }, "the run's cgroup directories (cfh-usage) could not all be removed");
  return record;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** A failure as report.json and `--json` show it: its code and the boundary that failed (AH-DIAG-1). */
export interface ErrorRecord {
  readonly code: string;
  readonly boundary: string;
  readonly message: string;
}

export function errorRecord(error: CfhError | undefined): ErrorRecord | null {
  return error === undefined
    ? null
    : { code: error.code, boundary: error.boundary, message: error.message };
}

/**
 * The CA bundle's certificates, where the spec mounts them from: the run directory, so the
 * bytes the sandbox trusts are evidence (digest in the snapshot, and the file itself).
 * World-readable: the sandbox user reads it, and it holds public certificates only.
 */
async function writeCaBundle(dir: RunDirectory, bundle: CaBundle): Promise<void> {
  const sha256 = await writeReadable(dir, CA_BUNDLE_FILE, bundle.pem);
  // The run's redactor may rewrite what it writes; the sandbox must get what was checked.
  if (sha256 !== bundle.sha256)
    throw new ContainmentError(
      'evidence_broken',
      `the CA bundle written (sha256 ${sha256}) is not the one checked (${bundle.sha256})`,
      { file: CA_BUNDLE_FILE },
    );
}

/** A file of the run directory a container mounts: the sandbox user must read it. */
async function writeReadable(dir: RunDirectory, file: string, body: string): Promise<string> {
  const sha256 = await dir.writeFile(file, body);
  await chmod(dir.path(file), 0o644);
  return sha256;
}
