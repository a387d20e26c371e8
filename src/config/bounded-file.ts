// Reading a small file an operator named (an approvals file, a plan): a regular file, at
// most `maxBytes`, read once through one descriptor so what is checked is what is read.
// Opened non-blocking so a FIFO named in its place cannot hang cfh before the run starts,
// and without becoming a controlling terminal.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { ConfigError, errorMessage, type ErrorCode } from '../errors.js';

export interface BoundedRead {
  readonly bytes: Buffer;
  /** Device and inode of what was read, for the record. */
  readonly dev: number;
  readonly ino: number;
}

/** The file's bytes, or a ConfigError naming `field` (exit 125, nothing started). */
export async function readBoundedFile(
  file: string,
  maxBytes: number,
  field: string,
  code: ErrorCode,
): Promise<BoundedRead> {
  const fail = (why: string): ConfigError =>
    new ConfigError(code, `${field}: '${file}' ${why}`, { field, value: file });
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    throw fail(`cannot be opened: ${errorMessage(error)}`);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw fail('is not a regular file');
    if (st.size > maxBytes) throw fail(`is ${st.size} bytes; at most ${maxBytes} are read`);
    // One byte more than allowed tells a file that grew after the stat.
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > maxBytes) throw fail(`grew past ${maxBytes} bytes while it was read`);
    }
    return { bytes: buffer.subarray(0, length), dev: st.dev, ino: st.ino };
  } catch (error) {
    throw error instanceof ConfigError ? error : fail(`cannot be read: ${errorMessage(error)}`);
  } finally {
    await handle.close();
  }
}
