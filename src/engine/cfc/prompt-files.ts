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

/** A prompt file as planning labelled it: the object it is, and what it carries in. */
export interface PlannedPromptFile extends PromptFile {
  /** The only object the slot may be read from (config/input-file.ts `expect`). */
  readonly identity: { readonly dev: string; readonly ino: string };
  /** Absent: its place holds nothing confidential. */
  readonly carried?: CarriedContext | undefined;
}

/** Matches no object: a file planning could not find is read by no later spelling. */
const NOTHING = { dev: 'none', ino: 'none' } as const;

/**
 * The host tree a prompt file is, placed as a mount source would be, and its identity; or
 * undefined when it cannot be resolved now (the bounded reader then says why, and reads
 * nothing that appears there later: `expect` is NOTHING).
 */
function fileTree(
  file: string,
): { tree: SourceTrees; identity: { dev: string; ino: string } } | undefined {
  let object;
  try {
    object = resolveObject(file);
  } catch (error) {
    if (error instanceof ResolutionError) return undefined;
    throw error;
  }
  const { place } = placeObject(object, readMountTable());
  return {
    tree: placedTree({ host: object.real, kind: 'file', place, names: object.names }),
    identity: object.identity,
  };
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
): PlannedPromptFile[] {
  const out: PlannedPromptFile[] = [];
  for (const f of files) {
    const found = fileTree(f.file);
    if (found === undefined) {
      out.push({ ...f, identity: NOTHING });
      continue;
    }
    const { tree, identity } = found;
    const mounts = o.cfc.mounts.filter((m) => {
      const source = o.trees.find((t) => t.target === m.target);
      return m.label !== undefined && source !== undefined && sharedTree(source, tree);
    });
    const written = writtenInto(tree, o.written);
    const atoms = [
      ...mounts.flatMap((m) => m.label?.confidentiality ?? []),
      ...(written?.label.confidentiality ?? []),
    ];
    const carried: CarriedContext | undefined =
      atoms.length === 0
        ? undefined
        : {
            kind: 'slot',
            fromRunId: written?.runs.at(-1) ?? o.runId,
            label: label({ confidentiality: atoms }),
            basis: 'sources',
            slot: { flag: f.flag, file: f.file },
          };
    out.push({ ...f, identity, carried });
  }
  return out;
}
