// A workspace tree as data: one entry a path, as the draft/commit split compares them
// (governance extension, "Draft vs commit policy"). The host's tree at the start of a
// draft run (the baseline) and the draft's tree at its end are both written in this form;
// the patch is the difference. Entries never follow a symlink: a symlink is an entry of
// its own, with its target as text.
import { z } from 'zod';

export const EntryType = z.enum(['file', 'directory', 'symlink']);
export type EntryType = z.infer<typeof EntryType>;

/**
 * A relative, `/`-separated path inside a workspace: no empty, `.` or `..` component, no
 * NUL, no leading or trailing slash. Everything that reads a patch back parses its paths
 * with this, so a patch can never name a place outside the tree it applies to.
 */
export const TreePath = z
  .string()
  .min(1)
  .max(4096)
  .refine(
    (p) =>
      !p.includes('\0') &&
      !p.startsWith('/') &&
      p.split('/').every((c) => c !== '' && c !== '.' && c !== '..'),
    'not a normalized relative path',
  );

export const TreeEntry = z.strictObject({
  path: TreePath,
  type: EntryType,
  /** Permission bits as found (mode & 0o7777). */
  mode: z.number().int().min(0).max(0o7777),
  /** Regular files: size in bytes and the sha256 of the contents. */
  size: z.number().int().nonnegative().optional(),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /** Symlinks: the link's text, never resolved. */
  target: z.string().optional(),
});
export type TreeEntry = z.infer<typeof TreeEntry>;

/** An entry the tree walk met and did not take: a socket, a FIFO, a device, a bad name. */
export const SkippedEntry = z.strictObject({
  path: z.string(),
  reason: z.string(),
});
export type SkippedEntry = z.infer<typeof SkippedEntry>;

export interface TreeListing {
  /** Sorted by path (code-unit order), directories before their contents. */
  readonly entries: readonly TreeEntry[];
  readonly skipped: readonly SkippedEntry[];
}

/** The git mode of a file entry: only the owner's executable bit is carried over. */
export function isExecutable(mode: number): boolean {
  return (mode & 0o100) !== 0;
}

export function gitMode(entry: Pick<TreeEntry, 'type' | 'mode'>): string {
  if (entry.type === 'symlink') return '120000';
  if (entry.type === 'directory') return '040000';
  return isExecutable(entry.mode) ? '100755' : '100644';
}

/**
 * A directory name as the kernel gave it (bytes) becomes a tree path component only when
 * it is valid UTF-8 that decodes back to the same bytes: a lossy name would be copied or
 * applied under another name.
 */
export function componentOf(name: Buffer): string | undefined {
  const text = name.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(name)) return undefined;
  if (text === '' || text === '.' || text === '..' || text.includes('/') || text.includes('\0'))
    return undefined;
  return text;
}

export function joinTreePath(parent: string, name: string): string {
  return parent === '' ? name : `${parent}/${name}`;
}

export function compareTreePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
