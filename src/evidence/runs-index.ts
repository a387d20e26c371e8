// Reading run directories back for `cfh runs list` and `cfh runs show`.
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { verifyEventChain, type EventRecord } from './event-log.js';
import { verifyRunDirectory, type RunVerification } from './verify-run.js';
import { RUN_FILES } from './run-directory.js';
import { isRunId } from './run-id.js';

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
}

async function readJson(file: string): Promise<Record<string, unknown> | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

export async function listRuns(root: string): Promise<RunSummary[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const runs = await Promise.all(
    names
      .filter(isRunId)
      .sort()
      .map((id) => summarize(root, id)),
  );
  return runs;
}

const Caller = z.object({
  pid: z.number().int().optional(),
  start: z.string().optional(),
  host: z.string().optional(),
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

async function summarize(root: string, runId: string): Promise<RunSummary> {
  const dir = path.join(root, runId);
  const [state, snapshot, locked] = await Promise.all([
    readJson(path.join(dir, RUN_FILES.state)),
    readJson(path.join(dir, RUN_FILES.snapshot)),
    isLocked(dir),
  ]);
  const profile = snapshot?.profile as { name?: string } | undefined;
  const caller = callerOf(state?.writer) ?? callerOf(snapshot?.caller);
  return {
    runId,
    kind: snapshot?.kind === 'agent' ? 'agent' : 'command',
    state: typeof state?.state === 'string' ? state.state : 'unknown',
    ...(caller === undefined ? {} : { caller }),
    locked,
    ...(typeof state?.terminalReason === 'string' ? { terminalReason: state.terminalReason } : {}),
    ...(typeof state?.exitCode === 'number' ? { exitCode: state.exitCode } : {}),
    ...(profile?.name === undefined ? {} : { profile: profile.name }),
    ...(Array.isArray(snapshot?.command) ? { command: snapshot.command as string[] } : {}),
    ...(typeof snapshot?.createdAt === 'string' ? { createdAt: snapshot.createdAt } : {}),
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
  readonly events: readonly EventRecord[];
  readonly chain: ReturnType<typeof verifyEventChain>;
  /** What the evidence proves of itself, and what it cannot (verify-run.ts). */
  readonly verification: RunVerification;
}

export async function showRun(root: string, runId: string): Promise<RunDetail> {
  if (!isRunId(runId)) {
    throw new ConfigError('invalid_run_id', `run id: '${runId}' is not a run id`, {
      field: 'runId',
      value: runId,
    });
  }
  const dir = path.join(root, runId);
  const isDir = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir) {
    throw new ConfigError('unknown_run', `run id: no run '${runId}' under ${root}`, {
      field: 'runId',
      value: runId,
    });
  }
  const body = await readFile(path.join(dir, RUN_FILES.events), 'utf8').catch(() => undefined);
  const [summary, state, snapshot, report] = await Promise.all([
    summarize(root, runId),
    readJson(path.join(dir, RUN_FILES.state)),
    readJson(path.join(dir, RUN_FILES.snapshot)),
    readJson(path.join(dir, RUN_FILES.report)),
  ]);
  const events: EventRecord[] = [];
  for (const line of (body ?? '').split('\n')) {
    if (line === '') continue;
    try {
      events.push(JSON.parse(line) as EventRecord);
    } catch {
      break; // verifyEventChain says where the log is damaged
    }
  }
  const verification = await verifyRunDirectory(dir, body ?? '', events, state, report);
  return {
    runId,
    dir,
    summary,
    eventLog: body !== undefined,
    state,
    snapshot,
    report,
    events,
    chain: verifyEventChain(body ?? ''),
    verification,
  };
}
