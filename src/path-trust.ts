// Who could replace a directory entry on a path (AH-CONT-1). An entry is replaced by
// renaming or unlinking it, which needs write permission on the directory that holds it;
// this walks the path up to / and names the first party other than root and cfh's own
// user that has it. POSIX ACLs are not read (Node has no API for them): a write grant
// through an ACL on an ancestor is not seen here (docs/conformance.md, deviations).
import { lstatSync } from 'node:fs';
import path from 'node:path';

export interface Swapper {
  /** The directory whose entry could be renamed. */
  readonly directory: string;
  /** Who could: `uid 1001`, `gid 27`, `anyone`. */
  readonly who: string;
}

const S_ISVTX = 0o1000;

/** What the walk up needs of a directory entry: its owner, group and mode. */
export interface EntryOwnership {
  readonly uid: number;
  readonly gid: number;
  readonly mode: number;
}

/**
 * The first party other than root and `trustedUid` that could rename an entry on the path
 * of `source` (an absolute, already resolved path), or undefined when none can. `seen`
 * holds what a resolution already read of the entries on the path (source-resolution.ts):
 * those are judged as they were when they led to the object, not as a second look finds
 * them (a link in a sticky directory swapped meanwhile for a hard link of root's file).
 */
export function swapperOf(
  source: string,
  trustedUid: number,
  seen: ReadonlyMap<string, EntryOwnership> = new Map(),
): Swapper | undefined {
  const trusted = (uid: number): boolean => uid === 0 || uid === trustedUid;
  const look = (p: string): EntryOwnership | undefined => seen.get(p) ?? lstatOrUndefined(p);
  let child = source;
  for (let dir = path.dirname(source); ; dir = path.dirname(dir)) {
    const d = look(dir);
    if (d === undefined) return { directory: dir, who: 'unknown (cannot stat)' };
    const writers = writersOf(d, trusted);
    if (writers !== undefined) {
      // In a sticky directory only the owner of the entry (or of the directory) may rename it.
      const entry = (d.mode & S_ISVTX) !== 0 ? look(child) : undefined;
      if (entry === undefined || !trusted(entry.uid) || !trusted(d.uid)) {
        return {
          directory: dir,
          who: entry !== undefined && !trusted(entry.uid) ? `uid ${entry.uid}` : writers,
        };
      }
    }
    if (dir === '/') return undefined;
    child = dir;
  }
}

/**
 * Who besides trusted users may write `d`; undefined when nobody else may. A directory's
 * owner may always write it, whatever its mode says now: chmod is theirs. Group 0 is
 * trusted as root is (docs/conformance.md, deviations).
 */
export function writersOf(
  d: EntryOwnership,
  trusted: (uid: number) => boolean,
): string | undefined {
  if (!trusted(d.uid)) return `uid ${d.uid}`;
  if ((d.mode & 0o020) !== 0 && d.gid !== 0) return `gid ${d.gid}`;
  if ((d.mode & 0o002) !== 0) return 'anyone';
  return undefined;
}

function lstatOrUndefined(p: string): EntryOwnership | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}
