// Who could replace a directory entry on a path (AH-CONT-1). An entry is replaced by
// renaming or unlinking it, which needs write permission on the directory that holds it;
// this walks the path up to / and names the first party other than root and cfh's own
// user that has it. POSIX ACLs are not read (Node has no API for them): a write grant
// through an ACL on an ancestor is not seen here (docs/conformance.md, deviations).
// Group write is no one else's when the group is root's (gid 0) or the trusted user's own
// private group (the user-private-group scheme of Debian and Ubuntu, whose umask 002 makes
// every directory of a home group-writable): a group with no other member in /etc/passwd
// and /etc/group. Groups from other name services (LDAP, sssd) are not read: their
// group-writable directories count as others'.
import { lstatSync, readFileSync } from 'node:fs';
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
  const trustedGroup = trustedGroupOf(trustedUid);
  const look = (p: string): EntryOwnership | undefined => seen.get(p) ?? lstatOrUndefined(p);
  let child = source;
  for (let dir = path.dirname(source); ; dir = path.dirname(dir)) {
    const d = look(dir);
    if (d === undefined) return { directory: dir, who: 'unknown (cannot stat)' };
    const writers = writersOf(d, trusted, trustedGroup);
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
 * The first of `entries` that someone else could replace, and who: the links a resolution
 * went through, then the entries it ends at, each judged with what the resolution read.
 */
export function firstSwapper(
  entries: readonly string[],
  trustedUid: number,
  seen: ReadonlyMap<string, EntryOwnership> = new Map(),
): { readonly entry: string; readonly swapper: Swapper } | undefined {
  for (const entry of entries) {
    const swapper = swapperOf(entry, trustedUid, seen);
    if (swapper !== undefined) return { entry, swapper };
  }
  return undefined;
}

/** Who could have made or replaced a symbolic link: the directory it took, and who. */
export interface LinkMaker {
  /** The link itself (its owner made it) or the first directory above it another may write. */
  readonly directory: string;
  /** `uid 1000`, `gid 50`, `anyone`. */
  readonly who: string;
}

/**
 * The first of `links` that someone other than root could have made or could replace, and
 * who (AH-CONT-1). A sandbox writes as a non-root uid (cfh's own, the workspace owner's,
 * nobody's), so a link it left in a directory it was given rw, in this run or any earlier
 * one, is owned by a non-root uid or lies below a directory a non-root uid may write: cfh
 * cannot tell a link the operator made from one a sandbox made as the operator. The only
 * links that pass are system links: owned by root, in directories from / down that are
 * root's and writable by nobody else (group write only for gid 0; a sticky bit does not
 * help, since anyone may add an entry there). `seen` holds what the resolution read.
 */
export function firstPlantableLink(
  links: readonly string[],
  seen: ReadonlyMap<string, EntryOwnership> = new Map(),
): { readonly link: string; readonly maker: LinkMaker } | undefined {
  const look = (p: string): EntryOwnership | undefined => seen.get(p) ?? lstatOrUndefined(p);
  const rootOnly = (uid: number): boolean => uid === 0;
  for (const link of links) {
    const own = look(link);
    if (own === undefined)
      return { link, maker: { directory: link, who: 'unknown (cannot stat)' } };
    if (own.uid !== 0) return { link, maker: { directory: link, who: `uid ${own.uid}` } };
    for (let dir = path.dirname(link); ; dir = path.dirname(dir)) {
      const d = look(dir);
      const who = d === undefined ? 'unknown (cannot stat)' : writersOf(d, rootOnly);
      if (who !== undefined) return { link, maker: { directory: dir, who } };
      if (dir === '/') break;
    }
  }
  return undefined;
}

/** How an error names a link firstPlantableLink found: where it points, who could make it. */
export function plantedLinkText(
  link: string,
  maker: LinkMaker,
  target: string | undefined,
): string {
  const why = maker.directory === link ? 'owns it' : `may write '${maker.directory}', on its way`;
  return `the symbolic link '${link}' (to '${target ?? '?'}'), which is not root's alone (${maker.who} ${why}): a sandbox writing as a non-root uid could have made it`;
}

/**
 * Who besides trusted users may write `d`; undefined when nobody else may. A directory's
 * owner may always write it, whatever its mode says now: chmod is theirs.
 */
export function writersOf(
  d: EntryOwnership,
  trusted: (uid: number) => boolean,
  trustedGroup: (gid: number) => boolean = (gid) => gid === 0,
): string | undefined {
  if (!trusted(d.uid)) return `uid ${d.uid}`;
  if ((d.mode & 0o020) !== 0 && !trustedGroup(d.gid)) return `gid ${d.gid}`;
  if ((d.mode & 0o002) !== 0) return 'anyone';
  return undefined;
}

/**
 * The primary group of `uid` when nobody else is in it, from the texts of /etc/passwd and
 * /etc/group: no other account has it as its primary group, and its member list names at
 * most that user. Undefined otherwise, or when `uid` has no entry.
 */
export function privateGroupOf(uid: number, passwd: string, group: string): number | undefined {
  const accounts = passwd
    .split('\n')
    .map((line) => line.split(':'))
    .filter((f) => f.length >= 4)
    .map(([name = '', , u = '', g = '']) => ({ name, uid: Number(u), gid: Number(g) }));
  const me = accounts.find((a) => a.uid === uid);
  if (me === undefined || !Number.isInteger(me.gid)) return undefined;
  if (accounts.some((a) => a.gid === me.gid && a.uid !== uid)) return undefined;
  for (const line of group.split('\n')) {
    const [, , g = '', members = ''] = line.split(':');
    if (line.split(':').length < 4 || Number(g) !== me.gid) continue;
    if (members.split(',').some((m) => m.trim() !== '' && m.trim() !== me.name)) return undefined;
  }
  return me.gid;
}

/** Whose group write is no one else's, for `uid`: root's group and its private group. */
export function trustedGroupOf(uid: number): (gid: number) => boolean {
  const own = privateGroupOfHost(uid);
  return (gid) => gid === 0 || gid === own;
}

const privateGroups = new Map<number, number | undefined>();

/** privateGroupOf for this host's account files, read once per uid. */
function privateGroupOfHost(uid: number): number | undefined {
  if (!privateGroups.has(uid)) {
    let found: number | undefined;
    try {
      found = privateGroupOf(
        uid,
        readFileSync('/etc/passwd', 'utf8'),
        readFileSync('/etc/group', 'utf8'),
      );
    } catch {
      found = undefined;
    }
    privateGroups.set(uid, found);
  }
  return privateGroups.get(uid);
}

function lstatOrUndefined(p: string): EntryOwnership | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}
