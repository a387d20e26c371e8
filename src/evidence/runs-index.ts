// Reading run directories back for `cfh runs list` and `cfh runs show`, and for every
// command that acts on a run (runs diff/apply, --from-plan): through the bounded reader
// (run-reader.ts), verified by the one verifier (verify-run.ts).
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { z } from 'zod';
import { ArtifactError, ConfigError } from '../errors.js';
import type { TrustedKey } from './signing.js';
import { readRunEvidence, type LoadedDocument, type RunEvidence } from './audit/run-evidence.js';
import type { EventRecord } from './event-log.js';
import { verifyEvidence, type RunVerification } from './verify-run.js';
import { RUN_FILES } from './run-directory.js';
import { isRunId } from './run-id.js';
import { READ_CAPS, RunReader } from './run-reader.js';

export interface RunCaller {
  readonly pid?: number;
  readonly start?: string;
  readonly host?: string;
}

/** The states a run ends in; any other state is a run in progress, or abandoned. */
export const TERMINAL_STATES: readonly string[] = ['completed', 'failed', 'cancelled'];

/** As RunDirectory.create takes the lock: refreshed every 10 s, stale after 30 s. */
const LOCK_STALE_MS = 30_000;

export interface RunSummary {
  readonly runId: string;
  readonly kind: 'command' | 'agent';
  readonly state: string;
  /**
   * The cfh process that writes the run: state.json's `writer` (there from the first file
   * RunDirectory.create writes), else the snapshot's caller.
   */
  readonly caller?: RunCaller;
  /** Whether the run directory's lock is held and fresh (its writer's heartbeat). */
  readonly locked: boolean;
  readonly terminalReason?: string;
  readonly exitCode?: number;
  readonly profile?: string;
  readonly command?: readonly string[];
  readonly createdAt?: string;
  /** What could not be read, and why (a link, a FIFO, a file past its bound). */
  readonly unreadable?: readonly string[];
}

const Caller = z.object({
  pid: z.number().int().optional(),
  start: z.string().optional(),
  host: z.string().optional(),
});

/** The few snapshot fields a summary shows, each optional: a summary never fails. */
const SnapshotSummary = z.object({
  kind: z.string().optional().catch(undefined),
  profile: z.object({ name: z.string() }).optional().catch(undefined),
  command: z.array(z.string()).optional().catch(undefined),
  createdAt: z.string().optional().catch(undefined),
  caller: z.unknown().optional(),
});
const StateSummary = z.object({
  state: z.string().optional().catch(undefined),
  terminalReason: z.string().optional().catch(undefined),
  exitCode: z.number().optional().catch(undefined),
  writer: z.unknown().optional(),
});

function callerOf(value: unknown): RunCaller | undefined {
  const parsed = Caller.safeParse(value);
  if (!parsed.success) return undefined;
  const { pid, start, host } = parsed.data;
  return {
    ...(pid === undefined ? {} : { pid }),
    ...(start === undefined ? {} : { start }),
    ...(host === undefined ? {} : { host }),
  };
}

async function isLocked(dir: string): Promise<boolean> {
  return lockfile
    .check(dir, {
      lockfilePath: path.join(dir, RUN_FILES.lock),
      realpath: false,
      stale: LOCK_STALE_MS,
    })
    .catch(() => false);
}

export async function listRuns(root: string): Promise<RunSummary[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const runs: RunSummary[] = [];
  for (const runId of names.filter(isRunId).sort()) runs.push(await summaryAt(root, runId));
  return runs;
}

/** One run's summary, reading only state.json and snapshot.json, each within its bound. */
async function summaryAt(root: string, runId: string): Promise<RunSummary> {
  const dir = path.join(root, runId);
  let reader: RunReader;
  try {
    reader = await RunReader.open(dir);
  } catch (error) {
    return {
      runId,
      kind: 'command',
      state: 'unreadable',
      locked: false,
      unreadable: [error instanceof Error ? error.message : String(error)],
    };
  }
  try {
    const [state, snapshot] = await Promise.all([
      readDoc(reader, RUN_FILES.state),
      readDoc(reader, RUN_FILES.snapshot),
    ]);
    return summaryOf(runId, state, snapshot, await isLocked(dir));
  } finally {
    await reader.close();
  }
}

async function readDoc(reader: RunReader, name: string): Promise<LoadedDocument> {
  const read = await reader.readText(name, READ_CAPS.document);
  if (!read.ok)
    return read.missing
      ? { present: false, value: undefined }
      : { present: true, value: undefined, problem: read.problem };
  try {
    return { present: true, value: JSON.parse(read.value) as unknown };
  } catch {
    return { present: true, value: undefined, problem: `${name}: not JSON` };
  }
}

function summaryOf(
  runId: string,
  stateDoc: LoadedDocument,
  snapshotDoc: LoadedDocument,
  locked: boolean,
): RunSummary {
  const state = StateSummary.safeParse(stateDoc.value);
  const snapshot = SnapshotSummary.safeParse(snapshotDoc.value);
  const st = state.success ? state.data : undefined;
  const snap = snapshot.success ? snapshot.data : undefined;
  const caller = callerOf(st?.writer) ?? callerOf(snap?.caller);
  const unreadable = [stateDoc.problem, snapshotDoc.problem].filter(
    (p): p is string => p !== undefined,
  );
  return {
    runId,
    kind: snap?.kind === 'agent' ? 'agent' : 'command',
    state: st?.state ?? 'unknown',
    ...(caller === undefined ? {} : { caller }),
    locked,
    ...(st?.terminalReason === undefined ? {} : { terminalReason: st.terminalReason }),
    ...(st?.exitCode === undefined ? {} : { exitCode: st.exitCode }),
    ...(snap?.profile === undefined ? {} : { profile: snap.profile.name }),
    ...(snap?.command === undefined ? {} : { command: snap.command }),
    ...(snap?.createdAt === undefined ? {} : { createdAt: snap.createdAt }),
    ...(unreadable.length === 0 ? {} : { unreadable }),
  };
}

export interface RunDetail {
  readonly runId: string;
  readonly dir: string;
  /** What runs list shows for the run: state, writer identity, lock. */
  readonly summary: RunSummary;
  /** false: the writer stopped before it began events.jsonl. */
  readonly eventLog: boolean;
  readonly state: Record<string, unknown> | undefined;
  readonly snapshot: Record<string, unknown> | undefined;
  readonly report: Record<string, unknown> | undefined;
  /** The events whose envelope could be read, in log order. */
  readonly events: readonly EventRecord[];
  readonly chain: { readonly ok: boolean; readonly events: number; readonly problem?: string };
  /** What the evidence proves of itself, and what it cannot (verify-run.ts). */
  readonly verification: RunVerification;
}

export interface ShowOptions {
  /** The operator's public key, when one is configured: then a signature is required. */
  readonly trustedKey?: TrustedKey | undefined;
}

const Record_ = z.record(z.string(), z.unknown());
const EnvelopeRead = z.object({
  schema: z.string().optional(),
  seq: z.number(),
  ts: z.string(),
  runId: z.string(),
  type: z.string(),
  data: Record_,
  prevHash: z.string(),
  hash: z.string(),
});

const recordOf = (doc: LoadedDocument): Record<string, unknown> | undefined => {
  const parsed = Record_.safeParse(doc.value);
  return parsed.success ? parsed.data : undefined;
};

/**
 * The one refusal of a run id that names no run (malformed, or no such directory), the
 * same words and code from every command that takes one: runs show/diff/apply/report/
 * export, audit, --from-plan (docs/operators.md, "Errors").
 */
export function unknownRun(run: string, root: string): ConfigError {
  return new ConfigError(
    'unknown_run',
    `no run '${run}' under ${root}`,
    { field: 'runId', value: run },
    'cfh runs list names the runs there (--artifact-root DIR for another root)',
  );
}

/** A run id under the artifact root, or (audit, report, export) a path to a run directory. */
export function resolveRunDir(run: string, root: string): string {
  if (isRunId(run)) {
    const dir = path.join(root, run);
    if (existsSync(dir)) return dir;
  } else if (existsSync(run)) return path.resolve(run);
  throw unknownRun(run, root);
}

/** A run read through the bounded reader and verified; ConfigError when there is none. */
export async function showRun(
  root: string,
  runId: string,
  options: ShowOptions = {},
): Promise<RunDetail> {
  if (!isRunId(runId)) throw unknownRun(runId, root);
  const dir = path.join(root, runId);
  let reader: RunReader;
  try {
    reader = await RunReader.open(dir);
  } catch (error) {
    if (error instanceof ArtifactError && /no such run directory$/.test(error.message))
      throw unknownRun(runId, root);
    throw error;
  }
  let run: RunEvidence;
  try {
    run = await readRunEvidence(reader);
  } finally {
    await reader.close();
  }
  const events: EventRecord[] = [];
  for (const e of run.events) {
    const parsed = EnvelopeRead.safeParse(e.record);
    if (!parsed.success) continue;
    const { schema, ...rest } = parsed.data;
    events.push({ ...rest, ...(schema === undefined ? {} : { schema }) });
  }
  const verification = verifyEvidence(run, options.trustedKey);
  const chain = verification.checks.find((c) => c.id === 'integrity.chain');
  return {
    runId,
    dir,
    summary: summaryOf(runId, run.state, run.snapshot, await isLocked(dir)),
    eventLog: run.eventLog.present,
    state: recordOf(run.state),
    snapshot: recordOf(run.snapshot),
    report: recordOf(run.report),
    events,
    chain: {
      ok: chain?.verdict === 'pass',
      events: run.events.length,
      ...(chain?.verdict === 'pass' ? {} : { problem: chain?.where[0] ?? chain?.detail ?? '' }),
    },
    verification,
  };
}
