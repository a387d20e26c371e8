// The baseline contents of the files a draft run modified or removed, kept beside the new
// contents in the run's blob store (patch/blobs/<sha256>, content-addressed, each in the
// hash chain): what `runs apply --3way` merges the host's later changes against, and what
// `runs diff --binary` names as the preimage git checks (governance extension, "Draft vs
// commit policy"). The copy was taken from the host at the start; at the end the host
// file is read back and kept only if it is still what the baseline recorded: a file the
// host changed during the run has no kept baseline, and a merge of it is refused.
// Bounded: within what the patch's own bound leaves once the new contents are counted, and
// never past BASELINE_MAX_BYTES: removing a file costs the sandbox nothing, so what it
// removed must not cost cfh more than one large file's read.
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { RunDirectory } from '../../evidence/run-directory.js';
import type { Authority } from '../../workspace/authority.js';
import type { PatchChange } from '../../workspace/patch.js';
import { hashHandle, openSeenFile } from '../../workspace/walk.js';

export const BASELINE_MAX_BYTES = 256 * 1024 * 1024;

export interface KeptBaselines {
  readonly kept: number;
  readonly bytes: number;
  /** Baselines not kept for the bound (those changed on the host are not counted). */
  readonly overBound: number;
}

export async function keepBaselines(options: {
  readonly dir: RunDirectory;
  readonly hostWorkspace: string;
  readonly changes: readonly PatchChange[];
  /** Digests already in the blob store (the new contents). */
  readonly stored: ReadonlySet<string>;
  readonly maxBytes: number;
  readonly as: Authority;
  readonly signal: AbortSignal;
}): Promise<KeptBaselines> {
  const done = new Set(options.stored);
  let bytes = 0;
  let kept = 0;
  let overBound = 0;
  for (const c of options.changes) {
    const before = c.before;
    if (!c.applicable || before?.type !== 'file' || before.sha256 === undefined) continue;
    if (c.kind !== 'modified' && c.kind !== 'removed') continue;
    if (done.has(before.sha256)) continue;
    if (options.signal.aborted) break;
    const size = before.size ?? 0;
    if (bytes + size > options.maxBytes) {
      overBound += 1;
      continue;
    }
    const abs = path.join(options.hostWorkspace, c.path);
    const handle = await options.as
      .asWriter(async () => openSeenFile(abs, await lstat(abs, { bigint: true })))
      .catch(() => undefined);
    if (handle === undefined) continue;
    try {
      // Hashed before it is kept: a file the host changed since the start is not a baseline.
      if ((await hashHandle(handle)).sha256 !== before.sha256) continue;
      const blob = await options.dir.storeBlob(handle);
      done.add(blob.sha256);
      if (blob.sha256 !== before.sha256) continue;
      bytes += blob.bytes;
      kept += 1;
    } finally {
      await handle.close();
    }
  }
  return { kept, bytes, overBound };
}
