// A host tree's identity as a written-labels record keeps it (written-labels.ts): device,
// inode and birth time. Device and inode alone name an object only while it exists: a tree
// deleted and another made meanwhile may get its inode back, and a record would then raise
// an unrelated tree; the birth time (statx, where the file system keeps one; "0" where it
// does not) tells the two apart. Read with lstat: a record's tree is never a link.
import { lstatSync } from 'node:fs';
import type { TreeIdentity } from './written-labels.js';

/** The identity of what is at `p` now, or undefined when nothing is. */
export function identityAt(p: string): TreeIdentity | undefined {
  try {
    const st = lstatSync(p, { bigint: true });
    return { dev: String(st.dev), ino: String(st.ino), birth: String(st.birthtimeNs) };
  } catch {
    return undefined;
  }
}

/**
 * Whether two identities are surely one object. Without a birth time ("0": the file system
 * keeps none) device and inode could be a reused inode's, and a false match would raise an
 * unrelated tree's label and with it what may be written there: no match then.
 */
export function sameIdentity(a: TreeIdentity, b: TreeIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.birth === b.birth && a.birth !== '0';
}

/**
 * The identity of the tree at `source` when it is still the object a plan resolved
 * (`expected`: its device and inode), else undefined: a record keeps only an identity it
 * is sure of.
 */
export function confirmedIdentity(
  source: string,
  expected: { readonly dev: string; readonly ino: string } | undefined,
): TreeIdentity | undefined {
  const now = identityAt(source);
  if (now === undefined || expected === undefined) return undefined;
  return now.dev === expected.dev && now.ino === expected.ino ? now : undefined;
}
