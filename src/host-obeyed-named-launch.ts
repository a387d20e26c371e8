// What a program an editor or agent starts names (class 9, host-obeyed-named.ts): the shapes
// the JSON and TOML readers of host-obeyed-named-agents.ts and host-obeyed-named-editors.ts
// share. An MCP server, a language server, a task are each a program with arguments, a
// working directory, an environment and an env file; a hook is a shell line. Each value is
// taken with the project's directory variables made `.` (host-obeyed-named-jsonc.ts).
import path from 'node:path';
import { z } from 'zod';
import { projectDir } from './host-obeyed-named-jsonc.js';
import { commandWords, envNames, type Named } from './host-obeyed-named-tools.js';

const at = (key: string, values: readonly string[]): Named[] =>
  values.map((value) => ({ value, key }));

/** A shell line (a hook's `command`, `apiKeyHelper`): each word of it that is a path. */
export function shellLine(line: string, key: string): Named[] {
  return at(key, commandWords(projectDir(line)));
}

/**
 * A program started without a shell (an MCP server's `command`): the value itself, and its
 * path words too, since some tools split a `command` with spaces into argv (Zed, Crush).
 */
export function program(value: string, key: string): Named[] {
  const v = projectDir(value);
  return [{ value: v, key }, ...at(key, commandWords(v))];
}

/** A file or directory named as such (a `cwd`, an `envFile`): a bare name is one here. */
export function file(value: string, key: string): Named {
  const v = projectDir(value);
  return { value: v.includes('/') || v.startsWith('.') ? v : `./${v}`, key };
}

/** Whether a value is the directory it is resolved against (`.`, `./`, `${workspaceFolder}`). */
const isHere = (v: string): boolean => path.posix.normalize(v.replace(/\\/g, '/')) === '.';

/**
 * The arguments of a program, each a file the program may load (`server.js`, `./x.py`,
 * `--config=./c.json`) or a shell line it runs (`bash -c "./x.sh"`): a bare word is taken for
 * a file in the working directory (a server's `node server.js`) unless `bare` is false (a
 * task's `make build` runs the project's own build), a flag is not. With a
 * working directory (`cwd`), each is read against it as well as against the base. The
 * directory itself (`.`, an MCP filesystem server's `${workspaceFolder}`) is where the program
 * works, not a program: it is not named.
 */
export function argv(args: readonly string[], key: string, cwd?: string, bare = true): Named[] {
  const out: Named[] = [];
  for (const raw of args) {
    const arg = projectDir(raw);
    if (isHere(arg)) continue;
    const words = [...(arg.startsWith('-') ? [] : [arg]), ...commandWords(arg)];
    for (const w of words) {
      const isPath = w.includes('/') || w.startsWith('.');
      if (!isPath && !bare) continue;
      const file = isPath ? w : `./${w}`;
      out.push({ value: file, key });
      if (cwd !== undefined && !path.posix.isAbsolute(file))
        out.push({ value: path.posix.join(cwd, file), key });
    }
  }
  return out;
}

/** An environment given to a program: what each variable names as code (envNames). */
export function environment(env: Readonly<Record<string, unknown>>, key: string): Named[] {
  return Object.entries(env).flatMap(([name, v]) =>
    typeof v === 'string' ? at(key, envNames(name, projectDir(v))) : [],
  );
}

const Strings = z.union([z.string(), z.array(z.string())]);
/** An argument: a string, or VS Code's `{ value, quoting }`. */
const Arg = z.union([z.string(), z.looseObject({ value: z.string() }).transform((a) => a.value)]);

/**
 * A program an editor or agent starts, in the field names they share: `command` (a string, or
 * opencode's argv array), `args` (Zed's `arguments`), `cwd`, `envFile` (a file of variables
 * loaded into its environment), `env` (opencode's `environment`). Zed nests `command` as an
 * object (`{ path, args, env }`).
 */
const Launch = z.looseObject({
  command: z.union([Strings, z.looseObject({})]).optional(),
  path: z.string().optional(),
  args: z.array(z.unknown()).optional(),
  arguments: z.array(z.unknown()).optional(),
  cwd: z.string().optional(),
  envFile: z.string().optional(),
  env: z.record(z.string(), z.unknown()).optional(),
  environment: z.record(z.string(), z.unknown()).optional(),
});

/** Each workspace path a program an editor or agent starts names: the program, its arguments
 * (read against its `cwd` too), the `cwd` unless it is the base, its env file, its environment. */
export function launch(spec: unknown, key: string, bare = true): Named[] {
  const parsed = Launch.safeParse(spec);
  if (!parsed.success) return [];
  const s = parsed.data;
  if (typeof s.command === 'object' && !Array.isArray(s.command))
    return launch(s.command, key, bare);
  const cwd = s.cwd === undefined ? undefined : projectDir(s.cwd);
  const [first, ...rest] = typeof s.command === 'string' ? [s.command] : (s.command ?? []);
  const args = [...rest, ...(s.args ?? []), ...(s.arguments ?? [])].flatMap((a) => {
    const arg = Arg.safeParse(a);
    return arg.success ? [arg.data] : [];
  });
  return [
    ...[first, s.path].flatMap((p) => (p === undefined ? [] : program(p, key))),
    ...(first !== undefined && cwd !== undefined && !isHere(cwd)
      ? program(first, key)
          .filter((n) => n.value.includes('/') || n.value.startsWith('.'))
          .map((n) => ({ ...n, value: path.posix.join(cwd, n.value) }))
      : []),
    ...argv(args, key, cwd, bare),
    ...(cwd === undefined || isHere(cwd) ? [] : [file(cwd, key)]),
    ...(s.envFile === undefined ? [] : [file(s.envFile, key)]),
    ...environment({ ...s.env, ...s.environment }, key),
  ];
}

/** Each program a record of them names (`mcpServers`, `lsp`, `context_servers`), by name. */
export function launches(record: unknown, key: string): Named[] {
  const parsed = z.record(z.string(), z.unknown()).safeParse(record);
  if (!parsed.success) return [];
  return Object.entries(parsed.data).flatMap(([name, spec]) => launch(spec, `${key}.${name}`));
}

/**
 * Every shell line under a hooks tree, whatever its events and nesting are called: Claude
 * Code's and Gemini CLI's `hooks.<event>[].hooks[].command`, Cursor's and Windsurf's
 * `hooks.<event>[].command`, Copilot's `bash`/`powershell`. A hook runs on its event without
 * being asked for, so every command in the tree is read.
 */
export function hookCommands(tree: unknown, key: string): Named[] {
  if (typeof tree === 'string') return shellLine(tree, key);
  if (Array.isArray(tree)) return tree.flatMap((t) => hookCommands(t, key));
  const parsed = z.record(z.string(), z.unknown()).safeParse(tree);
  if (!parsed.success) return [];
  return Object.entries(parsed.data).flatMap(([k, v]) => {
    if (k === 'command' || k === 'bash' || k === 'powershell' || k === 'script')
      return typeof v === 'string' ? shellLine(v, key) : launch({ command: v }, key);
    if (k === 'cwd' && typeof v === 'string' && !isHere(projectDir(v))) return [file(v, key)];
    return typeof v === 'object' ? hookCommands(v, key) : [];
  });
}
