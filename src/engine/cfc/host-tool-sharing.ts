// One host tool's state, one clearance (AH-CFC-2/10, AH-CFC-12): a host tool keeps what it is
// given (a store, a log, a server's graph) and hands it back to any later call of the same
// state, so two entries of one state under different clearances launder: the entry cleared
// for a secret stores it, the entry cleared for less reads it back under its lower label, in
// this run or in a child (either way: the parent's and the children's profiles are all
// known when the top run is planned). Entries share state when they run the same command
// with the same settings, or when their configurations name a common path (a file, or one
// inside a directory the other names: engine/host-tool-stores.ts namedPaths). Two such entries
// under different clearances are refused at planning, as two mounts of one tree under two
// labels are (label-map.ts).
import { statSync } from 'node:fs';
import { resolveChildren } from '../../config/child-profiles.js';
import type { HostToolEntry } from '../../config/host-tools-schema.js';
import type { Profile } from '../../config/profile-schema.js';
import { entryClearance } from '../../cfc/host-tool-labels.js';
import { ConfigError } from '../../errors.js';
import { canonicalJson } from '../../evidence/canonical-json.js';
import { isWithin } from '../../sandbox/mount-policy.js';
import { namedPaths } from './host-tool-stores.js';

interface Placed {
  readonly where: string;
  readonly entry: HostToolEntry;
  readonly clearance: string;
  readonly command: string;
  readonly paths: readonly string[];
}

/** What an entry runs, without its name and labels: two alike keep the same state. */
function commandOf(entry: HostToolEntry): string {
  const env = Object.fromEntries(
    Object.entries(entry.env).map(([k, v]) => [k, 'value' in v ? v.value : '(credential)']),
  );
  const what = entry.kind === 'exec' ? entry.argv : [entry.command, ...entry.args];
  return canonicalJson({ kind: entry.kind, what, env, cwd: entry.cwd ?? null });
}

function placed(where: string, entry: HostToolEntry): Placed {
  return {
    where,
    entry,
    clearance: [...new Set(entryClearance(entry))].sort().join(','),
    command: commandOf(entry),
    paths: namedPaths(entry),
  };
}

/** Every host tool entry of `profile` and of every child it may delegate to, by place. */
function treeEntries(profile: Profile, depth: number, where: string): Placed[] {
  const own = profile.hostTools.map((e) => placed(where, e));
  if (depth <= 0) return own;
  return [
    ...own,
    ...resolveChildren(profile, depth).flatMap((c) =>
      treeEntries(c.loaded.profile, depth - 1, `child ${c.name}`),
    ),
  ];
}

/**
 * How `a` and `b` share state: the same command; one file both name; or a file one names
 * inside a directory the other names (it reads what is kept there). One directory both name
 * is not by itself shared state: tools that each keep their own file in a common directory
 * (a records or output directory) do not read each other's.
 */
function shared(a: Placed, b: Placed): string | undefined {
  if (a.command === b.command) return 'run the same command with the same settings';
  for (const p of a.paths)
    for (const q of b.paths) {
      if (p === q && !isDirectory(p)) return `both name '${p}'`;
      if (isWithin(p, q) && !isDirectory(p)) return `both name '${p}' (through '${q}')`;
      if (isWithin(q, p) && !isDirectory(q)) return `both name '${q}' (through '${p}')`;
    }
  return undefined;
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Refuses two entries of one host tool state under different clearances, in the whole tree. */
export function checkHostToolSharing(profile: Profile, depth: number): void {
  const all = treeEntries(profile, depth, 'this run');
  for (const [i, a] of all.entries())
    for (const b of all.slice(i + 1)) {
      if (a.clearance === b.clearance) continue;
      const how = shared(a, b);
      if (how === undefined) continue;
      throw new ConfigError(
        'host_tool_state_shared',
        `hostTools ${a.entry.name} (${a.where}) and ${b.entry.name} (${b.where}) ${how}, under different clearances (${a.clearance || 'none'}; ${b.clearance || 'none'}): what one is given the other hands back under its own label`,
        { field: 'hostTools', value: [a.entry.name, b.entry.name] },
        'give every entry of one tool state the same clearance, or keep their state apart',
      );
    }
}
