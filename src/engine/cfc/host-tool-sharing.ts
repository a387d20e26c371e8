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
// - one's code (inline, a script file or `#!` program read in full, a wrapper's words), read
//   as its interpreter reads it (host-tool-code.ts), names the other's script or program (a
//   file, a module, a package directory, a command on PATH), or both name one file; or cfh
//   cannot resolve what it runs (`cd`, variables, globs, eval, a model-named script): it may
//   run the other's code (fail closed);
// - a path spelling of either cannot be resolved as the tool would (host-tool-spelling.ts);
// - neither has a script, and their programs are one file and their settings (arguments,
//   real cwd, env) agree, paths by their real path; a program the launcher cannot find now
//   may be any file later, so it is taken for the other's (fail safe);
// - or their configurations name a common path (a file, or one inside a directory the other
//   names: engine/host-tool-stores.ts namedPaths).
import { statSync } from 'node:fs';
import type { HostToolEntry } from '../../config/host-tools-schema.js';
import type { Profile } from '../../config/profile-schema.js';
import { entryClearance } from '../../cfc/host-tool-labels.js';
import { ConfigError } from '../../errors.js';
import { isWithin } from '../../sandbox/mount-policy.js';
import { identityOf, type EntryIdentity, type FileIdentity } from './host-tool-identity.js';
import { namedPaths, unresolvedSpellings } from './host-tool-stores.js';
import { treeHostTools } from './host-tool-tree.js';

interface Placed {
  readonly where: string;
  readonly entry: HostToolEntry;
  readonly clearance: string;
  readonly identity: EntryIdentity;
  readonly paths: readonly string[];
  readonly unresolved: readonly string[];
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
    unresolved: unresolvedSpellings(entry),
  };
}

/** `x`'s script is `y`'s program: a `#!` script run by name, and by its interpreter. */
function scriptIsProgram(x: EntryIdentity, y: EntryIdentity): Sharing | undefined {
  if (x.script === undefined || x.script.id !== y.program?.id) return undefined;
  return {
    how: `run the same command: one file, '${x.script.real}', one as its program ('${y.programSpelled}'), the other as the script of '${x.programSpelled}'`,
    hint: OWN_COPY,
  };
}

/** The file `y` itself runs: its script, else its program (not for inline code's shell). */
function ownCode(y: EntryIdentity): FileIdentity | undefined {
  return y.script ?? (y.opaque === undefined ? y.program : undefined);
}

/**
 * `x`'s code, read as its interpreter reads it (host-tool-code.ts), may run `y`'s: a word of
 * it resolves to `y`'s script or program (as a path, a module, a package directory, a
 * command on PATH), or to a directory holding it; or both name one file as code; or cfh
 * cannot resolve what it runs (`cd`, a variable, eval; the model names it): fail closed.
 */
function codeReaches(x: EntryIdentity, y: EntryIdentity): Sharing | undefined {
  const n = x.names;
  if (n.unresolved !== undefined)
    return {
      how: `may run the same code: cfh cannot tell what '${x.programSpelled}' runs (${n.unresolved}), so it may run the other's`,
      hint: `${SAME_CLEARANCE}, or spell the code so cfh can resolve it (literal paths and commands: no \`cd\`, variables, globs or eval), naming none of the other's code`,
    };
  const own = ownCode(y);
  const hit =
    own === undefined ? undefined : [...n.files, ...n.commands].find((f) => f.id === own.id);
  if (own !== undefined && hit !== undefined)
    return {
      how: `may run the same code: the code of '${x.programSpelled}' names '${hit.spelled}', which is '${own.real}', the code the other runs`,
      hint: `${SAME_CLEARANCE}, or give each its own copy of the script`,
    };
  const dir = own === undefined ? undefined : n.dirs.find((d) => own.real.startsWith(`${d}/`));
  if (own !== undefined && dir !== undefined)
    return {
      how: `may run the same code: the code of '${x.programSpelled}' names the directory '${dir}', which holds '${own.real}', the code the other runs`,
      hint: `${SAME_CLEARANCE}, or give each its own copy of the script`,
    };
  const common = n.files.find((f) => y.names.files.some((g) => g.id === f.id));
  if (common === undefined) return undefined;
  return {
    how: `may run the same code: the code of both names '${common.real}'`,
    hint: `${SAME_CLEARANCE}, or give each its own copy of what both name`,
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
  // One script under other settings is the rule above's to tell apart, not its text's words.
  const oneScript = a.script !== undefined && a.script.id === b.script?.id;
  const reaches = oneScript ? undefined : (codeReaches(a, b) ?? codeReaches(b, a));
  if (reaches !== undefined) return reaches;
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
  const vague = unresolvedPlace(a) ?? unresolvedPlace(b);
  if (vague !== undefined) return vague;
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

/**
 * A path spelling cfh cannot resolve as the tool would (host-tool-spelling.ts: a variable its
 * environment does not set, an unknown user's `~`) may name any place, the other's store
 * too: fail closed.
 */
function unresolvedPlace(x: Placed): Sharing | undefined {
  const why = x.unresolved[0];
  if (why === undefined) return undefined;
  return {
    how: `may name the same place: cfh cannot resolve ${why} of ${x.entry.name} as the tool would`,
    hint: `${SAME_CLEARANCE}, or spell its paths so cfh can resolve them (absolute, \`~\`, or a variable the entry's own env sets)`,
  };
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
  const tree = treeHostTools(profile, depth);
  // One clearance in the whole tree: nothing to launder (and no script to read).
  if (new Set(tree.map((t) => [...new Set(entryClearance(t.entry))].sort().join(','))).size < 2)
    return;
  const all = tree.map((t) => placed(t.where, t.entry, searchPath));
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
