// What a host tool entry runs, by identity rather than by spelling (AH-CFC-2/10, AH-CFC-12).
// "One host tool state, one clearance" (host-tool-sharing.ts) must see `/opt/t/store.mjs` and
// `./store.mjs` run from /opt/t, a program found on PATH and its absolute path, a link and
// what it leads to, as the one file they are: otherwise a second spelling of one tool, under a
// lower clearance, hands back what the first was given. So an entry's program is found as the
// launcher finds it (host-plan.ts findEntryProgram: the entry's cwd, cfh's PATH) and known by
// device and inode through every link; its script (found as its interpreter finds it:
// host-tool-script.ts) likewise; and every other argument and env value that names a path is
// written as that path's real path.
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import type { HostToolEntry } from '../../config/host-tools-schema.js';
import { canonicalJson } from '../../evidence/canonical-json.js';
import { realpathOfNearest } from '../../sandbox/mount-policy.js';
import { againstCwd } from '../../tools/host/host-pin.js';
import { cwdOf, findEntryProgram, programOf } from '../../tools/host/host-plan.js';
import { fileIdentity, isDirectoryAt, PLACEHOLDER, type FileIdentity } from './host-tool-files.js';
import { scriptOf } from './host-tool-script.js';

export type { FileIdentity };

export interface EntryIdentity {
  /** Its program; undefined when the launcher finds none now (one may appear later). */
  readonly program: FileIdentity | undefined;
  readonly programSpelled: string;
  /** The file it hands its interpreter to run (host-tool-script.ts). */
  readonly script: FileIdentity | undefined;
  /** Why cfh cannot tell which file it runs (inline code, stdin, a wrapper), when it cannot. */
  readonly opaque: string | undefined;
  /** Its real cwd. */
  readonly cwd: string;
  /**
   * Code cfh cannot resolve to one file: the files its words name (inline code's
   * `python3 notes.py`, a wrapper's command), by identity: it may run any of them.
   */
  readonly named: readonly FileIdentity[];
  /** Its arguments after the program, its real cwd and its env, paths by their real path. */
  readonly settings: string;
  /**
   * The script's own arguments and the env, paths by their real path: what, beside the
   * script, says where it keeps its state (its cwd is not: a script may keep it beside
   * itself, wherever it runs).
   */
  readonly rest: string;
}

/** Variables that say where code is found, not where state is kept. */
const CODE_SEARCH = new Set(['PATH', 'PYTHONPATH', 'NODE_PATH', 'PERL5LIB', 'RUBYLIB']);

/** An option with its value attached: `--db=./notes.db`. */
const ATTACHED = /^(-[^=]*=)([\s\S]*)$/;

function exists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * A text as the path it names, when it names one: it has a `/` (or is `.`/`..`), or names an
 * entry of the cwd. A missing path is the real path of its nearest existing ancestor joined
 * with the rest, so two spellings of one place that does not exist yet still agree.
 */
function canonicalPath(text: string, cwd: string): string {
  if (text === '' || text.includes('\0') || text.includes('://')) return text;
  const absolute = againstCwd(text, cwd);
  if (!text.includes('/') && text !== '.' && text !== '..' && !exists(absolute)) return text;
  try {
    return realpathSync(absolute);
  } catch {
    return realpathOfNearest(absolute);
  }
}

/** One argument or env value with every path it is by its real path. */
function canonicalText(text: string, cwd: string): string {
  if (PLACEHOLDER.test(text)) return text;
  const attached = ATTACHED.exec(text);
  if (attached !== null) return `${attached[1] ?? ''}${canonicalPath(attached[2] ?? '', cwd)}`;
  return canonicalPath(text, cwd);
}

/** The script's own file, as a name with or without node's extension or as its directory. */
function namesScript(arg: string, script: FileIdentity, cwd: string): boolean {
  if (['', '.js', '.mjs', '.cjs'].some((ext) => fileIdentity(arg + ext, cwd)?.id === script.id))
    return true;
  // A directory the interpreter finds the script in (a package, its __main__.py).
  const real = canonicalPath(arg, cwd);
  return isDirectoryAt(arg, cwd) && script.real.startsWith(`${real}/`);
}

/**
 * The script's own arguments: what follows the one that says which script runs (its path,
 * `-m MODULE`, `-mMODULE`); the interpreter's flags before it change no state.
 */
function scriptArgs(
  args: readonly string[],
  script: FileIdentity | undefined,
  cwd: string,
): string[] {
  if (script === undefined) return [...args];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '-m') return args.slice(i + 2);
    if (/^-m[^-]/.test(a) || namesScript(a, script, cwd)) return args.slice(i + 1);
  }
  return [...args];
}

/** Every existing regular file a word of `args` names (inline code split as a shell would, roughly). */
function namedFiles(args: readonly string[], cwd: string): FileIdentity[] {
  const words = args.flatMap((a) => a.split(/[\s'"`;&|()<>=,]+/)).filter((w) => w !== '');
  return words.flatMap((w) => {
    const f = fileIdentity(w, cwd);
    return f === undefined ? [] : [f];
  });
}

/** What `entry` runs and with what, as the files and places its spellings name. */
export function identityOf(entry: HostToolEntry, searchPath: string | undefined): EntryIdentity {
  const cwd = realpathOfNearest(path.resolve(cwdOf(entry)));
  const found = findEntryProgram(entry, searchPath);
  const args = entry.kind === 'exec' ? entry.argv.slice(1) : entry.args;
  const plain = Object.fromEntries(
    Object.entries(entry.env).flatMap(([k, v]) => ('value' in v ? [[k, v.value]] : [])),
  );
  const script = scriptOf(programOf(entry), found, args, cwd, plain);
  const env = Object.fromEntries(
    Object.entries(entry.env).map(([k, v]) => [
      k,
      'value' in v ? canonicalText(v.value, cwd) : '(credential)',
    ]),
  );
  return {
    program: found === undefined ? undefined : fileIdentity(found, '/'),
    programSpelled: programOf(entry),
    script: script.file,
    opaque: script.opaque,
    cwd,
    named: script.opaque === undefined ? [] : namedFiles(args, cwd),
    settings: canonicalJson({ args: args.map((a) => canonicalText(a, cwd)), cwd, env }),
    rest: canonicalJson({
      args: scriptArgs(args, script.file, cwd).map((a) => canonicalText(a, cwd)),
      env: Object.fromEntries(Object.entries(env).filter(([k]) => !CODE_SEARCH.has(k))),
    }),
  };
}
