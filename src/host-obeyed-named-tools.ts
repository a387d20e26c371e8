// What the toolchain and environment managers' listed settings name as code to run (class 9,
// host-obeyed-named.ts): mise and asdf, rustup, cargo, bun. Each reader takes the file's text
// and gives the values that are a program, a script, a hook or a PATH entry, each with the
// setting that names it; host-obeyed-named.ts resolves them and keeps those inside the
// workspace. Why each key is read:
// - mise, on entering the directory (`mise activate`), puts each `[env] _.path` first on PATH
//   (a `bin/git` there is the next `git`), runs each `_.source` script, loads each `_.file`
//   into the environment, activates `_.python.venv` (its `bin` first on PATH): every string
//   under `env._` names such a path. Its `[env]` values are exported too: `PATH`,
//   `NODE_OPTIONS` preloads, `LD_PRELOAD`, `BASH_ENV`/`ENV` name code every program run
//   there loads. Its `[hooks]` (`enter`, `cd`, `leave`, `preinstall`, `postinstall`) are
//   shell commands run on their event, the words of which that are paths are held, and a
//   task a hook runs by name (`{ task = "setup" }`) has its `run` and `file` read the same
//   way; other tasks run when you run them (`mise run`), as package.json scripts do, and are
//   not read. A tool version `path:./dir` (mise `[tools]`, asdf `.tool-versions`) runs that
//   directory's programs as the tool.
// - rustup: `[toolchain] path`, the toolchain every cargo and rustc there runs.
// - cargo (`.cargo/config.toml`), run by rust-analyzer on opening the folder: the programs
//   `build.rustc`, `rustc-wrapper`, `rustc-workspace-wrapper`, `rustdoc`, each target's
//   `runner` and `linker`, credential providers, and `paths` (crates built in place of the
//   registry's, their build scripts run).
// - bun (`bunfig.toml`): `preload` and `[test] preload`, modules run before every `bun run`
//   and `bun test`; `[run] shell`.
import { tomlEntries, tomlField, tomlStrings, type TomlEntry } from './host-obeyed-named-toml.js';

/** A value a setting names as code to run, with the setting's name. */
export interface Named {
  readonly value: string;
  readonly key: string;
}

/**
 * The words of a shell command that may be paths (quotes taken off, as the shell joins them:
 * `"$D"/x.sh` is one word): `./x.sh`, `bin/y`, and the value of a `--flag=./z` or `V=./z`.
 */
export function commandWords(command: string): string[] {
  return (command.match(/(?:"[^"]*"|'[^']*'|[^\s;&|()<>"'])+/g) ?? [])
    .map((w) => w.replace(/"([^"]*)"|'([^']*)'/g, (_m, d?: string, s?: string) => d ?? s ?? ''))
    .flatMap((w) => {
      const value = /^[^=/]+=(.+)$/.exec(w)?.[1];
      return value === undefined ? [w] : [value];
    })
    .filter((w) => w !== '.' && w !== '..' && (w.includes('/') || w.startsWith('.')));
}

/**
 * What an exported variable's value names as code a program run with it loads: each entry of
 * `PATH` (the next command found there) and `LD_PRELOAD`, what `NODE_OPTIONS` preloads, the
 * file `BASH_ENV` or `ENV` has every shell source. Any other variable names nothing.
 */
export function envNames(name: string, value: string): string[] {
  if (name === 'PATH' || name === 'LD_PRELOAD') return value.split(/[:\s]/);
  if (name === 'NODE_OPTIONS') return preloads(value);
  if (name === 'BASH_ENV' || name === 'ENV') return [value];
  return [];
}

/** The modules a `node-options` / `NODE_OPTIONS` value preloads or loads settings from. */
export function preloads(options: string): string[] {
  const flags =
    '--require|-r|--import|--loader|--experimental-loader|--env-file|--env-file-if-exists|--experimental-config-file|--openssl-config';
  const words = options.split(/\s+/).filter((w) => w !== '');
  const out: string[] = [];
  for (let i = 0; i < words.length; i += 1) {
    const w = words[i] ?? '';
    const eq = new RegExp(`^(${flags})=(.+)$`).exec(w);
    if (eq?.[2] !== undefined) out.push(eq[2]);
    else if (new RegExp(`^(${flags})$`).test(w)) {
      const next = words[i + 1];
      if (next !== undefined) out.push(next);
      i += 1;
    }
  }
  return out;
}

/** mise's `{{config_root}}` is the directory of the file read here. */
const configRoot = (v: string): string => v.replace(/^\{\{\s*config_root\s*\}\}/, '.');

/** The exported `[env]` variables whose value names code a program run there loads. */
function envVariable(e: TomlEntry): Named[] {
  const name = e.parts[1] ?? '';
  return tomlStrings(e.raw)
    .map(configRoot)
    .flatMap((v) => envNames(name, v))
    .map((value) => ({ value, key: e.key }));
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
  if (top === 'env' && e.parts.length === 2) return envVariable(e);
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
    ['mise-tasks', '.mise-tasks', 'mise/tasks'].map((dir) => ({
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

/** rustup's `rust-toolchain(.toml)`: `[toolchain] path`. */
export function rustToolchain(text: string): Named[] {
  return tomlEntries(text)
    .filter((e) => e.key === 'toolchain.path')
    .flatMap((e) => tomlStrings(e.raw).map((value) => ({ value, key: 'path' })));
}

const CARGO_PROGRAMS = new Set([
  'build.rustc',
  'build.rustc-wrapper',
  'build.rustc-workspace-wrapper',
  'build.rustdoc',
  'registry.credential-provider',
  'registry.global-credential-providers',
]);

/** cargo's `.cargo/config.toml`: the programs it runs, the crates it builds in place. */
export function cargoConfig(text: string): Named[] {
  return tomlEntries(text).flatMap((e): Named[] => {
    const [top] = e.parts;
    const last = e.parts.at(-1) ?? '';
    const command =
      CARGO_PROGRAMS.has(e.key) ||
      ((top === 'target' || top === 'host') && (last === 'runner' || last === 'linker')) ||
      (top === 'registries' && last === 'credential-provider') ||
      top === 'credential-alias';
    if (command)
      return tomlStrings(e.raw).flatMap((v) =>
        commandWords(v).map((value) => ({ value, key: e.key })),
      );
    if (e.key === 'paths') return tomlStrings(e.raw).map((value) => ({ value, key: e.key }));
    return [];
  });
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
