// What AI agents' project settings name as code to run (class 9, host-obeyed-named.ts). Each
// file is on the list (host-obeyed.ts) and held by name; the scripts and servers it names by
// path are held here, since the next session of the agent on the host starts them unasked.
// Why each key is read:
// - MCP servers (`.mcp.json` for Claude Code; `.cursor`, `.roo`, `.kilocode`, `.trae`,
//   `.amazonq`, `.kiro/settings`, `.factory`, `.junie/mcp` `mcp.json`; VS Code's
//   `.vscode/mcp.json` under `servers`): each server's `command`, `args`, `cwd`, `envFile`,
//   `env`, started when the agent opens the project.
// - Claude Code (`.claude/settings.json`, `.claude/settings.local.json`): every `hooks`
//   command (run on its event), `statusLine` and `fileSuggestion` commands (run as the
//   session draws), the credential helpers it runs (`apiKeyHelper`, `awsCredentialExport`,
//   `awsAuthRefresh`, `otelHeadersHelper`), `env` (given to every command it runs: `PATH`,
//   `NODE_OPTIONS`), `mcpServers`, and a local plugin marketplace's directory
//   (`extraKnownMarketplaces.*.source.path`), whose plugins' hooks run.
// - Gemini CLI and Qwen Code (`.gemini/settings.json`, `.qwen/settings.json`): `mcpServers`,
//   the tool discovery and call commands (`tools.discoveryCommand`, `tools.callCommand`, the
//   older top-level `toolDiscoveryCommand`, `toolCallCommand`), `mcp.serverCommand` (older
//   `mcpServerCommand`), `hooks`.
// - Cursor's and Windsurf's hooks (`.cursor/hooks.json`, `.windsurf/hooks.json`): every command.
// - opencode (`opencode.json(c)`) and Kilo (`kilo.json(c)`, its fork): `mcp`, `lsp` and
//   `formatter` commands (argv arrays; formatters run on every edit), `plugin` paths.
// - Crush (`crush.json`, `.crush.json`): `lsp` and `mcp` commands.
// - Codex CLI (`.codex/config.toml`): `mcp_servers.*` `command`, `args`, `cwd`, `env`, and
//   `notify`, the program it runs after each turn.
import { z } from 'zod';
import { jsonc } from './host-obeyed-named-jsonc.js';
import {
  environment,
  file,
  hookCommands,
  launch,
  launches,
  shellLine,
} from './host-obeyed-named-launch.js';
import { tomlEntries, tomlField, tomlStrings } from './host-obeyed-named-toml.js';
import type { Named } from './host-obeyed-named-tools.js';

const Obj = z.record(z.string(), z.unknown());
const object = (v: unknown): Record<string, unknown> => Obj.catch({}).parse(v);
const text = (v: unknown): string | undefined => z.string().optional().catch(undefined).parse(v);

/** An MCP configuration: `mcpServers` (most agents), `servers` (VS Code). */
export function mcpJson(source: string): Named[] {
  const doc = object(jsonc(source));
  return [...launches(doc.mcpServers, 'mcpServers'), ...launches(doc.servers, 'servers')];
}

const CLAUDE_HELPERS = [
  'apiKeyHelper',
  'awsCredentialExport',
  'awsAuthRefresh',
  'otelHeadersHelper',
];

/** Claude Code's `.claude/settings.json` and `settings.local.json`. */
export function claudeSettings(source: string): Named[] {
  const doc = object(jsonc(source));
  const marketplaces = Object.entries(object(doc.extraKnownMarketplaces)).flatMap(([name, m]) => {
    const p = text(object(object(m).source).path);
    return p === undefined ? [] : [file(p, `extraKnownMarketplaces.${name}`)];
  });
  return [
    ...hookCommands(doc.hooks, 'hooks'),
    ...hookCommands(doc.statusLine, 'statusLine'),
    ...hookCommands(doc.fileSuggestion, 'fileSuggestion'),
    ...CLAUDE_HELPERS.flatMap((k) => shellLine(text(doc[k]) ?? '', k)),
    ...environment(object(doc.env), 'env'),
    ...launches(doc.mcpServers, 'mcpServers'),
    ...marketplaces,
  ];
}

/** Gemini CLI's and Qwen Code's `settings.json`, in the current (nested) and older forms. */
export function geminiSettings(source: string): Named[] {
  const doc = object(jsonc(source));
  const tools = object(doc.tools);
  const lines: [string, unknown][] = [
    ['tools.discoveryCommand', tools.discoveryCommand],
    ['tools.callCommand', tools.callCommand],
    ['toolDiscoveryCommand', doc.toolDiscoveryCommand],
    ['toolCallCommand', doc.toolCallCommand],
    ['mcp.serverCommand', object(doc.mcp).serverCommand],
    ['mcpServerCommand', doc.mcpServerCommand],
  ];
  return [
    ...launches(doc.mcpServers, 'mcpServers'),
    ...lines.flatMap(([key, v]) => shellLine(text(v) ?? '', key)),
    ...hookCommands(doc.hooks, 'hooks'),
  ];
}

/** A hooks file (`.cursor/hooks.json`, `.windsurf/hooks.json`). */
export function hooksJson(source: string): Named[] {
  return hookCommands(object(jsonc(source)).hooks, 'hooks');
}

/** opencode's and Kilo's configuration. */
export function opencode(source: string): Named[] {
  const doc = object(jsonc(source));
  const plugins = z.array(z.string()).catch([]).parse(doc.plugin);
  return [
    ...launches(doc.mcp, 'mcp'),
    ...launches(doc.lsp, 'lsp'),
    ...launches(doc.formatter, 'formatter'),
    ...plugins.map((value) => ({ value: value.replace(/^file:\/\//, ''), key: 'plugin' })),
  ];
}

/** Crush's configuration. */
export function crush(source: string): Named[] {
  const doc = object(jsonc(source));
  return [...launches(doc.lsp, 'lsp'), ...launches(doc.mcp, 'mcp')];
}

interface CodexServer {
  command?: string;
  cwd?: string;
  args: string[];
  env: Record<string, string>;
}

/** Codex CLI's `config.toml`: each `[mcp_servers.NAME]` gathered into one program, `notify`. */
export function codexConfig(source: string): Named[] {
  const servers = new Map<string, CodexServer>();
  const out: Named[] = [];
  for (const e of tomlEntries(source)) {
    const [top, name, field, variable] = e.parts;
    const strings = tomlStrings(e.raw);
    if (e.key === 'notify') out.push(...launch({ command: strings }, 'notify'));
    if (top !== 'mcp_servers' || name === undefined) continue;
    const spec = servers.get(name) ?? { args: [], env: {} };
    servers.set(name, spec);
    // An inline table (`name = { command = ..., args = [...] }`): its command and cwd, and
    // every other string as an argument.
    if (field === undefined) inline(spec, e.raw);
    else if (field === 'command' || field === 'cwd') spec[field] = strings[0] ?? '';
    else if (field === 'args') spec.args.push(...strings);
    else if (field === 'env' && variable !== undefined) spec.env[variable] = strings[0] ?? '';
    else if (field === 'env') Object.assign(spec.env, Object.fromEntries(envPairs(e.raw)));
  }
  return [...out, ...[...servers].flatMap(([name, spec]) => launch(spec, `mcp_servers.${name}`))];
}

/** A server given as an inline table. */
function inline(spec: CodexServer, raw: string): void {
  const [command] = tomlField(raw, 'command');
  const [cwd] = tomlField(raw, 'cwd');
  if (command !== undefined) spec.command = command;
  if (cwd !== undefined) spec.cwd = cwd;
  spec.args.push(...tomlStrings(raw).filter((v) => v !== command && v !== cwd));
}

/** The `NAME = "value"` pairs of an inline table. */
function envPairs(raw: string): [string, string][] {
  return [...raw.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g)].map(
    (m): [string, string] => [m[1] ?? '', m[2] ?? ''],
  );
}
