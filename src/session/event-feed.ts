// A session's events as its caller sees them: each record sent only once it is durable in
// events.jsonl (a batch fsynced through the log's own descriptor, or covered by the log's
// own fsync of a later durable record, then sent in seq order), and replayed from any
// cursor by reading the file back, never from memory (AH-INT-3). The cursor is the log's
// own `seq`.
import { readFile } from 'node:fs/promises';
import { ArtifactError, errorMessage } from '../errors.js';
import { verifyEventChain, type EventRecord } from '../evidence/event-log.js';

/** The most events one replay answer holds; the caller asks again from the next seq. */
export const REPLAY_PAGE = 500;

/**
 * How long a record that is not itself durable waits for one that is (group commit): a
 * turn's events come in bursts closed by a durable one (a decision, the turn's end), whose
 * fsync covers every record before it, so they are sent then without a sync of their own.
 * A burst with none is synced by the feed once this has passed.
 */
export const GROUP_COMMIT_MS = 5;

export class DurableFeed {
  readonly #send: (record: EventRecord) => void;
  readonly #pending: EventRecord[] = [];
  /** The log's own sync (EventLog.sync): the feed never opens the file itself. */
  #sync: (() => Promise<void>) | undefined;
  #flushing: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** A flush was asked for while one ran. */
  #again = false;
  /** The highest seq the log itself made durable (an event appended with fsync). */
  #syncedSeq = 0;
  #durableSeq = 0;
  #failed = false;
  /** fdatasync calls the feed made itself (the log's own are not counted). */
  syncs = 0;

  constructor(send: (record: EventRecord) => void) {
    this.#send = send;
  }

  /** The highest seq known durable (and sent). */
  get durableSeq(): number {
    return this.#durableSeq;
  }

  /** For EventLog.subscribe / RunDeps.events: called in seq order as records are written. */
  readonly listener = (
    _line: string,
    record: EventRecord,
    durable = false,
    sync?: () => Promise<void>,
  ): void => {
    this.#sync ??= sync;
    this.#pending.push(record);
    if (durable) {
      // On disk, and so is every record before it: sent now, no sync of the feed's own.
      this.#syncedSeq = record.seq;
      this.#kick();
    } else this.#arm();
  };

  /** A flush once the group-commit delay has passed, unless one comes sooner. */
  #arm(): void {
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#kick();
    }, GROUP_COMMIT_MS);
  }

  #kick(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#flushing !== undefined) {
      // The flush in hand may already have looked at the queue: it runs again after.
      this.#again = true;
      return;
    }
    this.#flushing = this.#flush().finally(() => {
      this.#flushing = undefined;
      const again = this.#again;
      this.#again = false;
      if (this.#pending.length === 0 || this.#failed) return;
      if (again) this.#kick();
      else this.#arm();
    });
  }

  async #flush(): Promise<void> {
    while (this.#pending.length > 0 && !this.#failed) {
      const batch = this.#pending.splice(0);
      const last = batch.at(-1)?.seq ?? 0;
      if (last > this.#syncedSeq) {
        try {
          // What is sent survives a crash of cfh or of the machine.
          if (this.#sync === undefined) throw new Error('the log gave no way to sync it');
          await this.#sync();
          this.syncs += 1;
          this.#syncedSeq = Math.max(this.#syncedSeq, last);
        } catch (error) {
          // Not sent unless durable: the caller can replay what did reach the disk.
          this.#failed = true;
          process.stderr.write(`cfh: session events not synced (${errorMessage(error)})\n`);
          return;
        }
      }
      for (const record of batch) {
        this.#durableSeq = record.seq;
        this.#send(record);
      }
    }
  }

  /** Every record written so far is durable and sent. */
  async settle(): Promise<void> {
    while (this.#flushing !== undefined || (this.#pending.length > 0 && !this.#failed)) {
      if (this.#flushing === undefined) this.#kick();
      await this.#flushing;
    }
  }

  async close(): Promise<void> {
    await this.settle();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * The records of `file` from `fromSeq` on (at most `upTo`, at most REPLAY_PAGE of them),
 * read back from the file after verifying its chain: a broken chain is refused, not skipped.
 */
export async function replayEvents(
  file: string,
  fromSeq: number,
  upTo: number,
): Promise<{ events: EventRecord[]; nextSeq: number; lastSeq: number }> {
  const body = await readFile(file, 'utf8');
  // A line being written (no line feed yet) is not part of what was promised.
  const complete = body.slice(0, body.lastIndexOf('\n') + 1);
  const chain = verifyEventChain(complete);
  if (!chain.ok)
    throw new ArtifactError(
      'evidence_broken',
      `${file}: the event chain does not verify (${chain.problem ?? 'broken'})`,
    );
  const events: EventRecord[] = [];
  let lastSeq = 0;
  for (const line of complete.split('\n')) {
    if (line === '') continue;
    const record = JSON.parse(line) as EventRecord;
    if (record.seq > upTo) break;
    lastSeq = record.seq;
    if (record.seq >= fromSeq && events.length < REPLAY_PAGE) events.push(record);
  }
  const nextSeq =
    events.length === 0 ? Math.max(fromSeq, lastSeq + 1) : (events.at(-1)?.seq ?? 0) + 1;
  return { events, nextSeq, lastSeq };
}
