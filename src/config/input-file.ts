// The one reader for files a user names on the command line or in a profile (profiles and
// their `extends` chain, --script, --context, --quote), so every one is bounded the same way
// before anything is created (AH-INV-4):
// - a regular file only: a FIFO, device or socket is refused before it is opened (opening
//   one can block cfh, or read forever), and so is a file on a kernel pseudo file system;
// - opened with O_NONBLOCK, then fstat must show the regular file that was checked (same
//   dev/ino), so nothing swapped in between is read;
// - at most a documented number of bytes, counted while reading (a /proc-like size of 0
//   proves nothing);
// - for prompt material (--context, --quote), no symbolic link anywhere in the path: a link
//   shipped in a repository must not pull a host file into the prompt, the transcript and a
//   real provider's request. Every component is lstat'ed and the leaf opened O_NOFOLLOW.
// Failures are ConfigErrors (exit 125) that name the flag and the file.
import { constants, fstatSync, lstatSync, openSync, readSync, closeSync, statSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, errorMessage, type ErrorCode } from '../errors.js';
import { pseudoFileSystemAt, pseudoFileSystemAtAsync } from './pseudo-fs.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/** The caps, documented in docs/operators.md ("Input files"). */
export const INPUT_FILE_LIMITS = {
  /** One profile file; every file of an `extends` chain is bounded alike. */
  profileBytes: 256 * KiB,
  /** A --script file of scripted model turns. */
  scriptBytes: 1 * MiB,
  /** One --context or --quote file. */
  promptFileBytes: 1 * MiB,
  /** All --context and --quote files of one run together. */
  promptFilesTotalBytes: 8 * MiB,
} as const;

export interface InputFileRequest {
  /** What the user wrote it after: `--context`, `--script`, `profile NAME`. */
  readonly label: string;
  /** As the user wrote it (messages quote it), relative to `cwd`. */
  readonly file: string;
  readonly maxBytes: number;
  /** Refuse a symbolic link in any component of the path (prompt material). */
  readonly noSymlinks?: boolean;
  readonly cwd?: string;
  /**
   * The object a label was found for before the read (engine/cfc/prompt-files.ts): what is
   * read must be that object, or the label would be another's.
   */
  readonly expect?: { readonly dev: string; readonly ino: string } | undefined;
}

function fail(req: InputFileRequest, code: ErrorCode, detail: string): ConfigError {
  return new ConfigError(code, `${req.label}: '${req.file}' ${detail}`, {
    field: req.label,
    value: req.file,
  });
}

function kindOf(s: Stats): string {
  if (s.isDirectory()) return 'a directory';
  if (s.isFIFO()) return 'a FIFO';
  if (s.isCharacterDevice()) return 'a character device';
  if (s.isBlockDevice()) return 'a block device';
  if (s.isSocket()) return 'a socket';
  return 'not a regular file';
}

function unreadable(req: InputFileRequest, error: unknown): ConfigError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ELOOP') return symlinked(req, path.resolve(req.cwd ?? process.cwd(), req.file));
  const why =
    code === 'ENOENT'
      ? 'does not exist'
      : code === 'EACCES'
        ? 'is not readable (permission denied)'
        : code === 'ENOTDIR'
          ? 'does not exist (a component of its path is not a directory)'
          : `cannot be read: ${errorMessage(error)}`;
  return fail(req, 'input_file_unreadable', why);
}

function symlinked(req: InputFileRequest, component: string): ConfigError {
  return fail(
    req,
    'input_file_symlink',
    `goes through the symbolic link '${component}', which cfh does not follow for ${req.label}: give the real path of the file`,
  );
}

/** The path and every prefix of it, root first: `/`, `/a`, `/a/b`. */
function components(absolute: string): string[] {
  const parts = absolute.split(path.sep).filter((p) => p !== '');
  return parts.map((_p, i) => path.sep + parts.slice(0, i + 1).join(path.sep));
}

function checkRegular(req: InputFileRequest, s: Stats, pseudo: string | undefined): void {
  if (!s.isFile()) {
    throw fail(req, 'input_file_not_regular', `is ${kindOf(s)}; give a regular file`);
  }
  if (pseudo !== undefined) {
    throw fail(
      req,
      'input_file_not_regular',
      `is on the kernel's ${pseudo} file system, not a file of data; give a regular file`,
    );
  }
  if (s.size > req.maxBytes) throw tooLarge(req, s.size);
}

function tooLarge(req: InputFileRequest, size: number | undefined): ConfigError {
  const is = size === undefined ? 'is larger than' : `is ${size} bytes, more than`;
  return fail(
    req,
    'input_file_too_large',
    `${is} the ${req.maxBytes}-byte limit for ${req.label} (docs/operators.md, "Input files")`,
  );
}

function checkSame(req: InputFileRequest, checked: Stats, opened: Stats): void {
  if (!opened.isFile() || opened.dev !== checked.dev || opened.ino !== checked.ino) {
    throw fail(req, 'input_file_changed', 'changed while cfh opened it; not read');
  }
}

function openFlags(req: InputFileRequest): number {
  return (
    constants.O_RDONLY |
    constants.O_NONBLOCK |
    constants.O_NOCTTY |
    (req.noSymlinks === true ? constants.O_NOFOLLOW : 0)
  );
}

export async function readInputFile(req: InputFileRequest, signal: AbortSignal): Promise<string> {
  const absolute = path.resolve(req.cwd ?? process.cwd(), req.file);
  let checked: Stats;
  try {
    if (req.noSymlinks === true) {
      let last: Stats | undefined;
      for (const c of components(absolute)) {
        signal.throwIfAborted();
        last = await lstat(c);
        if (last.isSymbolicLink()) throw symlinked(req, c);
      }
      if (last === undefined) throw fail(req, 'input_file_not_regular', 'is a directory');
      checked = last;
    } else {
      checked = await stat(absolute);
    }
    signal.throwIfAborted();
    checkRegular(req, checked, await pseudoFileSystemAtAsync(absolute));
  } catch (error) {
    if (error instanceof ConfigError || signal.aborted) throw error;
    throw unreadable(req, error);
  }
  let handle;
  try {
    handle = await open(absolute, openFlags(req));
  } catch (error) {
    throw unreadable(req, error);
  }
  try {
    const opened = await handle.stat();
    checkSame(req, checked, opened);
    if (
      req.expect !== undefined &&
      (String(opened.dev) !== req.expect.dev || String(opened.ino) !== req.expect.ino)
    )
      throw fail(req, 'input_file_changed', 'changed since cfh labelled it; not read');
    // Counted while reading: the file may have grown since fstat.
    const buffer = Buffer.alloc(req.maxBytes + 1);
    let length = 0;
    while (length <= req.maxBytes) {
      signal.throwIfAborted();
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) return buffer.toString('utf8', 0, length);
      length += bytesRead;
    }
    throw tooLarge(req, undefined);
  } finally {
    await handle.close();
  }
}

/**
 * The same checks, synchronously, for profiles: planning is synchronous, and with a
 * regular file opened O_NONBLOCK and a bounded read nothing here can block.
 */
export function readInputFileSync(req: InputFileRequest): string {
  const absolute = path.resolve(req.cwd ?? process.cwd(), req.file);
  let checked: Stats;
  try {
    if (req.noSymlinks === true) {
      let last: Stats | undefined;
      for (const c of components(absolute)) {
        last = lstatSync(c);
        if (last.isSymbolicLink()) throw symlinked(req, c);
      }
      if (last === undefined) throw fail(req, 'input_file_not_regular', 'is a directory');
      checked = last;
    } else {
      checked = statSync(absolute);
    }
    checkRegular(req, checked, pseudoFileSystemAt(absolute));
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw unreadable(req, error);
  }
  let fd: number;
  try {
    fd = openSync(absolute, openFlags(req));
  } catch (error) {
    throw unreadable(req, error);
  }
  try {
    checkSame(req, checked, fstatSync(fd));
    const buffer = Buffer.alloc(req.maxBytes + 1);
    let length = 0;
    while (length <= req.maxBytes) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) return buffer.toString('utf8', 0, length);
      length += n;
    }
    throw tooLarge(req, undefined);
  } finally {
    closeSync(fd);
  }
}
