// What the toolchain and environment managers' listed settings name as code to run (class 9,
// host-obeyed-named.ts): mise and asdf, bun (rustup and cargo: host-obeyed-named-cargo.ts),
// and the word and environment rules every reader shares. Each reader takes the file's text
// and gives the values that are a program, a script, a hook or a PATH entry, each with the
// setting that names it; host-obeyed-named.ts resolves them and keeps those inside the
// workspace. Why each key is read:
// - mise, on entering the directory (`mise activate`), puts each `[env] _.path` first on PATH
//   (a `bin/git` there is the next `git`), runs each `_.source` script, loads each `_.file`
//   into the environment, activates `_.python.venv` (its `bin` first on PATH): every string
//   under `env._` names such a path. Its other `[env]` values are exported to every program
//   run there, and which variables a program obeys is open-ended (`GIT_PAGER`,
//   `RUSTC_WRAPPER`, `JAVA_TOOL_OPTIONS`): each path word of each value is held (envNames).
//   Its `[hooks]` (`enter`, `cd`, `leave`, `preinstall`, `postinstall`) are
//   shell commands run on their event, the words of which that are paths are held, and a
//   task a hook runs by name (`{ task = "setup" }`) has its `run` and `file` read the same
//   way; other tasks run when you run them (`mise run`), as package.json scripts do, and are
//   not read. A tool version `path:./dir` (mise `[tools]`, asdf `.tool-versions`) runs that
//   directory's programs as the tool.
// - bun (`bunfig.toml`): `preload` and `[test] preload`, modules run before every `bun run`
//   and `bun test`; `[run] shell`.
import path from 'node:path';
import { nodeOptionsArgv, shellWords } from './host-obeyed-named-quoting.js';
import { tomlEntries, tomlField, tomlStrings, type TomlEntry } from './host-obeyed-named-toml.js';

/** A value a setting names as code to run, with the setting's name. */
export interface Named {
  readonly value: string;
  readonly key: string;
  /**
   * A value that may be the directory a program works in (an exported variable's path word):
   * naming the whole workspace, it holds nothing, as an agent's `cwd` does not.
   */
  readonly notWhole?: true;
}

/**
 * The values inside one word that may be paths, the word among them: what follows a flag's
 * `=` or `:` (`--opt=./z`, `-Clinker=tools/ld`, `-javaagent:tools/a.jar`) or an assignment's
 * `=` (`V=./z`, `linker=tools/ld`), followed again (`--codegen=linker=x`); a path before its
 * options (`tools/a.jar=opts`); each entry of a `:` list (`PYTHONPATH`-like values) and of
 * a flag's `,` list (`-Wl,-rpath,tools/lib`). A word split at `:` or `,` stays a candidate too: a file may have either in its name.
 */
function wordValues(word: string): string[] {
  const out = new Set<string>();
  const todo = [word];
  for (let w = todo.pop(); w !== undefined; w = todo.pop()) {
    if (w === '' || out.has(w)) continue;
    const value = /^-[^=:]*?[=:](.+)$/.exec(w)?.[1] ?? /^[^=/:\s-][^=/:]*=(.+)$/.exec(w)?.[1];
    // An option or assignment is its value, not a path itself (as the shell reads `V=./z`).
    if (value !== undefined) {
      todo.push(value);
      continue;
    }
    out.add(w);
    const beforeOptions = /^([^=]*\/[^=]*)=/.exec(w)?.[1];
    if (beforeOptions !== undefined) todo.push(beforeOptions);
    if (w.includes(':')) todo.push(...w.split(':'));
    if (w.startsWith('-') && w.includes(',')) todo.push(...w.split(','));
  }
  return [...out];
}

/**
 * The words of a shell command that may be paths, split and unquoted as the shell does
 * (shellWords: `"$D"/x.sh` is one word, `./my\ hook.sh` one, `$'./x.sh'` is `./x.sh`):
 * `./x.sh`, `bin/y`, and the values inside a word (wordValues). The directory itself (`.`,
 * `./`) and its parent are where a command works, not programs.
 */
export function commandWords(command: string): string[] {
  return shellWords(command)
    .flatMap(wordValues)
    .filter((w) => w.includes('/') || w.startsWith('.'))
    .filter((w) => !['.', '..'].includes(path.posix.normalize(w)));
}

/**
 * What an exported variable's value names as code a program run with it loads, by what the
 * variable is: each entry of `PATH` (the next command found there) and `LD_PRELOAD`, what
 * `NODE_OPTIONS` preloads, the file `BASH_ENV` or `ENV` has every shell source.
 */
export function envCode(name: string, value: string): string[] {
  if (name === 'PATH' || name === 'LD_PRELOAD') return value.split(/[:\s]/);
  if (name === 'NODE_OPTIONS') return preloads(value);
  if (name === 'BASH_ENV' || name === 'ENV') return [value];
  return [];
}

/**
 * What an exported variable names: its code by name (envCode), and, whatever its name, each
 * path word of its value (commandWords). Which variables a host program obeys is open-ended
 * (`GIT_EXTERNAL_DIFF`, `GIT_PAGER`, `GIT_SSH_COMMAND`, `RUSTC_WRAPPER`,
 * `JAVA_TOOL_OPTIONS=-javaagent:…`, `PYTHONPATH`, a tool's own `FOO_PATH`), so a list of
 * names would always miss one: every path inside the workspace a value names is held.
 */
export function envNames(name: string, value: string): string[] {
  return [...envCode(name, value), ...commandWords(value)];
}

/** An exported variable, as a setting: the words of its value may name the workspace whole. */
export function envVariable(name: string, value: string, key: string): Named[] {
  return [
    ...envCode(name, value).map((v) => ({ value: v, key })),
    ...commandWords(value).map((v) => ({ value: v, key, notWhole: true as const })),
  ];
}

/** Node's options whose value is a file it loads, runs or reads settings from. */
const NODE_FILE_OPTIONS = new Set([
  '--require',
  '-r',
  '--import',
  '--loader',
  '--experimental-loader',
  '--env-file',
  '--env-file-if-exists',
  '--experimental-config-file',
  '--openssl-config',
  '--snapshot-blob',
  '--test-reporter',
]);

/**
 * What a `node-options` / `NODE_OPTIONS` value makes Node load, split as Node splits it
 * (nodeOptionsArgv: `--require "./tools/pre.js"` is `--require`, `./tools/pre.js`): the value
 * of each option naming a file (`--require x`, `--require=x`, `-r x`, `-r=x`; `_` for `-` in
 * a name, as Node allows), `node.config.json` for `--experimental-default-config-file`, and,
 * fail closed, every path word of every argument whatever its option.
 */
export function preloads(options: string): string[] {
  const { argv } = nodeOptionsArgv(options);
  const out: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const w = argv[i] ?? '';
    const eq = w.indexOf('=');
    const name = (eq < 0 ? w : w.slice(0, eq)).replace(/_/g, '-');
    if (NODE_FILE_OPTIONS.has(name)) {
      const value = eq < 0 ? argv[(i += 1)] : w.slice(eq + 1);
      if (value !== undefined) out.push(value, ...wordValues(value));
    } else if (name === '--experimental-default-config-file') out.push('./node.config.json');
    else out.push(...wordValues(w));
  }
  return out;
}

/** mise's `{{config_root}}` is the directory of the file read here, wherever it stands. */
const configRoot = (v: string): string => v.replace(/\{\{\s*config_root\s*\}\}/g, '.');

/** An exported `[env]` variable: what it names (envVariable). */
function miseEnv(e: TomlEntry): Named[] {
  const name = e.parts[1] ?? '';
  return tomlStrings(e.raw).flatMap((v) => envVariable(name, configRoot(v), e.key));
}

/** The task names a hook runs: `{ task = "setup" }`, `[[hooks.enter]] task = "setup"`. */
function hookTasks(entries: readonly TomlEntry[]): Set<string> {
  const names = new Set<string>();
  for (const e of entries) {
    if (e.parts[0] !== 'hooks') continue;
    const tasks = e.parts.at(-1) === 'task' ? tomlStrings(e.raw) : tomlField(e.raw, 'task');
    for (const t of tasks) names.add(t);
  }
  return names;
}

/** One entry of a mise configuration: what it names, by the rules above. */
function miseEntry(e: TomlEntry, tasks: ReadonlySet<string>): Named[] {
  const [top, second] = e.parts;
  const key = e.key;
  const paths = (): Named[] => tomlStrings(e.raw).map((v) => ({ value: configRoot(v), key }));
  const words = (): Named[] =>
    tomlStrings(e.raw).flatMap((v) => commandWords(configRoot(v)).map((value) => ({ value, key })));
  if (top === 'env' && second === '_') return paths();
  if (top === 'env' && e.parts.length === 2) return miseEnv(e);
  if (top === 'hooks') return words();
  if (top === 'tasks' && second !== undefined && tasks.has(second)) {
    const field = e.parts[2];
    if (field === 'file') return paths();
    if (field === undefined || field === 'run') return words();
  }
  if (top === 'tools')
    return tomlStrings(e.raw)
      .filter((v) => v.startsWith('path:'))
      .map((v) => ({ value: configRoot(v.slice('path:'.length)), key }));
  return [];
}

/** A mise configuration (`mise.toml` and its siblings). */
export function mise(text: string): Named[] {
  const entries = tomlEntries(text);
  const tasks = hookTasks(entries);
  const fileTasks = [...tasks].flatMap((t) =>
    ['mise-tasks', '.mise-tasks', 'mise/tasks', '.mise/tasks', '.config/mise/tasks'].map((dir) => ({
      value: `./${dir}/${t}`,
      key: 'hooks (task)',
    })),
  );
  return [...entries.flatMap((e) => miseEntry(e, tasks)), ...fileTasks];
}

/** asdf's and mise's `.tool-versions`: a version `path:./dir` runs that directory's programs. */
export function toolVersions(text: string): Named[] {
  return text
    .split(/\r?\n/)
    .flatMap((line) => line.replace(/#.*/, '').trim().split(/\s+/).slice(1))
    .filter((w) => w.startsWith('path:'))
    .map((w) => ({ value: w.slice('path:'.length), key: 'path:' }));
}

/** bun's `bunfig.toml`: the modules it preloads, the shell it runs scripts with. */
export function bunfig(text: string): Named[] {
  return tomlEntries(text).flatMap((e): Named[] => {
    if (e.key === 'preload' || e.key === 'test.preload' || e.key === 'serve.static.plugins')
      return tomlStrings(e.raw).map((value) => ({ value, key: e.key }));
    if (e.key === 'run.shell')
      return tomlStrings(e.raw).flatMap((v) =>
        commandWords(v).map((value) => ({ value, key: e.key })),
      );
    return [];
  });
}
