// What a host tool entry runs, by identity rather than by spelling (AH-CFC-2/10, AH-CFC-12).
// "One host tool state, one clearance" (host-tool-sharing.ts) must see `/opt/t/store.mjs` and
// `./store.mjs` run from /opt/t, a program found on PATH and its absolute path, a link and
// what it leads to, as the one file they are: otherwise a second spelling of one tool, under a
// lower clearance, hands back what the first was given. So an entry's program is found as the
// launcher finds it (host-plan.ts findEntryProgram: the entry's cwd, cfh's PATH) and known by
// device and inode through every link; its script (found as its interpreter finds it:
// host-tool-script.ts) likewise; and every other argument and env value that names a path is
// written as that path's real path.
import { closeSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import type { HostToolEntry } from '../../config/host-tools-schema.js';
import { canonicalJson } from '../../evidence/canonical-json.js';
import { realpathOfNearest } from '../../sandbox/mount-policy.js';
import { againstCwd } from '../../tools/host/host-pin.js';
import { cwdOf, findEntryProgram, programOf } from '../../tools/host/host-plan.js';
import { codeNames, NO_NAMES, readCode, type CodeNames } from './host-tool-code.js';
import {
  fileIdentity,
  isDirectoryAt,
  PLACEHOLDER,
  type CodeText,
  type FileIdentity,
  type ScriptOf,
} from './host-tool-files.js';
import { interpreterOf, scriptOf } from './host-tool-script.js';
import { expandedOr } from './host-tool-spelling.js';

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
   * What its code names, read as its interpreter reads it (inline code, the script file, a
   * `#!` program, a wrapper's words: host-tool-code.ts), by identity: it may run any of them.
   */
  readonly names: CodeNames;
  /** Its arguments after the program, its real cwd and its env, paths by their real path. */
  readonly settings: string;
  /**
   * The script's own arguments and the env, paths by their real path: what, beside the
   * script, says where it keeps its state (its cwd is not: a script may keep it beside
   * itself, wherever it runs).
   */
  readonly rest: string;
}

/** What every `{field}` is compared as: the model's value, whatever the field is called. */
const MODEL_VALUE = '{}';

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

/**
 * One argument or env value with every path it is by its real path, as the tool resolves
 * its spelling (`~`, `$HOME`, its env's `$NAME`: host-tool-spelling.ts). A `{field}` is a
 * model-chosen value, whatever its name: every placeholder is one (AH-CFC-12), so two
 * entries that differ only in what they call the model's values run the same command.
 */
function canonicalText(text: string, cwd: string, env: Readonly<Record<string, string>>): string {
  if (PLACEHOLDER.test(text)) return MODEL_VALUE;
  text = expandedOr(text, env);
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

/**
 * What the code an entry runs names, read as its interpreter reads it (host-tool-code.ts):
 * inline code; the script file an interpreter is handed and a `#!` program, read in full; a
 * wrapper's arguments (`env`, `uv run`) as words. The model naming the script: unresolved.
 */
function namesOf(
  script: ScriptOf,
  program: string,
  found: string | undefined,
  args: readonly string[],
  at: { cwd: string; env: Readonly<Record<string, string>>; searchPath: string | undefined },
): CodeNames {
  if (script.unresolved !== undefined) return { ...NO_NAMES, unresolved: script.unresolved };
  if (script.code !== undefined) return codeNames(script.code, true, at);
  const texts: CodeText[] = [];
  const lang = interpreterOf(program, found);
  for (const [real, shell] of [
    ...(script.file !== undefined && lang !== undefined
      ? [[script.file.real, lang === 'shell'] as const]
      : []),
    // A program that is a script itself (`#!`): its text, whatever it hands on.
    ...(found !== undefined && lang === undefined && isScriptFile(found)
      ? [[found, false] as const]
      : []),
  ]) {
    const code = readCode(real, shell);
    if ('unresolved' in code) return { ...NO_NAMES, unresolved: code.unresolved };
    texts.push(code);
  }
  if (script.opaque !== undefined)
    texts.push({ text: args.filter((a) => !PLACEHOLDER.test(a)).join('\n'), shell: false });
  return mergeNames(texts.map((t) => codeNames(t, false, at)));
}

function isScriptFile(p: string): boolean {
  try {
    const fd = openSync(p, 'r');
    try {
      const head = Buffer.alloc(2);
      return readSync(fd, head, 0, 2, 0) === 2 && head.toString('latin1') === '#!';
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

function mergeNames(all: readonly CodeNames[]): CodeNames {
  const unresolved = all.find((n) => n.unresolved !== undefined)?.unresolved;
  if (unresolved !== undefined) return { ...NO_NAMES, unresolved };
  return {
    files: all.flatMap((n) => n.files),
    commands: all.flatMap((n) => n.commands),
    dirs: all.flatMap((n) => n.dirs),
    unresolved: undefined,
  };
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
      'value' in v ? canonicalText(v.value, cwd, plain) : '(credential)',
    ]),
  );
  return {
    program: found === undefined ? undefined : fileIdentity(found, '/'),
    programSpelled: programOf(entry),
    script: script.file,
    opaque: script.opaque,
    cwd,
    names: namesOf(script, programOf(entry), found, args, { cwd, env: plain, searchPath }),
    settings: canonicalJson({ args: args.map((a) => canonicalText(a, cwd, plain)), cwd, env }),
    rest: canonicalJson({
      args: scriptArgs(args, script.file, cwd).map((a) => canonicalText(a, cwd, plain)),
      env: Object.fromEntries(Object.entries(env).filter(([k]) => !CODE_SEARCH.has(k))),
    }),
  };
}
