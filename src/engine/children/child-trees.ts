// The host trees a delegating run hands its child (AH-CFC-12, AH-CFC-12a): the labels the
// child keeps them under (at least the parent's: cfc/inherited-labels.ts), and, for a child
// under a confidentiality ceiling, the refusal of a tree whose label so raised lies above
// it, as a labelled source of the child's own profile above it is refused
// (config/child-profiles.ts capToCeiling).
import { UNLABELLED_ATOM } from '../../config/cfc-schema.js';
import type { ResolvedChild } from '../../config/child-profiles.js';
import { ConfigError } from '../../errors.js';
import { inheritedFrom, type InheritedLabels } from '../../cfc/inherited-labels.js';
import type { MountLabel } from '../../cfc/label-map.js';
import type { RunPlan } from '../run/run-plan.js';

/** What a child of `parent` is handed with the trees: the parent's labels of them. */
export function childInherits(parent: RunPlan): InheritedLabels {
  return {
    ...inheritedFrom(parent.cfc.mounts, parent.hostTrees),
    ancestry: [...parent.ancestry, parent.runId],
  };
}

/** Refuses a child plan that mounts a tree the parent labels above the child's ceiling. */
export function checkHandedWithinCeiling(
  child: Pick<ResolvedChild, 'name' | 'ceiling'>,
  mounts: readonly MountLabel[],
): void {
  if (child.ceiling === undefined) return;
  const within = new Set(child.ceiling);
  for (const m of mounts) {
    if (m.labelSource !== 'parent') continue;
    const atoms = m.label === undefined ? [UNLABELLED_ATOM] : m.label.confidentiality;
    const above = atoms.filter((a) => !within.has(a));
    if (above.length > 0)
      throw new ConfigError(
        'child_ceiling_exceeded',
        `child ${child.name}: mount ${m.target} is a tree its parent labels [${above.join(', ')}], above the child's ceiling [${child.ceiling.join(', ')}]`,
        { child: child.name, source: `mount ${m.target}` },
        'hand the child only trees within its ceiling (its own mounts, a workspace labelled within it), or raise its ceiling.confidentiality',
      );
  }
}
