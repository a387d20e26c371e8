// What earlier runs wrote into a host tree stays in its label (AH-CFC-2, AH-CFC-7): a mount's
// configured label is the operator's claim about what the tree held when they labelled it,
// and a run cleared to write a secret into it (a deploy profile rendering `.env`) leaves the
// secret there for the next run, whatever that run's profile says. cfh records, per host
// tree, the join of every label a judged write carried into it (written-store.ts), and a
// later run mounts the tree at least at that label. The unit is the tree a mount reaches,
// not the file: exec writes anywhere its container reaches and is judged as a whole
// container (AH-CFC-10), so a per-file label would be a claim cfh could not keep. A tree is
// matched by identity (host-trees.ts sharedTree): a later mount of the tree, of a directory
// inside it or of one holding it, under any path, joins what was written.
import { z } from 'zod';
import { sharedTree, type MountedTree, type SourceTrees, type TreePlace } from '../host-trees.js';
import { join, label, sameLabel, type Label } from './label.js';
import { targetOf } from './mount-target.js';

/** The most run ids a record keeps (the latest): enough to say who, bounded. */
export const WRITTEN_RUNS_KEPT = 16;

/** One host tree's record: its place, the join of what was written into it, and by whom. */
export const WrittenRecord = z.strictObject({
  version: z.literal(1),
  /** The tree's place (host-trees.ts TreePlace): its file system and path from that one's root. */
  place: z.strictObject({ device: z.string().min(1), path: z.string().startsWith('/') }),
  /** The host path it was mounted from when last written: for messages. */
  host: z.string().startsWith('/'),
  /**
   * The tree's own identity when it was written (device, inode and birth time, which
   * together no later object reuses): it follows the tree when it is renamed or moved, which
   * its place does not (engine/cfc/written-moved.ts). Absent in records of older cfh.
   */
  identity: z
    .strictObject({ dev: z.string().min(1), ino: z.string().min(1), birth: z.string() })
    .optional(),
  kind: z.enum(['directory', 'file']),
  /**
   * A file with more names (hard links) than one: another may lie in any tree of its file
   * system, as planning takes it (host-trees.ts). Absent: one.
   */
  names: z.number().int().positive().optional(),
  /** Trees mounted beneath it when written: reachable through it (host-trees.ts). */
  beneath: z
    .array(
      z.strictObject({
        at: z.string(),
        place: z.strictObject({ device: z.string().min(1), path: z.string() }),
      }),
    )
    .optional(),
  label: z.strictObject({
    confidentiality: z.array(z.string()),
    integrity: z.array(z.string()),
  }),
  /** The runs that raised it, the latest last. */
  runs: z.array(z.strictObject({ runId: z.string().min(1), at: z.string() })),
});
export type WrittenRecord = z.infer<typeof WrittenRecord>;

/** A tree's identity as a record keeps it (WrittenRecord.identity). */
export type TreeIdentity = NonNullable<WrittenRecord['identity']>;

/** What earlier runs wrote into a mount's tree: their joined label and the runs. */
export interface WrittenInto {
  readonly label: Label;
  readonly runs: readonly string[];
  /** The host paths of the records that matched, for messages. */
  readonly trees: readonly string[];
}

/** A recorded tree as the match by place sees it (host-trees.ts). */
export function placedTree(r: {
  readonly host: string;
  readonly kind: 'directory' | 'file';
  readonly place: TreePlace;
  readonly names?: number | undefined;
  readonly beneath?: readonly MountedTree[] | undefined;
}): SourceTrees {
  return {
    target: '',
    source: r.host,
    // Compared by place alone: a record's object may have been replaced at that place, and
    // what was written there is still to be assumed present. So no real object's identity
    // (a device is a number): two placed trees are one object only at one place.
    identity: { dev: `place ${r.place.device}`, ino: r.place.path },
    kind: r.kind,
    names: r.names ?? 1,
    place: r.place,
    beneath: r.beneath ?? [],
  };
}

/**
 * What was written into the tree `source` reaches (or a tree sharing files with it), or
 * undefined: nothing recorded there.
 */
export function writtenInto(
  source: SourceTrees,
  records: readonly WrittenRecord[],
): WrittenInto | undefined {
  const matched = records.filter((r) => sharedTree(source, placedTree(r)) !== undefined);
  if (matched.length === 0) return undefined;
  return {
    label: matched.map((r) => label(r.label)).reduce(join),
    runs: [...new Set(matched.flatMap((r) => r.runs.map((x) => x.runId)))],
    trees: matched.map((r) => r.host),
  };
}

/** What earlier runs wrote into the tree a run mounts at `target`, by identity. */
export function writtenAt(
  target: string,
  sources: readonly SourceTrees[] | undefined,
  records: readonly WrittenRecord[] | undefined,
): WrittenInto | undefined {
  if (records === undefined || records.length === 0) return undefined;
  const own = sources?.find((t) => targetOf(t.target) === target);
  return own === undefined ? undefined : writtenInto(own, records);
}

/** Whether `held` already holds `written` (joining it changes nothing). */
export function holdsWritten(held: Label, written: Label): boolean {
  return sameLabel(join(held, written), held);
}

/**
 * The record after `written` is carried into `tree` by `runId`: undefined when the record
 * already holds it and names the run (nothing to write).
 */
export function raisedRecord(
  existing: WrittenRecord | undefined,
  tree: {
    readonly place: TreePlace;
    readonly source: string;
    readonly kind: 'directory' | 'file';
    readonly identity?: TreeIdentity | undefined;
    readonly names?: number | undefined;
    readonly beneath?: readonly MountedTree[] | undefined;
  },
  written: Label,
  runId: string,
  at: string,
): WrittenRecord | undefined {
  const held = existing === undefined ? undefined : label(existing.label);
  if (
    held !== undefined &&
    holdsWritten(held, written) &&
    existing?.runs.some((r) => r.runId === runId) === true
  )
    return undefined;
  const l = held === undefined ? written : join(held, written);
  const runs = [...(existing?.runs ?? []).filter((r) => r.runId !== runId), { runId, at }];
  return {
    version: 1,
    place: { device: tree.place.device, path: tree.place.path },
    host: tree.source,
    ...(tree.identity === undefined
      ? existing?.identity === undefined
        ? {}
        : { identity: existing.identity }
      : { identity: tree.identity }),
    kind: tree.kind,
    ...((tree.names ?? 1) > 1 ? { names: tree.names } : {}),
    ...((tree.beneath ?? []).length > 0
      ? { beneath: (tree.beneath ?? []).map((b) => ({ at: b.at, place: { ...b.place } })) }
      : {}),
    label: { confidentiality: [...l.confidentiality], integrity: [...l.integrity] },
    runs: runs.slice(-WRITTEN_RUNS_KEPT),
  };
}
