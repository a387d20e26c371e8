// events.jsonl: append-only, ordered by `seq`, each line carrying the hash of the one
// before it, so a removed, reordered or edited line breaks the chain (AH-ART-1).
// Lifecycle events are fsynced before append() resolves (AH-LIFE-2).
import { createHash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { ArtifactError } from '../errors.js';
import { canonicalJson } from './canonical-json.js';
import {
  EVENT_SCHEMA,
  eventDataIssues,
  type EventInput,
  type EventType,
} from './schema/registry.js';

export const GENESIS_HASH = '0'.repeat(64);

/**
 * What removes the credentials a run holds from what its evidence is given (host tools'
 * scrubber, AH-TOOL-7): one chokepoint for every event and output, not each producer.
 */
export interface Redactor {
  value(input: unknown): unknown;
  bytes(input: Buffer): Buffer;
}

/**
 * A record redacted as the JSON it is written as (keys, strings and numbers, and what two
 * of them spell together), still a record.
 */
export function redactRecord(
  redactor: Redactor | undefined,
  data: Readonly<Record<string, unknown>>,
): Readonly<Record<string, unknown>> {
  if (redactor === undefined) return data;
  const out = redactor.value(data);
  return typeof out === 'object' && out !== null && !Array.isArray(out)
    ? Object.fromEntries(Object.entries(out))
    : {};
}

export interface EventRecord {
  /** The envelope's version (schema/registry.ts); absent only in logs written before it. */
  readonly schema?: string;
  readonly seq: number;
  readonly ts: string;
  readonly runId: string;
  readonly type: string;
  readonly data: Readonly<Record<string, unknown>>;
  readonly prevHash: string;
  readonly hash: string;
}

export function hashEvent(event: Omit<EventRecord, 'hash'>): string {
  return createHash('sha256').update(canonicalJson(event)).digest('hex');
}

/**
 * Sees each record exactly as appended: the line's bytes (its line feed included) once the
 * write returned, and after the fsync for a durable event (`durable`: this record, and so
 * every one before it, is on disk); called in seq order, from the append chain, so a
 * listener sees every record once and never one the file lacks. `sync` makes every record
 * so far durable through the log's own descriptor (EventLog.sync).
 */
export type EventListener = (
  line: string,
  record: EventRecord,
  durable?: boolean,
  sync?: () => Promise<void>,
) => void;

export class EventLog implements AsyncDisposable {
  readonly #handle: FileHandle;
  readonly #runId: string;
  #seq = 0;
  #prevHash = GENESIS_HASH;
  #tail: Promise<unknown> = Promise.resolve();
  #closed = false;
  readonly #listeners = new Set<EventListener>();
  /** Set once a run holds credentials (RunDirectory.redactWith). */
  redactor: Redactor | undefined;

  private constructor(handle: FileHandle, runId: string) {
    this.#handle = handle;
    this.#runId = runId;
  }

  static async create(file: string, runId: string): Promise<EventLog> {
    return new EventLog(await open(file, 'wx', 0o640), runId);
  }

  /** Continues an existing, verified log after its last event (seq, hash). */
  static async resume(file: string, runId: string, last: EventRecord): Promise<EventLog> {
    const log = new EventLog(await open(file, 'a'), runId);
    log.#seq = last.seq;
    log.#prevHash = last.hash;
    return log;
  }

  /**
   * Adds a listener for every record appended from now on (`--events jsonl`, the tally of
   * blocked calls); returns its removal. A listener that throws is removed: it can never
   * stop the log or fail the run's evidence.
   */
  subscribe(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  get lastHash(): string {
    return this.#prevHash;
  }

  get lastSeq(): number {
    return this.#seq;
  }

  /**
   * Appends in call order; `durable` fsyncs before resolving. The data is checked against
   * the type's registered schema before anything is written: the log never holds an event
   * its readers would reject.
   */
  append<T extends EventType>(type: T, data: EventInput<T>, durable = false): Promise<EventRecord> {
    // Checked at run time too: a caller that widened its types, or data built with spreads.
    // eventDataIssues also refuses a type that is not registered (a cast around the types).
    // What is written is checked: the redacted data, as its readers will see it.
    const written = redactRecord(this.redactor, data);
    const issues = eventDataIssues(type, written);
    if (issues.length > 0) {
      return Promise.reject(
        new ArtifactError(
          'evidence_schema_violation',
          `event ${type} does not match its schema: ${issues.join('; ')}`,
        ),
      );
    }
    const next = this.#tail.then(async () => {
      if (this.#closed) throw new Error(`event log closed; cannot append ${type}`);
      const base = {
        schema: EVENT_SCHEMA,
        seq: this.#seq + 1,
        ts: new Date().toISOString(),
        runId: this.#runId,
        type,
        data: written,
        prevHash: this.#prevHash,
      };
      const record: EventRecord = { ...base, hash: hashEvent(base) };
      const line = `${JSON.stringify(record)}\n`;
      await this.#handle.appendFile(line);
      if (durable) await this.#handle.datasync();
      this.#seq = record.seq;
      this.#prevHash = record.hash;
      this.#notify(line, record, durable);
      return record;
    });
    this.#tail = next.catch(() => undefined);
    return next;
  }

  /**
   * Every record appended so far on disk, through the descriptor the log already holds. A
   * listener that must not pass a record on before it is durable (a session's feed) syncs
   * with this, never with a descriptor of its own opened later: by then the process may act
   * under another identity (a draft copied as its owner) and be refused the run directory.
   * A closed log was synced as it closed.
   */
  readonly sync = (): Promise<void> => {
    const next = this.#tail.then(async () => {
      if (!this.#closed) await this.#handle.datasync();
    });
    this.#tail = next.catch(() => undefined);
    return next;
  };

  #notify(line: string, record: EventRecord, durable: boolean): void {
    for (const listener of this.#listeners) {
      try {
        listener(line, record, durable, this.sync);
      } catch {
        this.#listeners.delete(listener);
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#tail;
    this.#closed = true;
    await this.#handle.sync();
    await this.#handle.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

export interface ChainCheck {
  readonly ok: boolean;
  readonly events: number;
  readonly problem?: string;
}

/** Verifies order and hash chain of an events.jsonl body. */
export function verifyEventChain(body: string): ChainCheck {
  let prev = GENESIS_HASH;
  let count = 0;
  for (const line of body.split('\n')) {
    if (line === '') continue;
    let record: EventRecord;
    try {
      record = JSON.parse(line) as EventRecord;
    } catch {
      return { ok: false, events: count, problem: `line ${count + 1}: not JSON (torn or edited)` };
    }
    const { hash, ...rest } = record;
    if (record.seq !== count + 1)
      return { ok: false, events: count, problem: `seq ${record.seq} after ${count}` };
    if (record.prevHash !== prev)
      return { ok: false, events: count, problem: `seq ${record.seq}: prevHash mismatch` };
    if (hashEvent(rest) !== hash)
      return { ok: false, events: count, problem: `seq ${record.seq}: hash mismatch` };
    prev = hash;
    count += 1;
  }
  return { ok: true, events: count };
}
