// The command's live output on cfh's own terminal. When cfh's stdout or stderr is a TTY
// the sandbox's bytes would otherwise drive that terminal: retitle it (OSC), move the cursor
// and rewrite lines cfh printed, or switch screens. What a build legitimately prints passes
// through: SGR colour sequences (ESC [ digits ; : m), line feed, carriage return, tab and
// backspace. Every other control byte or sequence, DEL, C1 controls, invalid UTF-8 and the
// invisible format characters escapeLine escapes are shown as visible escapes. Output that
// is not a TTY (a pipe, a file) is left byte-exact; outputs/<stream> always is.
import { Writable } from 'node:stream';
import { isUnsafeCodePoint, visibleEscape } from './terminal-text.js';

const ESC = 0x1b;
const PASSED_CONTROLS = new Set([0x0a, 0x0d, 0x09, 0x08]);
/** Longer than any real SGR sequence: a longer one is not let through. */
const MAX_SGR_BYTES = 64;

function hex(byte: number): string {
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}

/** The length of a UTF-8 sequence from its lead byte; 0 for a byte that cannot lead. */
function utf8Length(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

/**
 * Stateful across chunks: an escape sequence or a UTF-8 character split between two chunks
 * is judged whole. `push` returns what may be written now; `end` what is left.
 */
export class TerminalSanitizer {
  #pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer {
    const input = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    this.#pending = Buffer.alloc(0);
    const out: Buffer[] = [];
    const emit = (text: string): void => {
      out.push(Buffer.from(text));
    };
    let i = 0;
    let raw = 0; // start of a run of bytes passed as they are
    const flushRaw = (to: number): void => {
      if (to > raw) out.push(input.subarray(raw, to));
    };
    while (i < input.length) {
      const b = input[i] ?? 0;
      if (b >= 0x20 && b < 0x7f) {
        i += 1;
        continue;
      }
      if (PASSED_CONTROLS.has(b)) {
        i += 1;
        continue;
      }
      if (b === ESC) {
        const sgr = sgrLength(input, i);
        if (sgr === undefined) {
          // Maybe an SGR sequence whose end is in the next chunk.
          flushRaw(i);
          this.#pending = Buffer.from(input.subarray(i));
          return Buffer.concat(out);
        }
        if (sgr > 0) {
          i += sgr;
          continue;
        }
        flushRaw(i);
        emit(hex(b));
        i += 1;
        raw = i;
        continue;
      }
      if (b < 0x80) {
        // C0 controls other than LF, CR, TAB, BS, and DEL.
        flushRaw(i);
        emit(hex(b));
        i += 1;
        raw = i;
        continue;
      }
      const length = utf8Length(b);
      if (length > 0 && i + length > input.length && validPrefix(input, i)) {
        flushRaw(i);
        this.#pending = Buffer.from(input.subarray(i));
        return Buffer.concat(out);
      }
      const cp = length > 0 ? decode(input, i, length) : undefined;
      if (cp === undefined) {
        flushRaw(i);
        emit(hex(b));
        i += 1;
        raw = i;
        continue;
      }
      if (isUnsafeCodePoint(cp)) {
        flushRaw(i);
        emit(visibleEscape(String.fromCodePoint(cp)));
        i += length;
        raw = i;
        continue;
      }
      i += length;
    }
    flushRaw(i);
    return Buffer.concat(out);
  }

  /** What a split sequence left at the end of the stream, escaped. */
  end(): Buffer {
    const rest = this.#pending;
    this.#pending = Buffer.alloc(0);
    return Buffer.from(
      [...rest].map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : hex(b))).join(''),
    );
  }
}

/**
 * At `i` (an ESC): the byte length of a complete SGR sequence; 0 when the bytes are not
 * one; undefined when they could still become one in the next chunk.
 */
function sgrLength(input: Buffer, i: number): number | undefined {
  if (i + 1 >= input.length) return undefined;
  if (input[i + 1] !== 0x5b) return 0; // not CSI
  for (let j = i + 2; j < input.length; j += 1) {
    if (j - i >= MAX_SGR_BYTES) return 0;
    const c = input[j] ?? 0;
    if (c === 0x6d) return j - i + 1; // 'm'
    const digit = c >= 0x30 && c <= 0x39;
    if (!digit && c !== 0x3b && c !== 0x3a) return 0; // only digits ; : before the m
  }
  return undefined;
}

function isContinuation(b: number | undefined): boolean {
  return b !== undefined && b >= 0x80 && b <= 0xbf;
}

/** The bytes present so far could be the start of one valid character. */
function validPrefix(input: Buffer, i: number): boolean {
  for (let j = i + 1; j < input.length; j += 1) if (!isContinuation(input[j])) return false;
  return true;
}

/** The code point of a well-formed UTF-8 sequence, else undefined (overlong, surrogate…). */
function decode(input: Buffer, i: number, length: number): number | undefined {
  const lead = input[i] ?? 0;
  let cp = lead & (0xff >> (length + 1));
  for (let k = 1; k < length; k += 1) {
    const c = input[i + k];
    if (!isContinuation(c)) return undefined;
    cp = (cp << 6) | ((c ?? 0) & 0x3f);
  }
  const min = length === 2 ? 0x80 : length === 3 ? 0x800 : 0x10000;
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return undefined;
  return cp;
}

/** A destination for live output that sanitizes what it passes on to `target`. */
export class TerminalWriter extends Writable {
  readonly #target: NodeJS.WritableStream;
  readonly #sanitizer = new TerminalSanitizer();

  constructor(target: NodeJS.WritableStream) {
    super();
    this.#target = target;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    const out = this.#sanitizer.push(chunk);
    if (out.length === 0 || this.#target.write(out)) done();
    else
      this.#target.once('drain', () => {
        done();
      });
  }

  /** Writes what a sequence split at the very end left over. */
  flushPending(): void {
    const rest = this.#sanitizer.end();
    if (rest.length > 0) this.#target.write(rest);
  }
}
