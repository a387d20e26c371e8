// A run directory read once, for the audit, the report and the export: every line of the
// log (parsed, with its envelope and data checked against the registry), the documents as
// found (raw, so each check parses the part it relies on), the transcript, and every file
// under the directory with its digest. Nothing here decides a verdict; unreadable pieces
// are kept with the reason, so the check that needs them can say where.
import path from 'node:path';
import { ArtifactError } from '../../errors.js';
import { RUN_FILES } from '../run-directory.js';
import { READ_CAPS, RunReader, describeKind, type RunEntry } from '../run-reader.js';
import {
  EVENT_SCHEMAS,
  EventEnvelope,
  isEventType,
  issueText,
  type EventData,
  type EventType,
} from '../schema/registry.js';
import { TranscriptMessage } from '../schema/transcript.js';

export interface LoadedEvent {
  /** 1-based line of events.jsonl. */
  readonly line: number;
  readonly seq: number;
  readonly type: string;
  readonly ts: string;
  /** The line as parsed (envelope and all): what the chain check hashes. */
  readonly record: Readonly<Record<string, unknown>>;
  readonly data: Readonly<Record<string, unknown>>;
  /** The data as its schema parsed it; undefined when it did not. */
  readonly parsed: unknown;
  /** Envelope and data issues against the registry, in words. */
  readonly issues: readonly string[];
}

export interface LoadedDocument {
  readonly present: boolean;
  /** The parsed JSON, when the file is there and is JSON. */
  readonly value: unknown;
  readonly problem?: string;
}

export interface RunFile extends RunEntry {
  /** Of a regular file the log records, read no further than its recorded size. */
  readonly sha256?: string;
  /** Why it was not read: not a regular file, bigger than recorded, a link on its way. */
  readonly problem?: string;
}

export interface TranscriptLine {
  readonly line: number;
  readonly message: TranscriptMessage | undefined;
  readonly problem?: string;
}

export interface RunEvidence {
  readonly dir: string;
  readonly runId: string;
  /** events.jsonl: there, and if it could not be read, why (a link, a FIFO, too big). */
  readonly eventLog: { readonly present: boolean; readonly problem?: string };
  readonly eventsBody: string;
  readonly events: readonly LoadedEvent[];
  /** Lines that are not JSON objects at all (torn, edited). */
  readonly badLines: readonly { line: number; problem: string }[];
  readonly snapshot: LoadedDocument;
  readonly report: LoadedDocument;
  readonly state: LoadedDocument;
  readonly signature: LoadedDocument;
  readonly transcript: readonly TranscriptLine[] | undefined;
  readonly files: readonly RunFile[];
  /** Why the listing of the directory is incomplete: what it could not descend into. */
  readonly listProblems: readonly string[];
  /** The writer's lock is there (the run is being written, or its writer died). */
  readonly locked: boolean;
}

/** Reads a run directory; throws ArtifactError only when there is no evidence to read. */
export async function loadRunEvidence(dir: string): Promise<RunEvidence> {
  await using reader = await RunReader.open(dir);
  const run = await readRunEvidence(reader);
  if (run.eventLog.problem !== undefined)
    throw new ArtifactError('evidence_unreadable', `${dir}: ${run.eventLog.problem}`);
  return run;
}

/**
 * Reads the run directory `reader` holds open, through it only (run-reader.ts): a missing or
 * unreadable piece is kept with the reason, never followed, never read past its bound.
 */
export async function readRunEvidence(reader: RunReader): Promise<RunEvidence> {
  const dir = reader.dir;
  const log = await reader.readText(RUN_FILES.events, READ_CAPS.events);
  const eventsBody = log.ok ? log.value : '';
  const { events, badLines } = parseEvents(eventsBody);
  const [snapshot, report, state, signature, transcript, listing, lock] = await Promise.all([
    readDocument(reader, RUN_FILES.snapshot),
    readDocument(reader, RUN_FILES.report),
    readDocument(reader, RUN_FILES.state),
    readDocument(reader, RUN_FILES.signature),
    readTranscript(reader),
    reader.list(new Set([RUN_FILES.lock])),
    reader.entryKind(RUN_FILES.lock),
  ]);
  return {
    dir,
    runId: path.basename(dir),
    eventLog: log.ok ? { present: true } : { present: !log.missing, problem: log.problem },
    eventsBody,
    events,
    badLines,
    snapshot,
    report,
    state,
    signature,
    transcript,
    files: await digestRecorded(reader, listing.entries, events),
    listProblems: listing.problems,
    locked: lock !== undefined,
  };
}

export function parseEvents(body: string): {
  events: LoadedEvent[];
  badLines: { line: number; problem: string }[];
} {
  const events: LoadedEvent[] = [];
  const badLines: { line: number; problem: string }[] = [];
  const lines = body.split('\n');
  for (const [i, text] of lines.entries()) {
    if (text === '') {
      if (i < lines.length - 1) badLines.push({ line: i + 1, problem: 'empty line' });
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      badLines.push({ line: i + 1, problem: 'not JSON (torn or edited)' });
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      badLines.push({ line: i + 1, problem: 'not a JSON object' });
      continue;
    }
    events.push(loadEvent(i + 1, value as Record<string, unknown>));
  }
  return { events, badLines };
}

function loadEvent(line: number, record: Record<string, unknown>): LoadedEvent {
  const issues: string[] = [];
  const envelope = EventEnvelope.safeParse(record);
  if (!envelope.success)
    issues.push(...envelope.error.issues.map((i) => `envelope ${issueText(i)}`));
  const type = typeof record.type === 'string' ? record.type : '';
  const data =
    typeof record.data === 'object' && record.data !== null && !Array.isArray(record.data)
      ? (record.data as Record<string, unknown>)
      : {};
  let parsed: unknown;
  if (!isEventType(type)) issues.push(`type '${type}' is not in the event registry`);
  else {
    const result = EVENT_SCHEMAS[type].safeParse(data);
    if (result.success) parsed = result.data;
    else issues.push(...result.error.issues.map((i) => `data ${issueText(i)}`));
  }
  return {
    line,
    seq: typeof record.seq === 'number' ? record.seq : Number.NaN,
    type,
    ts: typeof record.ts === 'string' ? record.ts : '',
    record,
    data,
    parsed,
    issues,
  };
}

/** A readable event of `type` with its data as the registry's schema parsed it. */
export interface TypedEvent<T extends EventType> {
  readonly line: number;
  readonly seq: number;
  readonly ts: string;
  readonly type: T;
  readonly data: EventData<T>;
}

/** The events of `type` whose data parsed, in log order. */
export function eventsOf<T extends EventType>(
  run: Pick<RunEvidence, 'events'>,
  type: T,
): TypedEvent<T>[] {
  const out: TypedEvent<T>[] = [];
  for (const e of run.events) {
    if (e.type !== type || e.parsed === undefined) continue;
    // `parsed` is EVENT_SCHEMAS[type]'s output for this very type (loadEvent).
    out.push({ line: e.line, seq: e.seq, ts: e.ts, type, data: e.parsed as EventData<T> });
  }
  return out;
}

/** How many events of these types could not be read: a check that needs them is inconclusive. */
export function unreadable(run: Pick<RunEvidence, 'events'>, ...types: EventType[]): number {
  return run.events.filter((e) => types.includes(e.type as EventType) && e.parsed === undefined)
    .length;
}

async function readDocument(reader: RunReader, name: string): Promise<LoadedDocument> {
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

async function readTranscript(reader: RunReader): Promise<TranscriptLine[] | undefined> {
  const read = await reader.readText(RUN_FILES.transcript, READ_CAPS.transcript);
  if (!read.ok)
    return read.missing ? undefined : [{ line: 0, message: undefined, problem: read.problem }];
  const out: TranscriptLine[] = [];
  for (const [i, line] of read.value.split('\n').entries()) {
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      out.push({ line: i + 1, message: undefined, problem: 'not JSON' });
      continue;
    }
    const parsed = TranscriptMessage.safeParse(value);
    out.push(
      parsed.success
        ? { line: i + 1, message: parsed.data }
        : {
            line: i + 1,
            message: undefined,
            problem: parsed.error.issues.map(issueText).join('; '),
          },
    );
  }
  return out;
}

/**
 * Every entry as listed, with the digest of each regular file the log records, read no
 * further than the size its record declares (a file grown past it is a problem, not a
 * long read). Entries no record covers are not read: the unaccounted check names them.
 */
async function digestRecorded(
  reader: RunReader,
  entries: readonly RunEntry[],
  events: readonly LoadedEvent[],
): Promise<RunFile[]> {
  const declared = new Map<string, number | undefined>();
  for (const e of events) {
    if (e.type !== 'artifact_written' || e.parsed === undefined) continue;
    const data = EVENT_SCHEMAS.artifact_written.parse(e.parsed);
    declared.set(data.file, data.bytes);
  }
  const out: RunFile[] = [];
  for (const entry of entries) {
    if (entry.kind !== 'file') {
      out.push({
        ...entry,
        problem:
          entry.kind === 'symlink'
            ? `${entry.rel}: a symbolic link, not followed`
            : `${entry.rel}: ${describeKind(entry.kind)}, not a regular file; not read`,
      });
      continue;
    }
    if (!declared.has(entry.rel)) {
      out.push(entry);
      continue;
    }
    const digest = await reader.digest(entry.rel, declared.get(entry.rel) ?? READ_CAPS.digest);
    out.push(
      digest.ok
        ? { ...entry, bytes: digest.value.bytes, sha256: digest.value.sha256 }
        : { ...entry, problem: digest.problem },
    );
  }
  // A recorded file the listing did not find as an entry: a directory stands there, or a
  // link on its way (the listing does not descend into one). Said, never followed.
  const listed = new Set(entries.map((e) => e.rel));
  for (const rel of declared.keys()) {
    if (listed.has(rel)) continue;
    const tried = await reader.digest(rel, 0);
    if (tried.ok || tried.missing) continue;
    // lstat through a link on the way would name its target's kind: 'other' then.
    const found = await reader.entryKind(rel);
    const kind = found === undefined || found === 'file' ? 'other' : found;
    out.push({ rel, kind, bytes: 0, problem: tried.problem });
  }
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}
