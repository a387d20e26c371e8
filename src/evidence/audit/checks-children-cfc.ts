// Information flow control across a delegation (AH-CFC-12, AH-CFC-12a): each child run's CFC
// mode is at least its parent's (a delegation never weakens it: config/cfc-schema.ts
// strongerCfcMode, the child planner's own rule), and under the ceiling the parent's profile
// gives the child, the child's model clearance, every labelled source of its plan and every
// observation it was shown (enforcing) stay within that ceiling. Read from the child's own
// snapshot and log, as children.tree reads them (audit.ts loads them).
import { z } from 'zod';
import { UNLABELLED_ATOM, strongerCfcMode } from '../../config/cfc-schema.js';
import { DELEGATE_TOOL } from './checks-tools.js';
import { fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { cfcStateOf, list } from './checks-cfc.js';
import { mediationOf } from './decision-inputs.js';
import { partOf } from './parts.js';
import { eventsOf, type RunEvidence } from './run-evidence.js';

const ChildCeilings = z.looseObject({
  resolved: z.looseObject({
    children: z
      .record(
        z.string(),
        z.looseObject({
          ceiling: z.strictObject({ confidentiality: z.array(z.string()) }).optional(),
        }),
      )
      .default({}),
  }),
});

const conf = (l: { confidentiality: readonly string[] } | null): readonly string[] =>
  l === null ? [UNLABELLED_ATOM] : l.confidentiality;

/** What of the child's plan and log lies above `ceiling`. */
function aboveCeiling(child: RunEvidence, ceiling: readonly string[]): string[] {
  const state = cfcStateOf(child);
  if (state.kind !== 'recorded') return ['snapshot.json cfc: not recorded'];
  const out: string[] = [];
  const above = (atoms: readonly string[]): string[] => atoms.filter((a) => !ceiling.includes(a));
  const note = (what: string, atoms: readonly string[]): void => {
    const over = above(atoms);
    if (over.length > 0) out.push(`${what} ${list(over)}`);
  };
  note('modelClearance', state.cfc.modelClearance);
  for (const m of state.cfc.mounts) note(`mount ${m.target}`, conf(m.label));
  for (const d of state.cfc.destinations)
    note(`destination ${d.destination}`, d.label.confidentiality);
  const mediation = mediationOf(child);
  if (mediation !== undefined && !('problem' in mediation)) {
    // Its own children's returns are bounded by their ceilings, one level down.
    for (const t of mediation.record.tools)
      if (t.executor === 'host' && t.name !== DELEGATE_TOOL && t.cfc !== null)
        note(`host tool ${t.name}`, conf(t.cfc.result));
    for (const [entry, l] of Object.entries(mediation.record.unnamedMcpLabels))
      note(`host tool ${entry}`, conf(l.result));
  }
  if (state.mode === 'enforce-explicit' || state.mode === 'enforce-strict')
    for (const l of eventsOf(child, 'cfc_label'))
      if (l.data.disposition === 'exposed')
        note(`its model was shown ${l.data.callId}'s observation,`, l.data.label.confidentiality);
  return out;
}

export const childrenCfcCheck: Check = {
  id: 'children.cfc',
  title:
    "each child's CFC mode at least its parent's, and what it could observe within its ceiling",
  clauses: ['AH-CFC-12', 'AH-CFC-12a'],
  run({ run, children }) {
    const started = eventsOf(run, 'child_started');
    if (started.length === 0) return notApplicable('no child run');
    if (children === undefined) return inconclusive('the child runs were not read');
    const parent = cfcStateOf(run);
    if (parent.kind !== 'recorded') return inconclusive('the parent records no CFC mode');
    const entries = partOf(run.snapshot.value, 'profile', ChildCeilings);
    const where: string[] = [];
    let read = 0;
    for (const s of started) {
      const child = children.get(s.data.childId);
      // A child that could not be read is children.tree's to name.
      if (child === undefined || 'unreadable' in child) continue;
      read += 1;
      const id = s.data.childId;
      const mode = cfcStateOf(child.run);
      if (mode.kind !== 'recorded') where.push(`child ${id}: snapshot.json records no CFC mode`);
      else if (strongerCfcMode(parent.mode, mode.mode) !== mode.mode)
        where.push(`child ${id}: CFC ${mode.mode}, weaker than its parent's ${parent.mode}`);
      if (!entries.ok) {
        where.push('snapshot.json profile.resolved.children: cannot be read');
        continue;
      }
      const ceiling = entries.value.resolved.children[s.data.profile]?.ceiling?.confidentiality;
      if (ceiling === undefined) continue;
      for (const a of aboveCeiling(child.run, ceiling))
        where.push(`child ${id} (${s.data.profile}, ceiling ${list(ceiling)}): ${a}`);
    }
    return where.length === 0
      ? pass(`${read} child run(s), each at least ${parent.mode} and within its ceiling`)
      : fail("a child run above its parent's information flow control", where);
  },
};
