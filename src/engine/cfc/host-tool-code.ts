// What a host tool entry's code may run besides itself (AH-CFC-2/10, AH-CFC-12): "one host
// tool state, one clearance" (host-tool-sharing.ts) must see `sh -c 'exec python3 -m notes'`,
// `sh -c 'cd /opt/t && ./notes'` or a wrapper script `exec python3 notes.py` beside an entry
// that runs notes.py as the same state, whatever spelling reaches it. So code cfh can read
// (inline code; the script file an interpreter is handed, or a `#!` program, read in full)
// is judged as its interpreter would resolve it: every word of it is looked up as a file or
// directory against the entry's cwd, with node's extensions and a directory's package entry,
// as a python module (`a.b`: a/b.py, a/b/__main__.py, a/b/__init__.py against the cwd and
// PYTHONPATH, `-mMOD` too) and, a bare name, as a command on the tool's PATH. Shell code cfh
// cannot resolve so (a variable or command substitution other than the positional
// parameters, a glob, `cd`/`pushd`/`eval`/`source`/`.`, an assignment to a search path) and
// inline code of another language that changes directory or evaluates text may run any
// code: `unresolved`, and the caller fails closed.
import { readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { findProgram } from '../../tools/host/host-plan.js';
import {
  fileIdentity,
  isDirectoryAt,
  PLACEHOLDER,
  type CodeText,
  type FileIdentity,
} from './host-tool-files.js';
import { nodeEntry } from './host-tool-interpreters.js';
import { expandSpelling } from './host-tool-spelling.js';

export type { CodeText };

/** What the words of an entry's code name, by identity. */
export interface CodeNames {
  /** Files named by a path or as a module (its own files: scripts, stores). */
  readonly files: readonly FileIdentity[];
  /** Programs named as a command found on the tool's PATH. */
  readonly commands: readonly FileIdentity[];
  /** Directories named (real paths), other than the cwd, one above it, or `/`. */
  readonly dirs: readonly string[];
  /** Why cfh cannot tell what the code runs; then it may run any code. */
  readonly unresolved: string | undefined;
}

export const NO_NAMES: CodeNames = { files: [], commands: [], dirs: [], unresolved: undefined };

/** More than this of one script is not read: code cfh has not read may run anything. */
const MAX_CODE_BYTES = 4 * 1024 * 1024;
/** Distinct words looked up, at most (each costs a few stats). */
const MAX_WORDS = 20_000;

/** A `#!` line's first word's name, when a file starts with one. */
export function shebangOf(text: string): string | undefined {
  if (!text.startsWith('#!')) return undefined;
  const line = text.slice(2, text.indexOf('\n') >>> 0).trim();
  const words = line.split(/\s+/);
  const first = path.basename(words[0] ?? '');
  return first === 'env' ? words.find((w, i) => i > 0 && !w.startsWith('-')) : first;
}

export const SHELLS = /^(sh|bash|dash|zsh|ksh|mksh|ash)$/;

/** A script file's text, or why it cannot be read (too large, unreadable). */
export function readCode(real: string, shell: boolean): CodeText | { unresolved: string } {
  try {
    if (statSync(real).size > MAX_CODE_BYTES)
      return { unresolved: `its code '${real}' is too large for cfh to read` };
    const text = readFileSync(real, 'utf8');
    const bang = shebangOf(text);
    return { text, shell: shell || (bang !== undefined && SHELLS.test(bang)) };
  } catch {
    return { unresolved: `cfh cannot read its code '${real}'` };
  }
}

/** Special and positional parameters: the entry's own arguments, not code's choice. */
const SPECIAL = /\$(?:[0-9@*#?!$-])/g;
/** Shell constructs whose meaning cfh does not compute. */
const SHELL_DYNAMIC: readonly [RegExp, string][] = [
  [/\$[A-Za-z_{(]/, 'a variable or a command substitution'],
  [/`/, 'a command substitution'],
  [
    /(^|[\s;&|(])(cd|pushd|popd|eval|source|\.|alias|hash|builtin|enable)(?=$|[\s;&|)])/m,
    '`cd`, `eval`, `source` or the like',
  ],
  [
    /(^|[\s;&|(])(PATH|CDPATH|HOME|PYTHONPATH|NODE_PATH|NODE_OPTIONS|PERL5LIB|RUBYLIB|ENV|BASH_ENV|PYTHONSTARTUP)=/m,
    'an assignment to a search path',
  ],
  [/(^|[^\\])[*?]|\[[^\]\s]+\]/, 'a glob'],
];
/** Other languages' inline code: a change of directory, or text evaluated as code. */
const OTHER_DYNAMIC =
  /\b(chdir|eval|exec|__import__|import_module|execfile|compile|Function|vm\.run\w*|process\.chdir|dlopen|require\s*\(\s*[^'"\s)])\b/;

function dynamic(code: CodeText, inline: boolean): string | undefined {
  if (code.shell) {
    const text = code.text.replace(/^#!.*$/m, '').replace(SPECIAL, '');
    for (const [re, what] of SHELL_DYNAMIC) if (re.test(text)) return what;
    return undefined;
  }
  if (!inline) return undefined;
  const m = OTHER_DYNAMIC.exec(code.text);
  return m === null ? undefined : `'${m[0]}'`;
}

/** The words of code or of arguments: split where a shell or a language's syntax splits. */
function wordsOf(text: string): string[] {
  const out = new Set<string>();
  for (const w of text.replace(/^#!.*$/m, '').split(/[\s'"`;&|()<>,=${}]+/)) {
    if (w === '' || w.length > 4096) continue;
    out.add(w);
    if (/^-m[A-Za-z_]/.test(w)) out.add(w.slice(2));
    if (out.size >= MAX_WORDS) break;
  }
  return [...out];
}

interface Where {
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly searchPath: string | undefined;
}

/** The python module `word` as `python -m`/`import` finds it, against the cwd and PYTHONPATH. */
function pythonModule(word: string, at: Where): FileIdentity[] {
  if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(word)) return [];
  const rel = word
    .split('.')
    .filter((p) => p !== '')
    .join('/');
  const bases = [at.cwd, ...(at.env.PYTHONPATH ?? '').split(':').filter((b) => b !== '')];
  return bases.flatMap((base) =>
    [`${rel}.py`, `${rel}/__main__.py`, `${rel}/__init__.py`].flatMap((c) => {
      const f = fileIdentity(path.posix.join(base, c), at.cwd);
      return f === undefined ? [] : [{ ...f, spelled: word }];
    }),
  );
}

function realOf(spelled: string, cwd: string): string | undefined {
  try {
    return realpathSync(path.resolve(cwd, spelled));
  } catch {
    return undefined;
  }
}

/** A directory a word names that may hold code: not the cwd, not one above it, not `/`. */
function namedDir(word: string, cwd: string): string | undefined {
  if (!isDirectoryAt(word, cwd)) return undefined;
  const real = realOf(word, cwd);
  if (real === undefined || real === '/' || cwd === real || cwd.startsWith(`${real}/`))
    return undefined;
  return real;
}

function commandOf(word: string, at: Where): FileIdentity | undefined {
  if (!/^[A-Za-z0-9._+-]+$/.test(word) || word.startsWith('-')) return undefined;
  const paths = [at.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', at.searchPath ?? ''].join(':');
  const found = findProgram(word, at.cwd, paths);
  const file = found === undefined ? undefined : fileIdentity(found, '/');
  return file === undefined ? undefined : { ...file, spelled: word };
}

/** What the words of `code` (or of a wrapper's `args`) name, as its interpreter finds them. */
export function codeNames(code: CodeText, inline: boolean, at: Where): CodeNames {
  const why = dynamic(code, inline);
  if (why !== undefined)
    return { ...NO_NAMES, unresolved: `its code has ${why}, which cfh does not resolve` };
  const files = new Map<string, FileIdentity>();
  const commands = new Map<string, FileIdentity>();
  const dirs = new Set<string>();
  for (const raw of wordsOf(code.text)) {
    if (PLACEHOLDER.test(raw)) continue;
    const expanded = expandSpelling(raw, at.env);
    if ('unresolved' in expanded)
      return { ...NO_NAMES, unresolved: `its code names ${expanded.unresolved}` };
    const word = expanded.text;
    for (const f of [nodeEntry(word, at.cwd, 2), ...pythonModule(word, at)])
      if (f !== undefined) files.set(f.id, f);
    const dir = namedDir(word, at.cwd);
    if (dir !== undefined) dirs.add(dir);
    const command = commandOf(word, at);
    if (command !== undefined) commands.set(command.id, command);
  }
  return {
    files: [...files.values()],
    commands: [...commands.values()],
    dirs: [...dirs],
    unresolved: undefined,
  };
}
