// The values a run held behind handles, read back for a run that continues its model context
// (resume, a session restored): only the files its chain recorded, each compared with the
// digest recorded for it and parsed with the schema the writer used (schema/held-value.ts).
// A file that is missing, altered or malformed fails the read: the continuing run refuses
// rather than resolve a handle to something the old run never held (AH-ART-5, AH-REF-3).
import { createHash } from 'node:crypto';
import type { EventRecord } from './event-log.js';
import { withRunReader } from './run-reader.js';
import { HELD_VALUES_DIR, HeldValueRecord } from './schema/held-value.js';

/** A held value is a tool result: bounded by the largest result a run may keep. */
const MAX_HELD_BYTES = 16 * 1024 * 1024;

export class HeldValuesUnreadable extends Error {}

export async function readHeldValues(run: {
  readonly dir: string;
  readonly events: readonly EventRecord[];
}): Promise<HeldValueRecord[]> {
  const recorded = run.events.flatMap((e) => {
    const file = e.type === 'artifact_written' ? e.data.file : undefined;
    return typeof file === 'string' && file.startsWith(`${HELD_VALUES_DIR}/`)
      ? [{ file, sha256: e.data.sha256 }]
      : [];
  });
  if (recorded.length === 0) return [];
  return withRunReader(run.dir, async (reader) => {
    const out: HeldValueRecord[] = [];
    for (const { file, sha256 } of recorded) {
      const read = await reader.read(file, MAX_HELD_BYTES);
      if (!read.ok) throw new HeldValuesUnreadable(`${file}: ${read.problem}`);
      if (createHash('sha256').update(read.value).digest('hex') !== sha256)
        throw new HeldValuesUnreadable(`${file}: not the file its chain recorded`);
      let parsed: ReturnType<typeof HeldValueRecord.safeParse>;
      try {
        parsed = HeldValueRecord.safeParse(JSON.parse(read.value.toString('utf8')));
      } catch {
        throw new HeldValuesUnreadable(`${file}: not JSON`);
      }
      if (!parsed.success) throw new HeldValuesUnreadable(`${file}: not a held value`);
      out.push(parsed.data);
    }
    return out;
  });
}
