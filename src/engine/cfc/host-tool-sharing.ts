// One host tool's state, one clearance (AH-CFC-2/10, AH-CFC-12): a host tool keeps what it is
// given (a store, a log, a server's graph) and hands it back to any later call of the same
// state, so two entries of one state under different clearances launder: the entry cleared
// for a secret stores it, the entry cleared for less reads it back under its lower label, in
// this run or in a child (either way: the parent's and the children's profiles are all
// known when the top run is planned). Two such entries under different clearances are
// refused at planning, as two mounts of one tree under two labels are (label-map.ts).
//
// Entries share state when they run the same code, compared by what their spellings resolve
// to (host-tool-identity.ts), never by how they are written:
// - both run one script (as its interpreter finds it: `-m MODULE`, a directory's
//   __main__.py, node's package main; host-tool-script.ts), whatever program runs it, with
//   the same other settings: one script given one configuration keeps one state, wherever
//   it keeps it (beside itself, under $HOME), however each entry spells it. One script
//   given other settings (another store argument or env value) is taken to keep another
//   state: the operator's settings say where (docs/operators.md);
// - one runs as its program the file the other hands its interpreter (a `#!` script);
// - one runs code cfh cannot resolve to a file (`sh -c`, `python3 -c`, a wrapper) whose
//   words name the other's script or program: it may run it;
// - neither has a script, and their programs are one file and their settings (arguments,
//   real cwd, env) agree, paths by their real path; a program the launcher cannot find now
//   may be any file later, so it is taken for the other's (fail safe);
// - or their configurations name a common path (a file, or one inside a directory the other
//   names: engine/host-tool-stores.ts namedPaths).
import { statSync } from 'node:fs';
import { resolveChildren } from '../../config/child-profiles.js';
import type { HostToolEntry } from '../../config/host-tools-schema.js';
import type { Profile } from '../../config/profile-schema.js';
import { entryClearance } from '../../cfc/host-tool-labels.js';
import { ConfigError } from '../../errors.js';
import { isWithin } from '../../sandbox/mount-policy.js';
import { identityOf, type EntryIdentity } from './host-tool-identity.js';
import { namedPaths } from './host-tool-stores.js';

interface Placed {
  readonly where: string;
  readonly entry: HostToolEntry;
  readonly clearance: string;
  readonly identity: EntryIdentity;
  readonly paths: readonly string[];
}

/** How two entries share state, and what the operator can do about it. */
interface Sharing {
  readonly how: string;
  readonly hint: string;
}

const SAME_CLEARANCE = 'give every entry of one tool state the same clearance';
const KEEP_APART = `${SAME_CLEARANCE}, or keep their state apart`;
const OWN_COPY = `${SAME_CLEARANCE}, or give each its own copy of the script (one script's state is one, whatever it is given)`;

function placed(where: string, entry: HostToolEntry, searchPath: string | undefined): Placed {
  return {
    where,
    entry,
    clearance: [...new Set(entryClearance(entry))].sort().join(','),
    identity: identityOf(entry, searchPath),
    paths: namedPaths(entry),
  };
}

/** Every host tool entry of `profile` and of every child it may delegate to, by place. */
function treeEntries(
  profile: Profile,
  depth: number,
  where: string,
  searchPath: string | undefined,
): Placed[] {
  const own = profile.hostTools.map((e) => placed(where, e, searchPath));
  if (depth <= 0) return own;
  return [
    ...own,
    ...resolveChildren(profile, depth).flatMap((c) =>
      treeEntries(c.loaded.profile, depth - 1, `child ${c.name}`, searchPath),
    ),
  ];
}

/** `x`'s script is `y`'s program: a `#!` script run by name, and by its interpreter. */
function scriptIsProgram(x: EntryIdentity, y: EntryIdentity): Sharing | undefined {
  if (x.script === undefined || x.script.id !== y.program?.id) return undefined;
  return {
    how: `run the same command: one file, '${x.script.real}', one as its program ('${y.programSpelled}'), the other as the script of '${x.programSpelled}'`,
    hint: OWN_COPY,
  };
}

/**
 * `x` runs code cfh cannot resolve to one file (inline, a wrapper): when a word of it names
 * `y`'s script or program, it may run `y`'s code (`sh -c 'exec python3 notes.py'` beside
 * `python3 notes.py`; AH-CFC-12). Inline code that names none of them is other code; two
 * entries of one inline text and settings are one command (the rule below).
 */
function opaqueNames(x: EntryIdentity, y: EntryIdentity): Sharing | undefined {
  if (x.opaque === undefined) return undefined;
  const theirs = [y.script, y.program].filter((f) => f !== undefined);
  const hit = x.named.find((f) => theirs.some((t) => t.id === f.id));
  if (hit === undefined) return undefined;
  return {
    how: `may run the same code: '${x.programSpelled}' ${x.opaque}, and it names '${hit.real}' (as '${hit.spelled}'), which the other runs`,
    hint: `${SAME_CLEARANCE}, or give each its own copy of the script`,
  };
}

/** Whether `a` and `b` run the same code (the rule above), by identity. */
function sameCode(a: EntryIdentity, b: EntryIdentity): Sharing | undefined {
  if (a.script !== undefined && a.script.id === b.script?.id && a.rest === b.rest)
    return {
      how: `run the same command: one script, '${a.script.real}' (given as '${a.script.spelled}' and '${b.script.spelled}'), with the same settings, whatever runs it`,
      hint: OWN_COPY,
    };
  const asProgram = scriptIsProgram(a, b) ?? scriptIsProgram(b, a);
  if (asProgram !== undefined) return asProgram;
  const opaque = opaqueNames(a, b) ?? opaqueNames(b, a);
  if (opaque !== undefined) return opaque;
  if (a.script !== undefined || b.script !== undefined || a.settings !== b.settings)
    return undefined;
  if (a.program !== undefined && b.program !== undefined)
    return a.program.id === b.program.id
      ? {
          how: `run the same command with the same settings ('${a.program.real}', given as '${a.programSpelled}' and '${b.programSpelled}')`,
          hint: KEEP_APART,
        }
      : undefined;
  const unknown = a.program === undefined ? a.programSpelled : b.programSpelled;
  return {
    how: `run the same command with the same settings as far as cfh can tell: program '${unknown}' is not found (or not executable) now, so it may be the other's ('${a.programSpelled}' and '${b.programSpelled}')`,
    hint: `${SAME_CLEARANCE}, or install the program (or name it by its absolute path) so cfh can tell which file it is`,
  };
}

/**
 * How `a` and `b` share state: the same code; one file both name; or a file one names
 * inside a directory the other names (it reads what is kept there). One directory both name
 * is not by itself shared state: tools that each keep their own file in a common directory
 * (a records or output directory) do not read each other's.
 */
function shared(a: Placed, b: Placed): Sharing | undefined {
  const code = sameCode(a.identity, b.identity);
  if (code !== undefined) return code;
  const named = (how: string): Sharing => ({ how, hint: KEEP_APART });
  for (const p of a.paths)
    for (const q of b.paths) {
      if (p === q && !isDirectory(p)) return named(`both name '${p}'`);
      if (isWithin(p, q) && !isDirectory(p)) return named(`both name '${p}' (through '${q}')`);
      if (isWithin(q, p) && !isDirectory(q)) return named(`both name '${q}' (through '${p}')`);
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

/**
 * Refuses two entries of one host tool state under different clearances, in the whole tree.
 * `searchPath` is the PATH the launcher finds programs on (cfh's own: host-plan.ts).
 */
export function checkHostToolSharing(
  profile: Profile,
  depth: number,
  searchPath: string | undefined,
): void {
  const all = treeEntries(profile, depth, 'this run', searchPath);
  for (const [i, a] of all.entries())
    for (const b of all.slice(i + 1)) {
      if (a.clearance === b.clearance) continue;
      const sharing = shared(a, b);
      if (sharing === undefined) continue;
      throw new ConfigError(
        'host_tool_state_shared',
        `hostTools ${a.entry.name} (${a.where}) and ${b.entry.name} (${b.where}) ${sharing.how}, under different clearances (${a.clearance || 'none'}; ${b.clearance || 'none'}): what one is given the other hands back under its own label`,
        { field: 'hostTools', value: [a.entry.name, b.entry.name] },
        sharing.hint,
      );
    }
}
