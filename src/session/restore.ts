// What a session is restored from (AH-INT-4): the last run of the session under the
// artifact root, its event chain verified whole (a torn or edited line fails closed), and
// the conversation rebuilt from its transcript, only as far as the chain vouches for it
// (the transcript's length and digest at the last `turn_completed`, or at the run's own
// `session_restored`): never synthesised. The restored session is a new run linked to this
// one (snapshot `session.restoredFrom`, event `session_restored` with the old last hash).
import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../errors.js';
import { verifyEventChain, type EventRecord } from '../evidence/event-log.js';
import { RUN_FILES } from '../evidence/run-directory.js';
import { isRunId } from '../evidence/run-id.js';
import { TERMINAL_STATES } from '../evidence/runs-index.js';
import { TranscriptMessage } from '../evidence/schema/transcript.js';
import { sessionEvents } from '../evidence/schema/events-session.js';
import { processStart } from '../sandbox/owner.js';
import type { CarriedContext } from '../cfc/carried.js';
import { carriedFromRun, recordedSources } from '../engine/cfc/cfc-carry.js';
import { HeldValuesUnreadable } from '../evidence/held-values.js';
import type { ModelMessage } from '../model/gateway.js';
import type { SessionAuthority } from './authority.js';
import { SessionError } from './session-error.js';

export interface Restorable {
  readonly sessionId: string;
  readonly fromRunId: string;
  readonly lastSeq: number;
  readonly lastHash: string;
  /** Turns the session has numbered so far (a turn cut short keeps its id). */
  readonly turns: number;
  readonly modelRequests: number;
  readonly messages: readonly ModelMessage[];
  readonly transcriptSha256: string;
  readonly authority: SessionAuthority;
  /** The old model context: its label at its end and the values its handles name. */
  readonly carried: CarriedContext;
}

/** Bounds of what is read back: a run's snapshot, events and transcript. */
const MAX_SNAPSHOT_BYTES = 4 << 20;
const MAX_LOG_BYTES = 256 << 20;

const SessionPart = z.looseObject({
  createdAt: z.string(),
  caller: z.looseObject({
    pid: z.number().int().optional(),
    start: z.string().optional(),
    host: z.string().optional(),
  }),
  session: z.looseObject({
    id: z.string(),
    authority: z.record(z.string(), z.unknown()),
    restoredFrom: z.looseObject({ runId: z.string() }).nullable(),
  }),
  cfc: z.unknown().optional(),
});
type SessionPart = z.infer<typeof SessionPart>;

function broken(sessionId: string, runId: string, why: string): SessionError {
  return new SessionError(
    'session_restore_broken',
    `session ${sessionId}: run ${runId} cannot be restored: ${why}`,
    { sessionId, runId },
    'its evidence does not verify; open a new session',
  );
}

async function readBounded(file: string, max: number): Promise<Buffer | undefined> {
  try {
    const body = await readFile(file);
    return body.length > max ? undefined : body;
  } catch {
    return undefined;
  }
}

/** The runs of the session under `root`, each with its snapshot's session part. */
export async function runsOf(
  root: string,
  sessionId: string,
): Promise<{ runId: string; snap: SessionPart }[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    names = [];
  }
  const found: { runId: string; snap: SessionPart }[] = [];
  for (const name of names.filter(isRunId)) {
    const body = await readBounded(path.join(root, name, RUN_FILES.snapshot), MAX_SNAPSHOT_BYTES);
    if (body === undefined) continue;
    let parsed: z.ZodSafeParseResult<SessionPart>;
    try {
      parsed = SessionPart.safeParse(JSON.parse(body.toString('utf8')));
    } catch {
      continue;
    }
    if (parsed.success && parsed.data.session.id === sessionId)
      found.push({ runId: name, snap: parsed.data });
  }
  return found;
}

/** The run the session continues from: the one no other run of the session restored. */
async function lastRun(
  root: string,
  sessionId: string,
): Promise<{ runId: string; snap: SessionPart }> {
  const runs = await runsOf(root, sessionId);
  const continued = new Set(runs.map((r) => r.snap.session.restoredFrom?.runId));
  const tails = runs
    .filter((r) => !continued.has(r.runId))
    .sort((a, b) => a.snap.createdAt.localeCompare(b.snap.createdAt));
  const tail = tails.at(-1);
  if (tail === undefined)
    throw new SessionError(
      'session_not_open',
      `no session ${sessionId} under ${root}`,
      { sessionId, artifactRoot: root },
      'give the sessionId session/open returned, with the same --artifact-root',
    );
  return tail;
}

/** A run whose writer still runs is that cfh's session, never attached from here. */
async function refuseLive(root: string, runId: string, snap: SessionPart, sessionId: string) {
  const state = await readBounded(path.join(root, runId, RUN_FILES.state), MAX_SNAPSHOT_BYTES);
  const parsed = z
    .looseObject({ state: z.string() })
    .safeParse(state === undefined ? {} : JSON.parse(state.toString('utf8')));
  if (parsed.success && TERMINAL_STATES.includes(parsed.data.state)) return;
  const { pid, start, host } = snap.caller;
  const alive =
    pid !== undefined &&
    host === hostname() &&
    start !== undefined &&
    processStart(pid) === start &&
    pid !== process.pid;
  if (alive)
    throw new SessionError(
      'session_live_elsewhere',
      `session ${sessionId} is open in cfh process ${pid} (run ${runId})`,
      { sessionId, runId, pid },
      'close it there first, or end that process',
    );
}

/** Reads, verifies and rebuilds what the session continues from. */
export async function loadRestorable(root: string, sessionId: string): Promise<Restorable> {
  const { runId, snap } = await lastRun(root, sessionId);
  await refuseLive(root, runId, snap, sessionId);
  const dir = path.join(root, runId);
  const log = await readBounded(path.join(dir, RUN_FILES.events), MAX_LOG_BYTES);
  if (log === undefined) throw broken(sessionId, runId, 'events.jsonl is missing or too large');
  const body = log.toString('utf8');
  if (!body.endsWith('\n')) throw broken(sessionId, runId, 'events.jsonl ends in a torn line');
  const chain = verifyEventChain(body);
  if (!chain.ok) throw broken(sessionId, runId, `events.jsonl: ${chain.problem ?? 'broken'}`);
  const records = body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as EventRecord);
  const last = records.at(-1);
  if (last === undefined) throw broken(sessionId, runId, 'events.jsonl is empty');
  let turns = 0;
  let vouched: { messages: number; sha256: string; modelRequests: number } | undefined;
  for (const r of records) {
    if (r.type === 'turn_started') {
      const d = sessionEvents.turn_started.parse(r.data);
      turns = Math.max(turns, Number(d.turnId.slice('turn-'.length)));
    } else if (r.type === 'turn_completed') {
      const d = sessionEvents.turn_completed.parse(r.data);
      vouched = {
        messages: d.transcriptMessages,
        sha256: d.transcriptSha256,
        modelRequests: d.modelRequests,
      };
    } else if (r.type === 'session_restored') {
      const d = sessionEvents.session_restored.parse(r.data);
      turns = Math.max(turns, d.turns);
      vouched = {
        messages: d.transcriptMessages,
        sha256: d.transcriptSha256,
        modelRequests: d.modelRequests,
      };
    }
  }
  const messages = await vouchedMessages(dir, vouched, (why) => broken(sessionId, runId, why));
  // The restored conversation keeps its label and its handles' referents (cfc/carried.ts).
  let carried: CarriedContext;
  try {
    carried = await carriedFromRun(
      { runId, dir, events: records, ...recordedSources(snap) },
      'restore',
    );
  } catch (error) {
    if (error instanceof HeldValuesUnreadable) throw broken(sessionId, runId, error.message);
    throw error;
  }
  return {
    carried,
    sessionId,
    fromRunId: runId,
    lastSeq: last.seq,
    lastHash: last.hash,
    turns,
    modelRequests: vouched?.modelRequests ?? 0,
    messages: messages.list,
    transcriptSha256: messages.sha256,
    authority: snap.session.authority,
  };
}

const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

async function vouchedMessages(
  dir: string,
  vouched: { messages: number; sha256: string } | undefined,
  fail: (why: string) => SessionError,
): Promise<{ list: ModelMessage[]; sha256: string }> {
  if (vouched === undefined || vouched.messages === 0) return { list: [], sha256: EMPTY_SHA256 };
  const body = await readBounded(path.join(dir, RUN_FILES.transcript), MAX_LOG_BYTES);
  if (body === undefined) throw fail('transcript.jsonl is missing or too large');
  let end = 0;
  for (let n = 0; n < vouched.messages; n += 1) {
    const nl = body.indexOf(0x0a, end);
    if (nl < 0) throw fail(`transcript.jsonl has fewer than ${vouched.messages} messages`);
    end = nl + 1;
  }
  const prefix = body.subarray(0, end);
  const sha256 = createHash('sha256').update(prefix).digest('hex');
  if (sha256 !== vouched.sha256)
    throw fail('transcript.jsonl differs from what its turn_completed record digests');
  const list: ModelMessage[] = [];
  for (const line of prefix.toString('utf8').split('\n')) {
    if (line === '') continue;
    try {
      list.push(TranscriptMessage.parse(JSON.parse(line)));
    } catch (error) {
      throw fail(`transcript.jsonl: a message does not parse (${errorMessage(error)})`);
    }
  }
  return { list, sha256 };
}
