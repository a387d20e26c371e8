// The tree of child runs (AH-DEL-3, AH-DEL-5): every child_started ends in a child_finished
// or a child_refused of the same call; each finished child is a run directory of its own,
// RUN/children/<childId>/, whose chain verifies as the parent's does, ends on the hash and
// holds the record count the parent's child_finished recorded, whose snapshot names this
// run and call in `delegatedBy`, and whose own audit (audit.ts, the same checks) passes.
import { z } from 'zod';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { chainCheck, CHILDREN_DIR } from './checks-integrity.js';
import { partOf } from './parts.js';
import { eventsOf, unreadable } from './run-evidence.js';

const DelegatedBy = z.looseObject({ runId: z.string(), callId: z.string(), profile: z.string() });

export const childrenTreeCheck: Check = {
  id: 'children.tree',
  title: "each child run's own chain ends where the parent's record says, and names its parent",
  clauses: ['AH-DEL-3', 'AH-DEL-5'],
  run({ run, children }) {
    const started = eventsOf(run, 'child_started');
    const finished = eventsOf(run, 'child_finished');
    const refused = eventsOf(run, 'child_refused');
    const bad = unreadable(run, 'child_started', 'child_finished', 'child_refused');
    if (started.length === 0 && finished.length === 0 && bad === 0)
      return notApplicable('no child run');
    if (bad > 0) return inconclusive(`${bad} delegation record(s) cannot be read`);
    const where: string[] = [];
    const runEnded = eventsOf(run, 'run_finished').length > 0;
    const startedBy = new Map<string, (typeof started)[number]>();
    for (const s of started) {
      const { callId, childId, dir } = s.data;
      if (startedBy.has(callId)) where.push(`${at(s)}: call ${callId} starts a second child`);
      else startedBy.set(callId, s);
      if (dir !== `${CHILDREN_DIR}/${childId}`)
        where.push(`${at(s)}: child ${childId} recorded in ${dir}, not ${CHILDREN_DIR}/${childId}`);
      const ends = finished.filter((f) => f.data.callId === callId);
      const refusedToo = refused.some((r) => r.data.callId === callId && r.seq > s.seq);
      if (ends.length > 1) where.push(`${at(s)}: child ${childId} finished ${ends.length} times`);
      // A run still being written (or cut short) may have a child in flight.
      if (ends.length === 0 && !refusedToo && runEnded)
        where.push(`${at(s)}: child ${childId} (call ${callId}) has no child_finished`);
    }
    for (const f of finished) {
      const s = startedBy.get(f.data.callId);
      if (s === undefined || s.seq > f.seq)
        where.push(`${at(f)}: child ${f.data.childId} finished, but no child_started came before`);
      else if (s.data.childId !== f.data.childId)
        where.push(
          `${at(f)}: child ${f.data.childId}, where call ${f.data.callId} started ${s.data.childId}`,
        );
    }
    if (children === undefined)
      return where.length > 0
        ? fail('the tree of child runs does not hold', where)
        : inconclusive('the child runs were not read');
    for (const f of finished) {
      const id = f.data.childId;
      const child = children.get(id);
      if (child === undefined || 'unreadable' in child) {
        where.push(`child ${id}: cannot be read: ${child?.unreadable ?? 'not read'}`);
        continue;
      }
      const chain = chainCheck.run({ run: child.run });
      if (chain.verdict !== 'pass')
        where.push(
          `child ${id}: its chain does not verify: ${[chain.detail, ...(chain.where ?? [])].join('; ')}`,
        );
      const last = child.run.events.at(-1);
      if (last?.record.hash !== f.data.finalHash)
        where.push(`child ${id}: its chain ends on another hash than ${at(f)} records`);
      if (child.run.events.length !== f.data.events)
        where.push(
          `child ${id}: ${child.run.events.length} records, ${at(f)} records ${f.data.events}`,
        );
      const by = partOf(child.run.snapshot.value, 'delegatedBy', DelegatedBy);
      if (!by.ok) where.push(`child ${id}: snapshot.json has no delegatedBy`);
      else {
        if (by.value.runId !== run.runId)
          where.push(`child ${id}: snapshot.json delegatedBy names run ${by.value.runId}`);
        if (by.value.callId !== f.data.callId)
          where.push(
            `child ${id}: snapshot.json delegatedBy names call ${by.value.callId}, not ${f.data.callId}`,
          );
        if (by.value.profile !== f.data.profile)
          where.push(
            `child ${id}: snapshot.json delegatedBy names profile ${by.value.profile}, not ${f.data.profile}`,
          );
      }
      if (child.failing.length > 0)
        where.push(`child ${id}: its own audit fails ${child.failing.join(', ')}`);
    }
    return where.length === 0
      ? pass(
          `${finished.length} child run(s), each chain verified to the hash and count its child_finished records, naming this run; ${refused.length} refused`,
        )
      : fail('the tree of child runs does not hold', where);
  },
};
