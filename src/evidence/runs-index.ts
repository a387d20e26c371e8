// Reading run directories back for `cfh runs list` and `cfh runs show`.
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
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

export interface RunSummary {
  readonly runId: string;
  readonly kind: 'command' | 'agent';
  readonly state: string;
  /** The cfh process that writes the run, as its snapshot names it. */
  readonly caller?: RunCaller;
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

async function summarize(root: string, runId: string): Promise<RunSummary> {
  const dir = path.join(root, runId);
  const [state, snapshot] = await Promise.all([
    readJson(path.join(dir, RUN_FILES.state)),
    readJson(path.join(dir, RUN_FILES.snapshot)),
  ]);
  const profile = snapshot?.profile as { name?: string } | undefined;
  return {
    runId,
    kind: snapshot?.kind === 'agent' ? 'agent' : 'command',
    state: typeof state?.state === 'string' ? state.state : 'unknown',
    ...(typeof snapshot?.caller === 'object' && snapshot.caller !== null
      ? { caller: snapshot.caller }
      : {}),
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
  let body: string;
  try {
    body = await readFile(path.join(dir, RUN_FILES.events), 'utf8');
  } catch {
    throw new ConfigError('unknown_run', `run id: no run '${runId}' under ${root}`, {
      field: 'runId',
      value: runId,
    });
  }
  const [state, snapshot, report] = await Promise.all([
    readJson(path.join(dir, RUN_FILES.state)),
    readJson(path.join(dir, RUN_FILES.snapshot)),
    readJson(path.join(dir, RUN_FILES.report)),
  ]);
  const events: EventRecord[] = [];
  for (const line of body.split('\n')) {
    if (line === '') continue;
    try {
      events.push(JSON.parse(line) as EventRecord);
    } catch {
      break; // verifyEventChain says where the log is damaged
    }
  }
  const verification = await verifyRunDirectory(dir, body, events, state, report);
  return {
    runId,
    dir,
    state,
    snapshot,
    report,
    events,
    chain: verifyEventChain(body),
    verification,
  };
}
