// A written tree that was renamed or moved keeps its record (cfc/written-labels.ts): the
// record's place is where the tree was, its identity (cfc/tree-identity.ts) is the tree,
// wherever it is now. A record whose place no longer holds its tree is looked for in the
// run's mounts: a mount that is the tree or lies in it (its path or an ancestor has the
// tree's identity), or a mount the tree lies in (a bounded walk of the mount for it). Each
// find is handed to planning as a copy of the record placed where the mount reaches the
// tree, so the one match by place (host-trees.ts) decides as for a tree that never moved.
// A walk cut short by its budget refuses the run: cfh cannot say the tree is not there, and
// taking it to be there would raise what may be written into the mount as well.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { identityAt, sameIdentity } from '../../cfc/tree-identity.js';
import type { TreeIdentity, WrittenRecord } from '../../cfc/written-labels.js';
import { ConfigError } from '../../errors.js';
import type { SourceTrees } from '../../host-trees.js';

/** The most entries one mount's walk reads before it counts as holding the tree. */
export const MOVED_SEARCH_BUDGET = 20_000;

type Displaced = WrittenRecord & { readonly identity: TreeIdentity };

function displaced(r: WrittenRecord): r is Displaced {
  if (r.identity === undefined) return false;
  const here = identityAt(r.host);
  return here === undefined || !sameIdentity(here, r.identity);
}

/** The identities of `p` and of each directory above it. */
function ancestry(p: string): TreeIdentity[] {
  const out: TreeIdentity[] = [];
  for (let at = p; ; at = path.dirname(at)) {
    const id = identityAt(at);
    if (id !== undefined) out.push(id);
    if (path.dirname(at) === at) return out;
  }
}

/**
 * Where under `root` each of `wanted` lies (its path), or 'cut' when the budget ran out
 * first. Links are not followed: a link's target is another tree, reached by its own mount.
 */
function walkFor(
  root: string,
  wanted: readonly Displaced[],
  budget: number,
): Map<Displaced, string> | 'cut' {
  const found = new Map<Displaced, string>();
  const queue = [root];
  let read = 0;
  while (queue.length > 0 && found.size < wanted.length) {
    const dir = queue.shift() as string;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (++read > budget) return 'cut';
      if (e.isSymbolicLink() || (!e.isDirectory() && !e.isFile())) continue;
      const at = path.join(dir, e.name);
      const kind = e.isDirectory() ? 'directory' : 'file';
      const id = wanted.some((w) => w.kind === kind && !found.has(w)) ? identityAt(at) : undefined;
      if (id !== undefined)
        for (const w of wanted)
          if (w.kind === kind && sameIdentity(w.identity, id)) found.set(w, at);
      if (kind === 'directory') queue.push(at);
    }
  }
  return found;
}

function placedAt(r: WrittenRecord, tree: SourceTrees, at: string): WrittenRecord {
  const rel = path.relative(tree.source, at);
  return {
    ...r,
    host: at,
    place: {
      device: tree.place.device,
      path: rel === '' ? tree.place.path : path.join(tree.place.path, rel),
    },
  };
}

function unlocated(away: readonly Displaced[], tree: SourceTrees, budget: number): ConfigError {
  const first = away[0]?.host ?? '?';
  return new ConfigError(
    'written_tree_unlocated',
    `the tree '${first}' that a run wrote into is not at its place any more, and cfh cannot tell whether it now lies in '${tree.source}' (the search stopped at ${String(budget)} entries)`,
    { field: 'mounts', value: tree.source },
    `if it was deleted, cfh labels forget ${first}; if it was moved into '${tree.source}', mount it by its new path`,
  );
}

/** Copies of the records whose tree left its place, placed where `trees` reach it now. */
export function movedRecords(
  records: readonly WrittenRecord[],
  trees: readonly SourceTrees[],
  budget = MOVED_SEARCH_BUDGET,
): WrittenRecord[] {
  const away = records.filter(displaced);
  if (away.length === 0) return [];
  const out: WrittenRecord[] = [];
  for (const tree of trees) {
    const above = ancestry(tree.source);
    const within = away.filter((r) => above.some((a) => sameIdentity(a, r.identity)));
    for (const r of within) out.push(placedAt(r, tree, tree.source));
    const device = identityAt(tree.source)?.dev;
    const below = away.filter((r) => !within.includes(r) && r.identity.dev === device);
    if (below.length === 0 || tree.kind !== 'directory') continue;
    const found = walkFor(tree.source, below, budget);
    if (found === 'cut') throw unlocated(below, tree, budget);
    for (const [r, at] of found) out.push(placedAt(r, tree, at));
  }
  return out;
}
