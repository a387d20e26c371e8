// Where the labels earlier runs wrote into host trees are kept (written-labels.ts): one file
// per tree under the state directory (CFH_STATE_DIR/written-labels), outside every mount
// (run planning refuses a mount that reaches it), named by a digest of the tree's place.
// A record is raised under its lock (proper-lockfile) and replaced atomically, and it is
// durable before the write it records can happen: a cfh killed mid-call leaves the label
// raised, never a write the label does not cover. Planning reads every record; one that
// cannot be read fails the run closed (what it held is unknown).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { ConfigError } from '../errors.js';
import { writeFileAtomic } from '../evidence/atomic-file.js';
import type { MountedTree, TreePlace } from '../host-trees.js';
import type { Label } from './label.js';
import { confirmedIdentity } from './tree-identity.js';
import { raisedRecord, WrittenRecord } from './written-labels.js';

const RECORD = /^[0-9a-f]{64}\.json$/;
const LOCK_STALE_MS = 10_000;

/** A tree a run writes into, as its plan resolved it (host-trees.ts SourceTrees). */
export interface WrittenTree {
  readonly place: TreePlace;
  /** The host path it was mounted from. */
  readonly source: string;
  readonly kind: 'directory' | 'file';
  /** Device and inode the plan resolved it to: the record keeps its identity when they hold. */
  readonly identity?: { readonly dev: string; readonly ino: string } | undefined;
  /** A file's names (hard links) and the trees mounted beneath it: kept in the record. */
  readonly names?: number | undefined;
  readonly beneath?: readonly MountedTree[] | undefined;
}

function recordName(place: TreePlace): string {
  return `${createHash('sha256').update(`${place.device}\0${place.path}`).digest('hex')}.json`;
}

function unreadable(file: string, why: string): ConfigError {
  return new ConfigError(
    'written_labels_unreadable',
    `the written-labels record '${file}' cannot be read (${why}): what it held is unknown`,
    { field: 'stateDir', value: file },
    `restore it, or forget it with cfh labels forget (what earlier runs wrote there is then the operator's word)`,
  );
}

function parseRecord(file: string, text: string): WrittenRecord {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw unreadable(file, 'not JSON');
  }
  const parsed = WrittenRecord.safeParse(json);
  if (!parsed.success) throw unreadable(file, 'not a written-labels record');
  return parsed.data;
}

/** Every record under `dir` (none when it does not exist); read at planning, synchronously. */
export function readWrittenRecords(dir: string): WrittenRecord[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return [];
    throw unreadable(dir, errorCode(error));
  }
  const out: WrittenRecord[] = [];
  for (const name of names.filter((n) => RECORD.test(n)).sort()) {
    const file = path.join(dir, name);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      // Forgotten or pruned since the listing: nothing is held there any more.
      if (codeOf(error) === 'ENOENT') continue;
      throw unreadable(file, errorCode(error));
    }
    out.push(parseRecord(file, text));
  }
  return out;
}

async function locked<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const release = await lockfile.lock(file, {
    lockfilePath: `${file}.lock`,
    realpath: false,
    stale: LOCK_STALE_MS,
    retries: { retries: 50, minTimeout: 20, maxTimeout: 200 },
  });
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined);
  }
}

async function readRecord(file: string): Promise<WrittenRecord | undefined> {
  try {
    return parseRecord(file, await readFile(file, 'utf8'));
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Raises the record of `tree` to hold `written` (by `runId`); durable when it resolves.
 * Returns whether the record changed.
 */
export async function noteWritten(
  dir: string,
  tree: WrittenTree,
  written: Label,
  runId: string,
  signal: AbortSignal,
): Promise<boolean> {
  signal.throwIfAborted();
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, recordName(tree.place));
  return locked(file, async () => {
    const identity = confirmedIdentity(tree.source, tree.identity);
    const next = raisedRecord(
      await readRecord(file),
      { ...tree, identity },
      written,
      runId,
      new Date().toISOString(),
    );
    if (next === undefined) return false;
    await writeFileAtomic(file, `${JSON.stringify(next, null, 2)}\n`, 0o600);
    return true;
  });
}

/** The records with their files, for `cfh labels`. */
export async function listRecords(
  dir: string,
): Promise<{ readonly file: string; readonly record: WrittenRecord }[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return [];
    throw error;
  }
  const out: { file: string; record: WrittenRecord }[] = [];
  for (const name of names.filter((n) => RECORD.test(n)).sort()) {
    const file = path.join(dir, name);
    const record = await readRecord(file);
    if (record !== undefined) out.push({ file, record });
  }
  return out;
}

/** Forgets the record at `file` (the operator's word that the tree holds no more than its label). */
export async function forgetRecord(file: string): Promise<WrittenRecord | undefined> {
  return locked(file, async () => {
    const current = await readRecord(file);
    if (current !== undefined) await unlink(file);
    return current;
  });
}

function codeOf(error: unknown): unknown {
  return error instanceof Error && 'code' in error ? error.code : undefined;
}

function errorCode(error: unknown): string {
  const code = codeOf(error);
  return typeof code === 'string' ? code : 'unreadable';
}
