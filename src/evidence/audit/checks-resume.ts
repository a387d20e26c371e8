// A resumed run's link to the run it continues (AH-ART-4/5): its snapshot's `resumedFrom`
// is the record of its `run_resumed` event, which comes before its first model request; the
// rebuilt context is a file of its chain; and the old run, read from beside it, still holds
// the chain the link names: the event at `finalSeq` with the hash `finalHash`, that event
// its last (nothing appended to the old chain since, but an `applied`), its transcript the
// one the link digests when the old chain sealed it.
import { canonicalJson } from '../canonical-json.js';
import { RESUMED_CONTEXT_FILE, ResumedFrom } from '../schema/resume.js';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { recordOf } from './parts.js';
import { eventsOf } from './run-evidence.js';

export const resumeLinkCheck: Check = {
  id: 'resume.link',
  title: "a resumed run links to the old chain's final hash",
  clauses: ['AH-ART-4', 'AH-ART-5'],
  run({ run, resumed }) {
    const raw = recordOf(run.snapshot.value)?.resumedFrom;
    const resumedEvents = run.events.filter((e) => e.type === 'run_resumed');
    if (raw === undefined && resumedEvents.length === 0) return notApplicable('not a resumed run');
    const where: string[] = [];
    const link = ResumedFrom.safeParse(raw);
    if (!link.success)
      return fail('snapshot.json resumedFrom is not a link', ['snapshot.json resumedFrom']);
    const from = link.data;
    if (resumedEvents.length !== 1)
      where.push(`events.jsonl: ${resumedEvents.length} run_resumed events, where one is due`);
    const event = resumedEvents[0];
    if (event !== undefined && canonicalJson(event.data) !== canonicalJson(from))
      where.push(`${at(event)}: the run_resumed record is not the snapshot's resumedFrom`);
    const firstModel = run.events.find((e) => e.type === 'model_call_started');
    if (event !== undefined && firstModel !== undefined && firstModel.seq < event.seq)
      where.push(`${at(firstModel)}: a model request before run_resumed`);
    if (!eventsOf(run, 'artifact_written').some((e) => e.data.file === RESUMED_CONTEXT_FILE))
      where.push(`events.jsonl: no artifact_written for ${RESUMED_CONTEXT_FILE}`);
    if (resumed === undefined) return inconclusive('the run it resumes was not read');
    if ('unreadable' in resumed)
      return where.length > 0
        ? fail('the link is broken', where)
        : inconclusive(`the run it resumes (${from.runId}) cannot be read: ${resumed.unreadable}`);
    const old = resumed.events.find((e) => e.seq === from.finalSeq);
    if (old === undefined) where.push(`${from.runId}: its chain has no event ${from.finalSeq}`);
    else if (old.record.hash !== from.finalHash)
      where.push(`${from.runId} ${at(old)}: hash is not the link's finalHash`);
    const later = resumed.events.filter((e) => e.seq > from.finalSeq && e.type !== 'applied');
    if (later.length > 0)
      where.push(
        `${from.runId}: its chain goes on past the linked event (${at(later[0] ?? old ?? { line: 0, seq: 0 })})`,
      );
    const sealed = eventsOf(resumed, 'artifact_written')
      .filter((e) => e.data.file === 'transcript.jsonl')
      .at(-1);
    if (from.transcript.anchored && sealed?.data.sha256 !== from.transcript.sha256)
      where.push(`${from.runId}: its sealed transcript.jsonl is not the one the link digests`);
    return where.length === 0
      ? pass(`resumes ${from.runId} at seq ${from.finalSeq} (${from.finalHash.slice(0, 12)})`)
      : fail('the link is broken', where);
  },
};
