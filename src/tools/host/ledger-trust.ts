// What cfh believes of its host-process ledger (AH-LIFE-3). `cfh reap` signals the process
// groups the ledger names, so a record is believed only when nobody but cfh's own user could
// have written it: the directory is a real directory (no link) owned by cfh's uid that
// nobody else can write, on a path nobody else can rename (src/path-trust.ts); each record
// is a regular file (opened O_NOFOLLOW, so a link is not followed), owned by cfh's uid,
// mode 0600, with one name (a hard link of another file is not a record), at most
// MAX_RECORD_BYTES, read through the descriptor that was checked. Anything else is skipped
// and reported, never acted on.
import { constants, lstatSync } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { swapperOf } from '../../path-trust.js';

/** A record is a few hundred bytes; a larger file is not one of cfh's. */
export const MAX_RECORD_BYTES = 16 * 1024;

export const HostProcessRecord = z.strictObject({
  schema: z.literal('cfh.host-process/1'),
  runId: z.string(),
  tool: z.string(),
  marker: z.string().regex(/^[A-Za-z0-9._-]+$/),
  owner: z.strictObject({ pid: z.number().int(), start: z.string(), host: z.string() }),
  command: z.string(),
  startedAt: z.string(),
  pid: z.number().int().positive().optional(),
  start: z.string().optional(),
});
export type HostProcessRecord = z.infer<typeof HostProcessRecord>;

export interface LedgerRecord {
  readonly file: string;
  readonly record: HostProcessRecord;
}

export interface UntrustedLedgerFile {
  /** The ledger directory itself, or one file in it. */
  readonly file: string;
  readonly reason: string;
}

export interface LedgerListing {
  readonly records: readonly LedgerRecord[];
  readonly untrusted: readonly UntrustedLedgerFile[];
}

function euid(): number {
  return process.geteuid?.() ?? -1;
}

/** Why `dir` cannot hold records cfh believes, or undefined when it can. */
export function ledgerDirProblem(dir: string): string | undefined {
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    return undefined; // absent: nothing to believe or refuse yet
  }
  if (st.isSymbolicLink()) return 'is a symbolic link';
  if (!st.isDirectory()) return 'is not a directory';
  if (st.uid !== euid()) return `is owned by uid ${st.uid}, not cfh's uid ${euid()}`;
  if ((st.mode & 0o022) !== 0) return 'is writable by its group or others';
  // The directory itself and every ancestor: an entry someone else could rename could be
  // replaced by a directory of theirs.
  const swapper = swapperOf(path.join(dir, 'record'), euid());
  if (swapper !== undefined) return `'${swapper.directory}' can be changed by ${swapper.who}`;
  return undefined;
}

async function readRecord(file: string, name: string): Promise<LedgerRecord | string> {
  let handle;
  try {
    handle = await open(
      file,
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY,
    );
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ELOOP' ? 'is a symbolic link' : `cannot be opened (${code ?? 'error'})`;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return 'is not a regular file';
    if (st.uid !== euid()) return `is owned by uid ${st.uid}, not cfh's uid ${euid()}`;
    if ((st.mode & 0o7777) !== 0o600) return `has mode ${(st.mode & 0o7777).toString(8)}, not 600`;
    if (st.nlink !== 1) return `has ${st.nlink} links, not 1`;
    if (st.size > MAX_RECORD_BYTES) return `is larger than ${MAX_RECORD_BYTES} bytes`;
    const buffer = Buffer.alloc(MAX_RECORD_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > MAX_RECORD_BYTES) return `is larger than ${MAX_RECORD_BYTES} bytes`;
    let json: unknown;
    try {
      json = JSON.parse(buffer.toString('utf8', 0, bytesRead));
    } catch {
      return 'is not JSON';
    }
    const parsed = HostProcessRecord.safeParse(json);
    if (!parsed.success) return 'is not a host-process record';
    // The name is the marker cfh chose (HostProcessLedger.open): a record copied under
    // another name is not the one cfh wrote there.
    if (name !== `${parsed.data.marker}.json`) return 'is not named after its marker';
    return { file, record: parsed.data };
  } finally {
    await handle.close();
  }
}

/** Every record of `dir` cfh can believe, and every file it does not (with why). */
export async function listLedger(dir: string): Promise<LedgerListing> {
  const problem = ledgerDirProblem(dir);
  if (problem !== undefined) return { records: [], untrusted: [{ file: dir, reason: problem }] };
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return { records: [], untrusted: [] };
  }
  const records: LedgerRecord[] = [];
  const untrusted: UntrustedLedgerFile[] = [];
  // `.json.tmp` is a record being written (LedgerEntry.write): not yet one.
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    const file = path.join(dir, name);
    const read = await readRecord(file, name);
    if (typeof read === 'string') untrusted.push({ file, reason: read });
    else records.push(read);
  }
  return { records, untrusted };
}
