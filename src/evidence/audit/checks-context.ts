// Context compaction as the events tell it (AH-LIFE-6/7): every compaction_started is
// followed by exactly one compaction_completed or compaction_failed with its `n`, before
// another compaction or model turn starts; `n` counts up from 1; a completed compaction
// names a summarising attempt that completed inside it; a failure that says it will be
// retried is followed by another attempt or by the end of the run.
import { at, fail, notApplicable, pass, type Check } from './check.js';
import { eventsOf } from './run-evidence.js';

const KINDS = new Set(['compaction_started', 'compaction_completed', 'compaction_failed']);

export const compactionOrderedCheck: Check = {
  id: 'context.compaction-ordered',
  title: 'each compaction started, then completed or failed once, in order, before the next turn',
  clauses: ['AH-LIFE-6', 'AH-LIFE-7'],
  run({ run }) {
    const started = eventsOf(run, 'compaction_started');
    const ends = [...eventsOf(run, 'compaction_completed'), ...eventsOf(run, 'compaction_failed')];
    if (started.length === 0 && ends.length === 0) return notApplicable('no compaction');
    const where: string[] = [];
    let open: { n: number; at: string; attempts: Set<string> } | undefined;
    let expected = 1;
    let ended = 0;
    for (const e of run.events) {
      const data = e.data as Record<string, unknown>;
      if (open !== undefined && e.type === 'model_call_started') {
        const id = String(data.attemptId);
        if (!id.startsWith('compact-'))
          where.push(`${at(e)}: model turn ${id} starts inside compaction ${open.n}`);
      }
      if (open !== undefined && e.type === 'model_call_completed')
        open.attempts.add(String(data.attemptId));
      if (!KINDS.has(e.type)) continue;
      const n = Number(data.n);
      if (e.type === 'compaction_started') {
        if (open !== undefined) where.push(`${at(e)}: starts while compaction ${open.n} is open`);
        if (n !== expected) where.push(`${at(e)}: compaction ${n}, expected ${expected}`);
        expected = n + 1;
        open = { n, at: at(e), attempts: new Set() };
        continue;
      }
      if (open === undefined || open.n !== n) {
        where.push(`${at(e)}: ends compaction ${n}, which is not open`);
        continue;
      }
      if (e.type === 'compaction_completed' && !open.attempts.has(String(data.attemptId)))
        where.push(`${at(e)}: its summarising attempt ${String(data.attemptId)} did not complete`);
      ended += 1;
      open = undefined;
    }
    if (open !== undefined && eventsOf(run, 'run_finished').length > 0)
      where.push(`${open.at}: compaction ${open.n} never completed nor failed`);
    const failed = eventsOf(run, 'compaction_failed');
    const last = failed.at(-1);
    if (
      last !== undefined &&
      last.data.retry === 'none' &&
      !/^(error:compaction_failed|budget_exceeded:|cancelled:)/.test(
        eventsOf(run, 'run_finished').at(-1)?.data.terminalReason ?? 'error:compaction_failed',
      )
    )
      where.push(`${at(last)}: gave up, but the run does not end on it`);
    return where.length === 0
      ? pass(`${ended} compaction(s), each started and ended once, in order`)
      : fail('compactions are not ordered and paired', where);
  },
};
