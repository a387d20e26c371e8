// Class 9, a held file under another name: holding `.git` read-only (host-obeyed-mounts.ts)
// holds the name, not the inode. A file inside it with a second name elsewhere in the same
// rw mount (a hard link: an unpacked archive keeps them, `cp -al` makes them) is written
// through that name, and the host's git obeys what was written. The property: no file
// inside a held entry shares its inode with a file of the rw mount outside the held
// entries. A held file with more than one name has its other names looked for in the mount;
// the run is refused (125, before anything exists) when one is there, or when the look was
// cut short by its bound (what was not seen cannot be said to be clear).
//
// A git directory's `objects/` is not looked into: objects are data git reads by their
// hash, not settings or programs it runs, and a local clone (`git clone /path`) hard-links
// every one of them to the repository it came from.
import { lstatSync, readdirSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';
import type { SpecMount } from '../substrate/container-spec.js';

/** Entries looked at in one rw mount before the look gives up (and refuses). */
export const MAX_LINK_ENTRIES = 200_000;

const HINT =
  'give the file a single name (copy it instead of linking it), use --workspace-mode draft, or name the paths writable with --host-obeyed rw';

interface Walk {
  entries: number;
  readonly max: number;
}

function list(dir: string, walk: Walk): Dirent[] | undefined {
  try {
    const names = readdirSync(dir, { withFileTypes: true });
    walk.entries += names.length;
    return names;
  } catch {
    return undefined;
  }
}

/** Regular files with more than one name below `dir`: `dev:ino` -> relative path. */
function multiplyNamed(dir: string, rel: string, walk: Walk, out: Map<string, string>): void {
  const names = list(dir, walk);
  if (names === undefined || walk.entries > walk.max) return;
  const gitDir = names.some((n) => n.name === 'HEAD');
  for (const n of names) {
    const child = path.join(dir, n.name);
    const childRel = `${rel}/${n.name}`;
    if (n.isDirectory()) {
      if (!(gitDir && n.name === 'objects')) multiplyNamed(child, childRel, walk, out);
    } else if (n.isFile()) {
      const s = lstatSync(child, { bigint: true });
      if (s.nlink > 1n) out.set(`${String(s.dev)}:${String(s.ino)}`, childRel);
    }
  }
}

/** The first file below `dir` (held top entries left out) whose inode is in `wanted`. */
function otherName(
  dir: string,
  rel: string,
  skip: ReadonlySet<string>,
  wanted: ReadonlyMap<string, string>,
  walk: Walk,
): { readonly path: string; readonly held: string } | 'bound' | undefined {
  const names = list(dir, walk);
  if (walk.entries > walk.max) return 'bound';
  for (const n of names ?? []) {
    if (rel === '' && skip.has(n.name)) continue;
    const childRel = rel === '' ? n.name : `${rel}/${n.name}`;
    const child = path.join(dir, n.name);
    if (n.isDirectory()) {
      const found = otherName(child, childRel, skip, wanted, walk);
      if (found !== undefined) return found;
    } else if (n.isFile()) {
      const s = lstatSync(child, { bigint: true });
      const held = s.nlink > 1n ? wanted.get(`${String(s.dev)}:${String(s.ino)}`) : undefined;
      if (held !== undefined) return { path: childRel, held };
    }
  }
  return undefined;
}

/**
 * Refuses the run when a file inside one of `held` (top entries of the rw mount `rw`, listed
 * through `here`, its pinned descriptor's path) has another name in the mount outside them.
 */
export function refuseOtherNames(
  rw: SpecMount,
  here: string,
  held: readonly string[],
  max = MAX_LINK_ENTRIES,
): void {
  const wanted = new Map<string, string>();
  const walk: Walk = { entries: 0, max };
  for (const name of held) multiplyNamed(`${here}/${name}`, name, walk, wanted);
  if (wanted.size === 0 && walk.entries <= max) return;
  const found = walk.entries > max ? 'bound' : otherName(here, '', new Set(held), wanted, walk);
  if (found === undefined) return;
  const what =
    found === 'bound'
      ? `more than ${String(max)} entries to look through for the other names of a held file`
      : `'${found.path}', another name of the held file '${found.held}'`;
  throw new ConfigError(
    'host_obeyed_unheld',
    `'${rw.source}' (at ${rw.target}) has ${what}, so cfh cannot hold it read-only, and a tool on the host obeys it (src/host-obeyed.ts)`,
    { field: 'hostObeyed', value: rw.source },
    HINT,
  );
}
