// The first bytes of the run's output files, for the report to show collapsed beside their
// size and a link to the whole file. Only files the run directory lists as regular files
// under outputs/ are read, and at most PREVIEW_BYTES of each.
import type { RunEvidence } from '../audit/run-evidence.js';
import { isConfinedRef } from '../audit/checks-run.js';
import { RunReader } from '../run-reader.js';

export const PREVIEW_BYTES = 16 * 1024;

export interface Preview {
  readonly rel: string;
  readonly bytes: number;
  readonly text: string;
  readonly truncated: boolean;
}

export async function loadPreviews(run: RunEvidence): Promise<Map<string, Preview>> {
  const out = new Map<string, Preview>();
  // Through the bounded reader: the entry listed a regular file may be a link or a FIFO now.
  await using reader = await RunReader.open(run.dir);
  for (const f of run.files) {
    if (f.kind !== 'file' || !f.rel.startsWith('outputs/') || !isConfinedRef(f.rel)) continue;
    const head = await reader.head(f.rel, PREVIEW_BYTES);
    if (!head.ok) continue;
    out.set(f.rel, {
      rel: f.rel,
      bytes: head.value.bytes,
      text: head.value.text,
      truncated: head.value.bytes > head.value.read,
    });
  }
  return out;
}
