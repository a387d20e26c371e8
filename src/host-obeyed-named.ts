// Class 9, what a held configuration names as code to run: `.yarnrc.yml` is on the list
// (host-obeyed.ts) because its `yarnPath` is the program every yarn command runs, and that
// program is usually a file the project vendors (`.yarn/releases/yarn-4.5.0.cjs`). Holding
// the setting and not the program it names would let the sandbox rewrite the program
// instead. So, as host-obeyed-git.ts does for git's own settings (core.hooksPath, command
// paths), each path inside the workspace that a listed configuration at its top (or in a
// directory above it) names as code its tool runs is held beside the names: an apply writes
// it only when the operator names it, and an rw run that changes it says so (watched, not
// mounted read-only: host-obeyed-mounts.ts says why).
//
// Read from the host workspace as the tool reads it, with no tool run: the files are small
// text, parsed here; a file that does not parse names nothing (the tool refuses it too).
// Each value is unquoted and split as its tool does (host-obeyed-named-quoting.ts: npm's ini,
// Node's NODE_OPTIONS, the shell; host-obeyed-named-toml.ts: TOML strings), so a spelling the
// tool accepts cannot name a file cfh does not hold; a value that cannot be read so names
// every word it could be (fail closed).
// The rule for what is read: every key of a listed configuration whose value can be a
// program, a script, a module it loads, a hook or a PATH entry. The readers, and why each
// key is read, are by family: host-obeyed-named-js.ts (yarn, npm, pnpm),
// host-obeyed-named-tools.ts (mise, asdf, bun), host-obeyed-named-cargo.ts (rustup, cargo),
// host-obeyed-named-agents.ts
// (MCP servers, Claude Code, Gemini CLI, Qwen Code, opencode, Crush, Codex CLI hooks and
// helpers) and host-obeyed-named-editors.ts (VS Code, Zed settings, tasks and launch).
//
// An agent or editor starts what it names in the directory it was opened in, the workspace
// (Claude Code runs a hook of `~/.claude/settings.json` in the project), so what their
// settings name is read against that directory as well as against the file's; and a value
// naming that whole directory (a task's `cwd`, an MCP filesystem server's root) is where the
// program works, not a program: holding it would hold every change. So it is for a path
// word of an exported variable's value (`PROJECT_ROOT={{config_root}}`), wherever read.
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import path from 'node:path';
import type { GitHeldPath } from './host-obeyed-git.js';
import {
  claudeSettings,
  codexConfig,
  crush,
  geminiSettings,
  hooksJson,
  mcpJson,
  opencode,
} from './host-obeyed-named-agents.js';
import { editorSettings, launchJson, tasksJson } from './host-obeyed-named-editors.js';
import { npmrc, pnpmWorkspace, yarnBerry, yarnClassic } from './host-obeyed-named-js.js';
import { cargoConfig, rustToolchain } from './host-obeyed-named-cargo.js';
import { bunfig, mise, toolVersions, type Named } from './host-obeyed-named-tools.js';

/** A configuration past this is not one a person wrote; it names nothing. */
const CONFIG_MAX_BYTES = 256 * 1024;

/** A path a held configuration names as code its tool runs, relative to the workspace. */
export type NamedHeldPath = GitHeldPath;

interface Setting {
  /** The tool that obeys it. */
  readonly tool: string;
  /** The configuration file's path, read at the workspace top and above it. */
  readonly file: string;
  /** The values it names as programs, each with the setting's name. */
  readonly read: (text: string) => readonly Named[];
  /** An editor's or agent's: read against the workspace too, never naming it whole. */
  readonly agent?: true;
}

/**
 * Every configuration file mise reads in a directory, in its own list (jdx/mise
 * src/config/mod.rs, LOCAL_CONFIG_FILENAMES and DEFAULT_CONFIG_FILENAMES): a `*` stands for
 * a MISE_ENV (`mise.production.toml`), `local`, or both, and for each `conf.d` file.
 */
const MISE_FILES = [
  ...['mise', '.mise', '.rtx'].flatMap((b) => [`${b}.toml`, `${b}.*.toml`]),
  ...[
    'mise/config',
    '.mise/config',
    '.config/mise/config',
    '.config/mise/mise',
    '.config/mise',
  ].flatMap((b) => [`${b}.toml`, `${b}.*.toml`]),
  '.config/mise/conf.d/*.toml',
];

const agents = (tool: string, read: Setting['read'], files: readonly string[]): Setting[] =>
  files.map((file) => ({ tool, file, read, agent: true }));

const SETTINGS: readonly Setting[] = [
  { tool: 'yarn', file: '.yarnrc.yml', read: yarnBerry },
  { tool: 'yarn', file: '.yarnrc', read: yarnClassic },
  { tool: 'npm', file: '.npmrc', read: npmrc },
  { tool: 'pnpm', file: 'pnpm-workspace.yaml', read: pnpmWorkspace },
  { tool: 'rustup', file: 'rust-toolchain.toml', read: rustToolchain },
  { tool: 'rustup', file: 'rust-toolchain', read: rustToolchain },
  { tool: 'cargo', file: '.cargo/config.toml', read: cargoConfig },
  { tool: 'cargo', file: '.cargo/config', read: cargoConfig },
  { tool: 'bun', file: 'bunfig.toml', read: bunfig },
  { tool: 'asdf, mise', file: '.tool-versions', read: toolVersions },
  ...MISE_FILES.map((file) => ({ tool: 'mise', file, read: mise })),
  ...agents('Claude Code', mcpJson, ['.mcp.json']),
  ...agents('Claude Code', claudeSettings, [
    '.claude/settings.json',
    '.claude/settings.local.json',
  ]),
  ...agents('Gemini CLI', geminiSettings, ['.gemini/settings.json']),
  ...agents('Qwen Code', geminiSettings, ['.qwen/settings.json']),
  ...agents('Cursor', mcpJson, ['.cursor/mcp.json']),
  ...agents('Cursor', hooksJson, ['.cursor/hooks.json']),
  ...agents('Windsurf', hooksJson, ['.windsurf/hooks.json']),
  ...agents('Kilo Code', mcpJson, ['.kilocode/mcp.json']),
  ...agents('Roo Code', mcpJson, ['.roo/mcp.json']),
  ...agents('Trae', mcpJson, ['.trae/mcp.json']),
  ...agents('Amazon Q', mcpJson, ['.amazonq/mcp.json']),
  ...agents('Kiro', mcpJson, ['.kiro/settings/mcp.json']),
  ...agents('Junie', mcpJson, ['.junie/mcp/mcp.json']),
  ...agents('Factory Droid', mcpJson, ['.factory/mcp.json']),
  ...agents('Factory Droid', claudeSettings, ['.factory/settings.json']),
  ...agents('Auggie', claudeSettings, ['.augment/settings.json']),
  ...agents('opencode', opencode, [
    'opencode.json',
    'opencode.jsonc',
    '.opencode/opencode.json',
    '.opencode/opencode.jsonc',
  ]),
  ...agents('Kilo Code', opencode, [
    'kilo.json',
    'kilo.jsonc',
    '.kilo/kilo.json',
    '.kilo/kilo.jsonc',
  ]),
  ...agents('Crush', crush, ['crush.json', '.crush.json']),
  ...agents('Codex CLI', codexConfig, ['.codex/config.toml']),
  ...agents('VS Code', editorSettings, ['.vscode/settings.json']),
  ...agents('VS Code', tasksJson, ['.vscode/tasks.json']),
  ...agents('VS Code', launchJson, ['.vscode/launch.json']),
  ...agents('VS Code', mcpJson, ['.vscode/mcp.json']),
  ...agents('Eclipse Theia', editorSettings, ['.theia/settings.json']),
  ...agents('Eclipse Theia', tasksJson, ['.theia/tasks.json']),
  ...agents('Eclipse Theia', launchJson, ['.theia/launch.json']),
  ...agents('Zed', editorSettings, ['.zed/settings.json']),
  ...agents('Zed', tasksJson, ['.zed/tasks.json']),
];

/** The file's text, when it is a regular file of a sane size; opened so a FIFO cannot block. */
function readSmall(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const s = fstatSync(fd);
    if (!s.isFile() || s.size > CONFIG_MAX_BYTES) return undefined;
    const buffer = Buffer.alloc(CONFIG_MAX_BYTES);
    return buffer.subarray(0, readSync(fd, buffer, 0, CONFIG_MAX_BYTES, 0)).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * The paths inside `root` that a listed configuration names as code its tool runs, relative
 * to `root` and `/`-separated (`.yarn/releases/yarn-4.5.0.cjs`): the configurations at its
 * top and in each directory above it (yarn and npm read those too, a home's among them),
 * each value resolved against the directory of the file that names it. A value that is a
 * bare command (`script-shell=bash`) or leads outside `root` is not the workspace's to hold.
 */
export function namedHeldPaths(root: string): NamedHeldPath[] {
  const top = path.resolve(root);
  const held = new Map<string, string>();
  for (let dir = top; ; dir = path.dirname(dir)) {
    for (const [p, why] of namedIn(dir, top)) if (!held.has(p)) held.set(p, why);
    if (path.dirname(dir) === dir) break;
  }
  return [...held].map(([p, why]) => ({ path: p, why })).sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** The files a setting's name finds in `dir`: itself, or those its `*` matches (at most 64). */
function filesOf(dir: string, file: string): string[] {
  const base = path.posix.basename(file);
  if (!base.includes('*')) return [file];
  const sub = path.posix.dirname(file);
  const re = new RegExp(
    `^${base
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.+')}$`,
  );
  try {
    return readdirSync(path.join(dir, sub))
      .filter((n) => re.test(n))
      .sort()
      .slice(0, 64)
      .map((n) => (sub === '.' ? n : `${sub}/${n}`));
  } catch {
    return [];
  }
}

function namedIn(dir: string, root: string): [string, string][] {
  const out: [string, string][] = [];
  for (const setting of SETTINGS) {
    for (const file of filesOf(dir, setting.file))
      out.push(...namedBy({ ...setting, file }, dir, root));
  }
  return out;
}

function namedBy(s: Setting, dir: string, root: string): [string, string][] {
  const out: [string, string][] = [];
  const text = readSmall(path.join(dir, s.file));
  if (text === undefined) return out;
  const why = (key: string): string =>
    `${s.tool} (${key} in ${dir === root ? s.file : path.join(dir, s.file)})`;
  const bases = s.agent === true && dir !== root ? [dir, root] : [dir];
  for (const { value, key, notWhole } of s.read(text)) {
    // A bare word is a command found on PATH; a path has a separator or starts with `.`.
    // A home (`~/bin`), a variable (`$HOME/bin`) or a URL is not the workspace's.
    if (value === '' || (!value.includes('/') && !value.startsWith('.'))) continue;
    if (value.startsWith('~') || value.includes('$') || value.includes('://')) continue;
    for (const base of bases) {
      const rel = path.relative(root, path.resolve(base, value));
      if (rel.startsWith('..') || path.isAbsolute(rel)) continue;
      if (rel === '' && (s.agent === true || notWhole === true)) continue;
      out.push([rel === '' ? '' : rel.split(path.sep).join('/'), why(key)]);
    }
  }
  return out;
}
