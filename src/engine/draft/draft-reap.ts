// Draft copies left by a cfh that was SIGKILLed (AH-LIFE-3): each copy's directory
// (`cfh-draft-<run-id>-<random>` under the draft root) holds `owner.json`, the same owner
// record the run's containers carry as labels, so `cfh reap` (and the next run's sweep)
// can tell a copy whose cfh is gone from one still in use. Only directories of that exact
// shape, owned by this user, with a record saying the owner is gone, are removed; anything
// else is left alone (a copy without a record, another user's, a live or foreign owner's).
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../../errors.js';
import { readBoundedFile } from '../../config/bounded-file.js';
import { LABEL_RUN_ID, ownerStatus, type OwnerStatus } from '../../sandbox/owner.js';
import { DRAFT_OWNER_FILE } from './draft-owner.js';
import { removeTree } from '../../remove-tree.js';

const DRAFT_DIR = /^cfh-draft-(\d{8}T\d{6}Z-[0-9a-f]{8})-[A-Za-z0-9]{6}$/;
const OwnerRecord = z.record(z.string(), z.string());

export interface DraftReapEntry {
  readonly dir: string;
  readonly runId: string;
  readonly owner: OwnerStatus | 'unknown';
  readonly action: 'removed' | 'would-remove' | 'kept' | 'failed';
  readonly error?: string;
}

export async function reapDrafts(
  draftRoot: string,
  options: { dryRun: boolean; runIds?: ReadonlySet<string> | undefined },
): Promise<DraftReapEntry[]> {
  const names = await readdir(draftRoot).catch(() => [] as string[]);
  const entries: DraftReapEntry[] = [];
  for (const name of names) {
    const runId = DRAFT_DIR.exec(name)?.[1];
    if (runId === undefined || (options.runIds !== undefined && !options.runIds.has(runId)))
      continue;
    const dir = path.join(draftRoot, name);
    const st = await lstat(dir).catch(() => undefined);
    if (st?.isDirectory() !== true || st.uid !== (process.getuid?.() ?? st.uid)) continue;
    const owner = await recordedOwner(dir, runId);
    if (owner !== 'gone') {
      entries.push({ dir, runId, owner, action: 'kept' });
      continue;
    }
    if (options.dryRun) {
      entries.push({ dir, runId, owner, action: 'would-remove' });
      continue;
    }
    try {
      await removeDraft(dir);
      entries.push({ dir, runId, owner, action: 'removed' });
    } catch (error) {
      entries.push({ dir, runId, owner, action: 'failed', error: errorMessage(error) });
    }
  }
  return entries;
}

/**
 * The copy first, the owner record last: a removal cut short (the cfh sweeping is itself
 * killed, the owner swaps a link in and the walk stops) leaves a directory that still says
 * whose it was, so the next reap takes it on instead of keeping it as `unknown` forever.
 */
async function removeDraft(dir: string): Promise<void> {
  for (const name of await readdir(dir))
    if (name !== DRAFT_OWNER_FILE) await removeTree(path.join(dir, name));
  await removeTree(dir);
}

async function recordedOwner(dir: string, runId: string): Promise<OwnerStatus | 'unknown'> {
  try {
    const read = await readBoundedFile(
      path.join(dir, DRAFT_OWNER_FILE),
      4096,
      'draft owner record',
      'draft_owner_unreadable',
    );
    const labels = OwnerRecord.parse(JSON.parse(read.bytes.toString('utf8')));
    // A record of another run is not this directory's: leave it.
    if (labels[LABEL_RUN_ID] !== runId) return 'unknown';
    return ownerStatus(labels);
  } catch {
    return 'unknown';
  }
}
