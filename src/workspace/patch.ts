// The patch of a draft run: what the sandbox changed in its copy of the workspace,
// computed from the baseline (the host tree as copied at the start) and the draft's tree
// at the end (governance extension, "Draft vs commit policy": the draft is the
// preparation, `cfh runs apply` the commit). Pure: listings in, changes out.
//
// What a change carries over to the host when applied: the contents of regular files
// and directories, and of a file's mode only its executable bit (git's 100644/100755);
// never set-id, sticky or other permission bits. A change on either side of which is a
// symlink is listed and never applied: a link made by the sandbox could point the host
// anywhere.
import { z } from 'zod';
import { EntryType, SkippedEntry, TreePath, isExecutable, type TreeEntry } from './tree.js';

export const PATCH_SCHEMA = 'cfh.patch/1';
export const BASELINE_SCHEMA = 'cfh.workspace-baseline/1';

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);

export const PatchSide = z.strictObject({
  type: EntryType,
  mode: z.number().int().min(0).max(0o7777),
  size: z.number().int().nonnegative().optional(),
  sha256: Sha256.optional(),
  target: z.string().optional(),
});
export type PatchSide = z.infer<typeof PatchSide>;

export const ChangeKind = z.enum(['added', 'modified', 'removed', 'mode', 'symlink']);
export type ChangeKind = z.infer<typeof ChangeKind>;

export const PatchChange = z.strictObject({
  path: TreePath,
  kind: ChangeKind,
  before: PatchSide.nullable(),
  after: PatchSide.nullable(),
  /** Contents not shown as text (not UTF-8, a NUL byte, or too large): listed, not inlined. */
  binary: z.boolean().optional(),
  /** Whether `cfh runs apply` applies this change. */
  applicable: z.boolean(),
  /** Why not, or what the diff could not show. */
  note: z.string().optional(),
});
export type PatchChange = z.infer<typeof PatchChange>;

export const PatchDocument = z.strictObject({
  schema: z.literal(PATCH_SCHEMA),
  runId: z.string(),
  hostWorkspace: z.string(),
  baseline: z.strictObject({ file: z.string(), sha256: Sha256 }),
  /** Where the new contents are kept, by sha256, relative to the run directory. */
  blobs: z.string(),
  changes: z.array(PatchChange),
  /** Entries of the draft the patch cannot carry (FIFOs, sockets, names not UTF-8). */
  unsupported: z.array(SkippedEntry),
  /** Why the end walk stopped reading (its budget, a cancellation): apply refuses it all. */
  incomplete: z.string().optional(),
  summary: z.strictObject({
    added: z.number().int(),
    modified: z.number().int(),
    removed: z.number().int(),
    mode: z.number().int(),
    notApplied: z.number().int(),
  }),
});
export type PatchDocument = z.infer<typeof PatchDocument>;

export const BaselineDocument = z.strictObject({
  schema: z.literal(BASELINE_SCHEMA),
  hostWorkspace: z.string(),
  rootMode: z.number().int(),
  entries: z.array(z.strictObject({ ...PatchSide.shape, path: TreePath })),
  skipped: z.array(SkippedEntry),
});
export type BaselineDocument = z.infer<typeof BaselineDocument>;

function sideOf(e: TreeEntry): PatchSide {
  return {
    type: e.type,
    mode: e.mode,
    ...(e.size === undefined ? {} : { size: e.size }),
    ...(e.sha256 === undefined ? {} : { sha256: e.sha256 }),
    ...(e.target === undefined ? {} : { target: e.target }),
  };
}

const SYMLINK_NOTE = 'symlink: listed, never applied (it could point the host anywhere)';
export const OVERSIZE_NOTE = 'too large to keep: listed by size, never applied';

/**
 * What one change does, read from its two sides: the one description that the diff, the
 * change list of `runs diff`/`runs apply` and the apply itself all follow, so none of them
 * names an operation the others do not carry (a link that became a directory is that, not
 * a directory removed).
 */
export type ChangeOp =
  | { readonly op: 'add' | 'delete'; readonly type: EntryType }
  | { readonly op: 'modify' | 'mode' | 'retarget' }
  | { readonly op: 'retype'; readonly from: EntryType; readonly to: EntryType };

export function changeOp(c: PatchChange): ChangeOp {
  if (c.before === null) return { op: 'add', type: c.after?.type ?? 'file' };
  if (c.after === null) return { op: 'delete', type: c.before.type };
  if (c.before.type !== c.after.type)
    return { op: 'retype', from: c.before.type, to: c.after.type };
  if (c.before.type === 'symlink') return { op: 'retarget' };
  return { op: c.kind === 'mode' ? 'mode' : 'modify' };
}

const BELOW_NOTE = 'below a directory the patch does not make: listed, never applied';

/** The changes from `before` to `after`, in path order; at one path a removal first. */
export function diffTrees(
  before: readonly TreeEntry[],
  after: readonly TreeEntry[],
): PatchChange[] {
  const old = new Map(before.map((e) => [e.path, e]));
  const now = new Map(after.map((e) => [e.path, e]));
  const paths = [...new Set([...old.keys(), ...now.keys()])].sort((a, b) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  const changes: PatchChange[] = [];
  // A directory the patch does not make (a link the run replaced with one): what the run
  // put inside it cannot be applied either, and is listed as such everywhere.
  const unmade: string[] = [];
  for (const p of paths) {
    for (const c of changesAt(p, old.get(p), now.get(p))) {
      const under = unmade.some((d) => p.startsWith(`${d}/`));
      if (under && c.after !== null) {
        changes.push({ ...c, applicable: false, note: BELOW_NOTE });
      } else changes.push(c);
      if (c.after?.type === 'directory' && (!c.applicable || under)) unmade.push(p);
    }
  }
  return changes;
}

function changesAt(p: string, b: TreeEntry | undefined, a: TreeEntry | undefined): PatchChange[] {
  if (b?.type === 'symlink' || a?.type === 'symlink') {
    if (b !== undefined && a !== undefined && b.type === a.type && b.target === a.target) return [];
    return [
      {
        path: p,
        kind: 'symlink',
        before: b === undefined ? null : sideOf(b),
        after: a === undefined ? null : sideOf(a),
        applicable: false,
        note: SYMLINK_NOTE,
      },
    ];
  }
  if (a?.type === 'file' && a.sha256 === undefined) {
    // Too large to read: listed by size, never applied (its contents were never kept).
    return [
      ...(b !== undefined && b.type !== 'file'
        ? [
            {
              path: p,
              kind: 'removed' as const,
              before: sideOf(b),
              after: null,
              applicable: false,
              note: OVERSIZE_NOTE,
            },
          ]
        : []),
      {
        path: p,
        kind: b?.type === 'file' ? ('modified' as const) : ('added' as const),
        before: b?.type === 'file' ? sideOf(b) : null,
        after: sideOf(a),
        applicable: false,
        note: OVERSIZE_NOTE,
      },
    ];
  }
  if (b === undefined && a !== undefined)
    return [{ path: p, kind: 'added', before: null, after: sideOf(a), applicable: true }];
  if (a === undefined && b !== undefined)
    return [{ path: p, kind: 'removed', before: sideOf(b), after: null, applicable: true }];
  if (a === undefined || b === undefined) return [];
  if (a.type !== b.type) {
    // A file became a directory or the other way: the old entry goes, then the new comes.
    return [
      { path: p, kind: 'removed', before: sideOf(b), after: null, applicable: true },
      { path: p, kind: 'added', before: null, after: sideOf(a), applicable: true },
    ];
  }
  if (a.type === 'directory') return [];
  if (a.sha256 !== b.sha256)
    return [{ path: p, kind: 'modified', before: sideOf(b), after: sideOf(a), applicable: true }];
  if (isExecutable(a.mode) !== isExecutable(b.mode))
    return [{ path: p, kind: 'mode', before: sideOf(b), after: sideOf(a), applicable: true }];
  return [];
}

export function summarize(changes: readonly PatchChange[]): PatchDocument['summary'] {
  const count = (k: ChangeKind): number =>
    changes.filter((c) => c.applicable && c.kind === k).length;
  return {
    added: count('added'),
    modified: count('modified'),
    removed: count('removed'),
    mode: count('mode'),
    notApplied: changes.filter((c) => !c.applicable).length,
  };
}

/** New contents the patch needs: every file an applicable change adds or modifies. */
export function neededBlobs(changes: readonly PatchChange[]): string[] {
  const out = new Set<string>();
  for (const c of changes) {
    if (!c.applicable || c.after?.type !== 'file' || c.after.sha256 === undefined) continue;
    if (c.kind === 'added' || c.kind === 'modified') out.add(c.after.sha256);
  }
  return [...out];
}
