// A prompt slot read from a file (`--context FILE`, `--quote FILE`) is a source like a read
// of that file (AH-CFC-2, AH-CFC-7): it carries the label of the place it lies in, the
// labels of this run's mounts that hold it and what earlier runs recorded writing into its
// tree (cfc/written-labels.ts), never less because the operator named it on the command
// line. Each such file is a context carried into the run (`cfc_carried`, kind `slot`), so the
// model's context starts at its label and the same clearance check applies to it as to a
// resumed, restored or planned context (cfc/carried.ts).
import type { CarriedContext } from '../../cfc/carried.js';
import { label } from '../../cfc/label.js';
import type { CfcPlan } from '../../cfc/label-map.js';
import { placedTree, writtenInto, type WrittenRecord } from '../../cfc/written-labels.js';
import { sharedTree, type SourceTrees } from '../../host-trees.js';
import { placeObject, readMountTable } from '../../sandbox/mount-table.js';
import { ResolutionError, resolveObject } from '../../sandbox/source-resolution.js';

export interface PromptFile {
  readonly flag: '--context' | '--quote';
  /** The path as given: recorded with the context it carries. */
  readonly file: string;
}

/** The host tree a prompt file is, placed as a mount source would be; undefined: gone. */
function fileTree(file: string): SourceTrees | undefined {
  let object;
  try {
    object = resolveObject(file);
  } catch (error) {
    if (error instanceof ResolutionError) return undefined;
    throw error;
  }
  const { place } = placeObject(object, readMountTable());
  return placedTree({ host: object.real, kind: 'file', place, names: object.names });
}

/**
 * The contexts a run's prompt files carry in: one per file whose place holds anything
 * confidential (a file that says nothing confidential carries nothing). `runId` names the
 * run when no earlier run wrote the file's tree.
 */
export function promptFileContexts(
  files: readonly PromptFile[],
  o: {
    readonly runId: string;
    readonly cfc: CfcPlan;
    readonly trees: readonly SourceTrees[];
    readonly written: readonly WrittenRecord[];
  },
): CarriedContext[] {
  const out: CarriedContext[] = [];
  for (const f of files) {
    const tree = fileTree(f.file);
    // The bounded reader read it a moment ago; gone now, it says nothing more than it did.
    if (tree === undefined) continue;
    const mounts = o.cfc.mounts.filter((m) => {
      const source = o.trees.find((t) => t.target === m.target);
      return m.label !== undefined && source !== undefined && sharedTree(source, tree);
    });
    const written = writtenInto(tree, o.written);
    const atoms = [
      ...mounts.flatMap((m) => m.label?.confidentiality ?? []),
      ...(written?.label.confidentiality ?? []),
    ];
    if (atoms.length === 0) continue;
    out.push({
      kind: 'slot',
      fromRunId: written?.runs.at(-1) ?? o.runId,
      label: label({ confidentiality: atoms }),
      basis: 'sources',
      slot: f,
    });
  }
  return out;
}
