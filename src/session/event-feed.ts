// A session's events as its caller sees them: each record sent only once it is durable in
// events.jsonl (a batch fsynced, then sent in seq order), and replayed from any cursor by
// reading the file back, never from memory (AH-INT-3). The cursor is the log's own `seq`.
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { ArtifactError, errorMessage } from '../errors.js';
import { verifyEventChain, type EventRecord } from '../evidence/event-log.js';

/** The most events one replay answer holds; the caller asks again from the next seq. */
export const REPLAY_PAGE = 500;

export class DurableFeed {
  readonly #file: string;
  readonly #send: (record: EventRecord) => void;
  readonly #pending: EventRecord[] = [];
  #handle: FileHandle | undefined;
  #flushing: Promise<void> | undefined;
  #durableSeq = 0;
  #failed = false;

  constructor(file: string, send: (record: EventRecord) => void) {
    this.#file = file;
    this.#send = send;
  }

  /** The highest seq known durable (and sent). */
  get durableSeq(): number {
    return this.#durableSeq;
  }

  /** For EventLog.subscribe / RunDeps.events: called in seq order as records are written. */
  readonly listener = (_line: string, record: EventRecord): void => {
    this.#pending.push(record);
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = undefined;
    });
  };

  async #flush(): Promise<void> {
    while (this.#pending.length > 0 && !this.#failed) {
      const batch = this.#pending.splice(0);
      try {
        // fdatasync of any descriptor of the file flushes the file's data: what is sent
        // survives a crash of cfh or of the machine.
        this.#handle ??= await open(this.#file, 'r');
        await this.#handle.datasync();
      } catch (error) {
        // Not sent unless durable: the caller can replay what did reach the disk.
        this.#failed = true;
        process.stderr.write(`cfh: session events not synced (${errorMessage(error)})\n`);
        return;
      }
      for (const record of batch) {
        this.#durableSeq = record.seq;
        this.#send(record);
      }
    }
  }

  /** Every record written so far is durable and sent. */
  async settle(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing;
  }

  async close(): Promise<void> {
    await this.settle();
    await this.#handle?.close();
    this.#handle = undefined;
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
