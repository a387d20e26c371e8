// The first bytes of the run's output files, for the report to show collapsed beside their
// size and a link to the whole file. Only files the run directory lists as regular files
// under outputs/ are read, and at most PREVIEW_BYTES of each.
import { open } from 'node:fs/promises';
import path from 'node:path';
import type { RunEvidence } from '../audit/run-evidence.js';
import { isConfinedRef } from '../audit/checks-run.js';

export const PREVIEW_BYTES = 16 * 1024;

export interface Preview {
  readonly rel: string;
  readonly bytes: number;
  readonly text: string;
  readonly truncated: boolean;
}

export async function loadPreviews(run: RunEvidence): Promise<Map<string, Preview>> {
  const out = new Map<string, Preview>();
  for (const f of run.files) {
    if (f.kind !== 'file' || !f.rel.startsWith('outputs/') || !isConfinedRef(f.rel)) continue;
    const handle = await open(path.join(run.dir, f.rel), 'r');
    try {
      const buf = Buffer.alloc(Math.min(PREVIEW_BYTES, f.bytes));
      const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
      out.set(f.rel, {
        rel: f.rel,
        bytes: f.bytes,
        text: buf.subarray(0, bytesRead).toString('utf8'),
        truncated: f.bytes > bytesRead,
      });
    } finally {
      await handle.close();
    }
  }
  return out;
}
