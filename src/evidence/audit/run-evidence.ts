// A run directory read once, for the audit, the report and the export: every line of the
// log (parsed, with its envelope and data checked against the registry), the documents as
// found (raw, so each check parses the part it relies on), the transcript, and every file
// under the directory with its digest. Nothing here decides a verdict; unreadable pieces
// are kept with the reason, so the check that needs them can say where.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { ArtifactError } from '../../errors.js';
import { RUN_FILES } from '../run-directory.js';
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

export interface RunFile {
  readonly rel: string;
  readonly kind: 'file' | 'symlink' | 'other';
  readonly bytes: number;
  readonly sha256?: string;
}

export interface TranscriptLine {
  readonly line: number;
  readonly message: TranscriptMessage | undefined;
  readonly problem?: string;
}

export interface RunEvidence {
  readonly dir: string;
  readonly runId: string;
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
  /** The writer's lock is there (the run is being written, or its writer died). */
  readonly locked: boolean;
}

/** Reads a run directory; throws ArtifactError only when there is no evidence to read. */
export async function loadRunEvidence(dir: string): Promise<RunEvidence> {
  let eventsBody: string;
  try {
    eventsBody = await readFile(path.join(dir, RUN_FILES.events), 'utf8');
  } catch (error) {
    throw new ArtifactError(
      'evidence_unreadable',
      `${dir}: no readable ${RUN_FILES.events} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      error,
    );
  }
  const { events, badLines } = parseEvents(eventsBody);
  const [snapshot, report, state, signature, transcript, files, locked] = await Promise.all([
    readDocument(path.join(dir, RUN_FILES.snapshot)),
    readDocument(path.join(dir, RUN_FILES.report)),
    readDocument(path.join(dir, RUN_FILES.state)),
    readDocument(path.join(dir, RUN_FILES.signature)),
    readTranscript(path.join(dir, RUN_FILES.transcript)),
    listRunFiles(dir),
    lstat(path.join(dir, RUN_FILES.lock)).then(
      () => true,
      () => false,
    ),
  ]);
  return {
    dir,
    runId: path.basename(dir),
    eventsBody,
    events,
    badLines,
    snapshot,
    report,
    state,
    signature,
    transcript,
    files,
    locked,
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

async function readDocument(file: string): Promise<LoadedDocument> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return { present: false, value: undefined };
  }
  try {
    return { present: true, value: JSON.parse(text) as unknown };
  } catch {
    return { present: true, value: undefined, problem: 'not JSON' };
  }
}

async function readTranscript(file: string): Promise<TranscriptLine[] | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  const out: TranscriptLine[] = [];
  for (const [i, line] of text.split('\n').entries()) {
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

/** Every entry under the run directory but the lock, relative, with the digest of each file. */
async function listRunFiles(dir: string, prefix = ''): Promise<RunFile[]> {
  const out: RunFile[] = [];
  let entries;
  try {
    entries = await readdir(path.join(dir, prefix), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    if (rel === RUN_FILES.lock) continue;
    const full = path.join(dir, rel);
    if (e.isDirectory()) out.push(...(await listRunFiles(dir, rel)));
    else if (e.isSymbolicLink()) {
      // Digested through the link, so the digest check and the confinement check each
      // judge their own part: what the bytes are, and that they live inside the directory.
      const through = await digestFile(full).catch(() => undefined);
      out.push({
        rel,
        kind: 'symlink',
        bytes: through?.bytes ?? 0,
        ...(through === undefined ? {} : { sha256: through.sha256 }),
      });
    } else if (e.isFile()) {
      const { sha256, bytes } = await digestFile(full);
      out.push({ rel, kind: 'file', bytes, sha256 });
    } else out.push({ rel, kind: 'other', bytes: 0 });
  }
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

async function digestFile(file: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { sha256: hash.digest('hex'), bytes };
}
