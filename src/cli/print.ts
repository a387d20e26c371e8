// The CLI's printer: the only place that writes to the terminal, and so the one place that
// keeps untrusted text from driving it. Human-readable lines may hold strings a sandbox, a
// model or a file chose; they are escaped here (terminal-text.ts), whatever built them.
// JSON is printed exact. A command's live output is sanitized only where the stream is a
// TTY (live-output.ts), and passes byte-exact to a pipe or a file.
import { Writable } from 'node:stream';
import { TerminalWriter } from './live-output.js';
import { escapeLine, escapeText, terminalJsonLine } from './terminal-text.js';

/** How much `--events` lets queue on stdout before it stops (a reader that stalled). */
export const EVENT_BUFFER_BYTES = 8 * 1024 * 1024;

export interface LiveOutput {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  /** Writes what an escape sequence split at the very end of the output left over. */
  flush(): void;
  /**
   * Ends the line the command left open (its last byte on stderr, or on a terminal's
   * stdout, was not a line feed), so what cfh says next starts a line of its own.
   */
  endLine(): void;
}

export interface Printer {
  /** One line on stdout: every control or invisible character in it shown escaped. */
  out(line: string): void;
  /** One line on stderr, escaped alike. */
  err(line: string): void;
  /** Multi-line text on stdout (an agent's final answer): line feeds kept, the rest escaped. */
  text(body: string): void;
  json(value: unknown): void;
  /**
   * A file's bytes on stdout (a patch): exact into a pipe or a file, so they can be applied
   * as they are; escaped like `text` on a terminal, where they would be read.
   */
  document(bytes: Buffer): void;
  /**
   * One event record (`--events jsonl`): its bytes exact into a pipe or a file, so the
   * stream is events.jsonl; on a terminal with JSON escapes for what would drive it.
   * False when stdout is not draining (more than EVENT_BUFFER_BYTES unwritten) or is gone:
   * the line was not written.
   */
  eventLine(line: string): boolean;
  /** Raw streams, for commander's own help text and errors. */
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  /** Where a command's live output goes. */
  liveOutput(): LiveOutput;
}

function isTty(stream: NodeJS.WritableStream): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true;
}

/** Whether a stream is a terminal (a document is not written to one unasked: output-target.ts). */
export const isTerminalStream = isTty;

export function streamPrinter(
  stdout: NodeJS.WritableStream,
  stderr: NodeJS.WritableStream,
): Printer {
  return {
    out: (line) => stdout.write(`${escapeLine(line)}\n`),
    err: (line) => stderr.write(`${escapeLine(line)}\n`),
    text: (body) => stdout.write(`${escapeText(body)}\n`),
    json: (value) => stdout.write(`${JSON.stringify(value, null, 2)}\n`),
    document: (bytes) => stdout.write(isTty(stdout) ? escapeText(bytes.toString('utf8')) : bytes),
    eventLine: (line) => {
      const stream = stdout as Partial<Writable>;
      if (stream.destroyed === true || (stream.writableLength ?? 0) > EVENT_BUFFER_BYTES)
        return false;
      stdout.write(isTty(stdout) ? terminalJsonLine(line) : line);
      return true;
    },
    stdout,
    stderr,
    liveOutput: () => {
      const out = isTty(stdout) ? new TerminalWriter(stdout) : undefined;
      const err = isTty(stderr) ? new TerminalWriter(stderr) : undefined;
      const outLine = new LineEndWriter(out ?? stdout);
      const errLine = new LineEndWriter(err ?? stderr);
      return {
        stdout: outLine,
        stderr: errLine,
        flush: () => {
          out?.flushPending();
          err?.flushPending();
        },
        endLine: () => {
          // stdout counts only where it shares the screen with stderr.
          const screen = isTty(stdout) && isTty(stderr) && outLine.midLine;
          if (errLine.midLine || screen) stderr.write('\n');
        },
      };
    },
  };
}

/** Passes bytes on as they are, and remembers whether the last one ended a line. */
class LineEndWriter extends Writable {
  readonly #target: NodeJS.WritableStream;
  midLine = false;

  constructor(target: NodeJS.WritableStream) {
    super();
    this.#target = target;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    // A reader that went away: nothing more to write to it (a write would throw).
    if ((this.#target as Partial<Writable>).destroyed === true) {
      done();
      return;
    }
    if (chunk.length > 0) this.midLine = chunk[chunk.length - 1] !== 0x0a;
    if (this.#target.write(chunk)) done();
    else
      this.#target.once('drain', () => {
        done();
      });
  }
}

export function processPrinter(): Printer {
  return streamPrinter(process.stdout, process.stderr);
}
