// What editors' project settings name as code to run (class 9, host-obeyed-named.ts): VS Code
// (and Theia, which reads `.theia` as VS Code reads `.vscode`) and Zed. Each file is on the
// list (host-obeyed.ts); the programs it names by path are held here, since the editor starts
// them on opening the folder or on one keystroke, without showing the command. Why each is
// read:
// - `.vscode/settings.json`, `.zed/settings.json`: settings are namespaced by the extension
//   that reads them, so no fixed key list closes them; a setting is read by its name's last
//   part: a program or its path (`git.path`, `python.defaultInterpreterPath`,
//   `rust-analyzer.server.path`, `typescript.tsdk`, `clangd.path`, `*.executablePath`, Zed's
//   `lsp.*.binary.path`, `context_servers.*.command`, `terminal.shell.program`, `node.npm_path`),
//   its arguments (`terminal.integrated.profiles.*.*.args`, Zed's `arguments`), an env file,
//   an environment (`terminal.integrated.env.*`, `*.extraEnv`: `PATH`, `NODE_OPTIONS`).
//   Directories a setting searches or roots at (`extraPaths`, `rootPath`), include and
//   exclude globs, and test settings (the tests are the project's code, run knowingly) are
//   not read: holding them would hold the project's sources.
// - `.vscode/tasks.json`, `.zed/tasks.json`: every task's `command`, `args`, `options.cwd`,
//   `options.env`, `options.shell`, and their per-platform forms: a task runs on opening the
//   folder (`runOptions.runOn: folderOpen`), as a debug session's `preLaunchTask` (by its
//   label, so every task is read), or as the build task on one keystroke.
// - `.vscode/launch.json`: each configuration's debugger and runtime (`runtimeExecutable`,
//   `runtimeArgs`, `python`, `pythonPath`, `miDebuggerPath`, `debugServerPath`,
//   `debuggerPath`), `envFile` and `env`. Its `program` and `args` are not: a launch
//   configuration runs the project's own code, knowingly, as its tests do.
import { z } from 'zod';
import { jsonc, projectDir } from './host-obeyed-named-jsonc.js';
import { argv, environment, file, launch, program } from './host-obeyed-named-launch.js';
import { commandWords, type Named } from './host-obeyed-named-tools.js';

/** A setting's last name part that makes it a program or its path. */
const PROGRAM =
  /^(path|command|cmd|executable|program|binary|interpreter|runtime|shell|tsdk|wrapper|launcher)$|(Path|_path|Executable|Command|CommandLine|Interpreter|Binary|Wrapper|Program|Tools|Shell)$/;
const ARGS = /^(args|arguments)$|(Args|_args|_arguments)$/;
const ENV_FILE = /^env_?[Ff]ile$|(EnvFile|_env_file)$/;
const ENV = /^(env|environment)$|(Env|_env)$/;
/** Settings that search or root at a directory, globs, tests: not programs. */
const NOT_READ =
  /^(root|workspace|cwd|output|out|log|cache|storage|base|project|source|src|dist|temp|tmp|extra)(Path|Dir|Directory|_path|_dir)$|[Ee]xclude|[Ii]nclude|[Ii]gnore|[Ww]atcher|[Tt]est/;

const Obj = z.record(z.string(), z.unknown());
const Strings = z.union([z.string().transform((s) => [s]), z.array(z.string())]);

/** The name parts of a setting reached by `keys` (`a.b` keys split at their dots). */
const partsOf = (keys: readonly string[]): string[] => keys.flatMap((k) => k.split('.'));

/** One setting's value, by the name it is reached by (walked into while it is an object). */
function setting(keys: readonly string[], value: unknown): Named[] {
  const parts = partsOf(keys);
  // A per-platform value is read by the setting's name (`terminal.integrated.shell.linux`).
  const last =
    (/^(linux|osx|windows)$/.test(parts.at(-1) ?? '') ? parts.at(-2) : parts.at(-1)) ?? '';
  const key = keys.join('.');
  if (parts.some((p) => NOT_READ.test(p))) return [];
  const strings = Strings.safeParse(value);
  if (strings.success) {
    if (ARGS.test(last))
      return strings.data.flatMap((a) =>
        commandWords(projectDir(a)).map((v) => ({ value: v, key })),
      );
    if (ENV_FILE.test(last)) return strings.data.map((v) => file(v, key));
    if (PROGRAM.test(last) || parts.includes('alternateTools'))
      return strings.data.flatMap((v) => program(v, key));
    return [];
  }
  const obj = Obj.safeParse(value);
  if (obj.success && ENV.test(last)) return environment(obj.data, key);
  if (obj.success && parts.includes('env')) return environment(obj.data, key);
  if (obj.success) return Object.entries(obj.data).flatMap(([k, v]) => setting([...keys, k], v));
  if (Array.isArray(value)) return value.flatMap((v) => setting(keys, v));
  return [];
}

/** An editor's settings (`.vscode/settings.json`, `.zed/settings.json`), by setting name. */
export function editorSettings(source: string): Named[] {
  const doc = Obj.safeParse(jsonc(source));
  if (!doc.success) return [];
  return Object.entries(doc.data).flatMap(([k, v]) => setting([k], v));
}

const Options = z.looseObject({
  cwd: z.string().optional(),
  env: Obj.optional(),
  shell: z
    .looseObject({ executable: z.string().optional(), args: z.array(z.string()).optional() })
    .optional(),
});
const Task = z.looseObject({
  label: z.string().optional(),
  command: z.unknown().optional(),
  args: z.array(z.unknown()).optional(),
  cwd: z.string().optional(),
  env: Obj.optional(),
  options: Options.optional(),
});

/** One task (or the file's top, or a platform's override of either). */
function task(t: unknown, key: string, inherited?: string): Named[] {
  const parsed = Task.safeParse(t);
  if (!parsed.success) return [];
  const { command, args, options } = parsed.data;
  const cwd = options?.cwd ?? parsed.data.cwd ?? inherited;
  // VS Code's `command` may be `{ value, quoting }`, and a shell task's is a shell line.
  const line = z.union([
    z.string(),
    z.looseObject({ value: z.string() }).transform((c) => c.value),
  ]);
  const c = line.safeParse(command);
  const shell = options?.shell;
  return [
    ...launch(
      {
        command: c.success ? c.data : command,
        args,
        cwd,
        env: { ...parsed.data.env, ...options?.env },
      },
      key,
      false,
    ),
    ...(shell?.executable === undefined ? [] : program(shell.executable, key)),
    ...argv(shell?.args ?? [], key, undefined, false),
    ...['linux', 'osx', 'windows'].flatMap((os) => task(Obj.catch({}).parse(t)[os], key, cwd)),
  ];
}

/** `.vscode/tasks.json`, `.zed/tasks.json` (a bare array of tasks). */
export function tasksJson(source: string): Named[] {
  const doc = jsonc(source);
  const list = z.array(z.unknown()).safeParse(doc);
  if (list.success) return list.data.flatMap((t, i) => task(t, `[${String(i)}]`));
  const tasks = z.array(z.unknown()).catch([]).parse(Obj.catch({}).parse(doc).tasks);
  return [
    ...task(doc, 'command'),
    ...tasks.flatMap((t, i) => {
      const label = z.looseObject({ label: z.string() }).safeParse(t);
      return task(t, `tasks.${label.success ? label.data.label : String(i)}`);
    }),
  ];
}

const LAUNCH_PROGRAMS = [
  'runtimeExecutable',
  'python',
  'pythonPath',
  'miDebuggerPath',
  'debugServerPath',
  'debuggerPath',
];

/** `.vscode/launch.json`: each configuration's debugger, runtime and environment. */
export function launchJson(source: string): Named[] {
  const doc = Obj.catch({}).parse(jsonc(source));
  const configurations = z.array(Obj).catch([]).parse(doc.configurations);
  return configurations.flatMap((c, i) => {
    const key = `configurations.${z.string().catch(String(i)).parse(c.name)}`;
    const cwd = z.string().optional().catch(undefined).parse(c.cwd);
    return [
      ...LAUNCH_PROGRAMS.flatMap((k) => {
        const v = z.string().optional().catch(undefined).parse(c[k]);
        return v === undefined ? [] : launch({ command: v, cwd }, `${key}.${k}`);
      }),
      ...argv(z.array(z.string()).catch([]).parse(c.runtimeArgs), `${key}.runtimeArgs`, cwd),
      ...launch({ envFile: c.envFile, env: c.env }, key),
    ];
  });
}
