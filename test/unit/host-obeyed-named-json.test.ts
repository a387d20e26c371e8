// Class 9, what an editor's or agent's held settings name as code to run, by format and key
// family (src/host-obeyed-named-agents.ts, src/host-obeyed-named-editors.ts and their shared
// src/host-obeyed-named-launch.ts, src/host-obeyed-named-jsonc.ts): the scripts and servers a
// `.mcp.json`, a Claude Code hook, a VS Code task name by path are held beside the file, read
// from real files in a temp workspace (comments and trailing commas as the tools take them).
import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { namedHeldPaths } from '../../src/host-obeyed-named.js';
import { jsonc } from '../../src/host-obeyed-named-jsonc.js';
import { makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;
let ws = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-obeyed-json-'));
  ws = path.join(tmp, 'ws');
  await mkdir(ws);
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

const put = async (rel: string, text: string): Promise<void> => {
  await mkdir(path.dirname(path.join(ws, rel)), { recursive: true });
  await writeFile(path.join(ws, rel), text);
};
const held = (): string[] => namedHeldPaths(ws).map((p) => p.path);

describe('class 9: the JSON the editors and agents write', () => {
  it('takes comments and trailing commas, keeps // and ,] inside strings', () => {
    expect(
      jsonc('{\n  // a comment\n  "a": "http://x/,]", /* another */\n  "b": [1, 2,],\n}\n'),
    ).toEqual({ a: 'http://x/,]', b: [1, 2] });
    expect(jsonc('{ "a": ')).toBeUndefined();
  });
});

describe('class 9: MCP servers an agent starts (command, args, cwd, envFile, env)', () => {
  it('.mcp.json: the program, its script arguments, read against its cwd too', async () => {
    await put(
      '.mcp.json',
      JSON.stringify({
        mcpServers: {
          x: { command: './tools/mcp.sh', args: ['./tools/server.js', '--port=3'] },
          y: { command: 'node', args: ['server.js', '--config=./y.json'], cwd: 'srv' },
          z: { command: 'npx', args: ['-y', '@scope/pkg'], envFile: './.env.mcp' },
          w: { command: 'uv', args: ['${workspaceFolder}'], env: { PATH: './bin:/usr/bin' } },
          u: { type: 'http', url: 'http://127.0.0.1:4873/mcp' },
        },
      }),
    );
    expect(held()).toEqual([
      '.env.mcp',
      '@scope/pkg',
      'bin',
      'bin:/usr/bin',
      'server.js',
      'srv',
      'srv/server.js',
      'srv/y.json',
      'tools/mcp.sh',
      'tools/server.js',
      'y.json',
    ]);
  });

  it('.cursor, .roo, .kilocode mcp.json (mcpServers), .vscode/mcp.json (servers), JSONC', async () => {
    await put('.cursor/mcp.json', '{"mcpServers": {"c": {"command": "./c.sh",},}, // x\n}');
    await put('.roo/mcp.json', '{"mcpServers": {"r": {"command": "bash", "args": ["r/run.sh"]}}}');
    await put('.kilocode/mcp.json', '{"mcpServers": {"k": {"command": "./k/bin"}}}');
    await put(
      '.vscode/mcp.json',
      '{"inputs": [], "servers": {"v": {"command": "${workspaceFolder}/v/srv", "args": []}}}',
    );
    expect(held()).toEqual(['c.sh', 'k/bin', 'r/run.sh', 'v/srv']);
  });
});

describe('class 9: Claude Code, Gemini CLI, Qwen Code settings', () => {
  it('.claude/settings.json: every hook command, statusLine, helpers, env, marketplaces', async () => {
    await put(
      '.claude/settings.json',
      JSON.stringify({
        hooks: {
          PreToolUse: [
            {
              matcher: 'Write|Edit',
              hooks: [{ type: 'command', command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/pre.sh' }],
            },
          ],
          Stop: [{ hooks: [{ type: 'command', command: 'python3 scripts/stop.py --quiet' }] }],
        },
        statusLine: { type: 'command', command: './tools/status.sh' },
        apiKeyHelper: 'sh ./tools/key.sh',
        awsCredentialExport: './tools/aws.sh',
        env: { NODE_OPTIONS: '--require ./tools/pre.cjs', GIT_PAGER: './tools/pager' },
        extraKnownMarketplaces: { local: { source: { source: 'directory', path: './plugins' } } },
      }),
    );
    await put(
      '.claude/settings.local.json',
      '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "${CLAUDE_PROJECT_DIR}/local.sh"}]}]}}',
    );
    expect(held()).toEqual([
      '.claude/hooks/pre.sh',
      'local.sh',
      'plugins',
      'scripts/stop.py',
      'tools/aws.sh',
      'tools/key.sh',
      'tools/pager',
      'tools/pre.cjs',
      'tools/status.sh',
    ]);
  });

  it('.gemini and .qwen settings.json: mcpServers, discovery and call commands, hooks', async () => {
    await put(
      '.gemini/settings.json',
      JSON.stringify({
        mcpServers: { g: { command: 'python', args: ['g/server.py'], cwd: './g' } },
        tools: { discoveryCommand: './bin/discover', callCommand: 'bin/call --json' },
        hooks: {
          BeforeTool: [{ hooks: [{ type: 'command', command: '$GEMINI_PROJECT_DIR/h.sh' }] }],
        },
      }),
    );
    await put(
      '.qwen/settings.json',
      '{"toolDiscoveryCommand": "./q/discover", "toolCallCommand": "./q/call", "mcpServerCommand": "./q/mcp"}',
    );
    expect(held()).toEqual([
      'bin/call',
      'bin/discover',
      'g',
      'g/g/server.py',
      'g/server.py',
      'h.sh',
      'q/call',
      'q/discover',
      'q/mcp',
    ]);
  });

  it('Cursor and Windsurf hooks.json: every command', async () => {
    await put(
      '.cursor/hooks.json',
      '{"version": 1, "hooks": {"afterFileEdit": [{"command": "./hooks/fmt.sh"}]}}',
    );
    await put(
      '.windsurf/hooks.json',
      '{"hooks": {"pre_run_command": [{"command": "bash w/pre.sh"}]}}',
    );
    expect(held()).toEqual(['hooks/fmt.sh', 'w/pre.sh']);
  });
});

describe('class 9: opencode, Crush, Codex CLI', () => {
  it('opencode.json: mcp, lsp and formatter argv arrays, plugin paths', async () => {
    await put(
      'opencode.json',
      JSON.stringify({
        mcp: {
          o: { type: 'local', command: ['./o/mcp', 'o/arg.js'], environment: { PATH: 'o/bin' } },
        },
        lsp: { l: { command: ['./o/lsp'] } },
        formatter: { f: { command: ['bun', './o/fmt.ts', '$FILE'] } },
        plugin: ['opencode-foo', './o/plugin.ts'],
      }),
    );
    expect(held()).toEqual(['o/arg.js', 'o/bin', 'o/fmt.ts', 'o/lsp', 'o/mcp', 'o/plugin.ts']);
  });

  it('crush.json: lsp and mcp commands', async () => {
    await put(
      'crush.json',
      '{"lsp": {"go": {"command": "./c/gopls", "args": []}}, "mcp": {"m": {"type": "stdio", "command": "c/mcp"}}}',
    );
    expect(held()).toEqual(['c/gopls', 'c/mcp']);
  });

  it('.codex/config.toml: mcp_servers command, args, cwd, env tables and inline, notify', async () => {
    await put(
      '.codex/config.toml',
      [
        'notify = ["python3", "./codex/notify.py"]',
        '[mcp_servers.a]',
        'command = "./codex/a"',
        'args = ["codex/a.js"]',
        '[mcp_servers.a.env]',
        'NODE_OPTIONS = "--import ./codex/pre.mjs"',
        '[mcp_servers]',
        'b = { command = "node", args = ["./codex/b.js"] }',
        '',
      ].join('\n'),
    );
    expect(held()).toEqual([
      'codex/a',
      'codex/a.js',
      'codex/b.js',
      'codex/notify.py',
      'codex/pre.mjs',
    ]);
  });
});

describe('class 9: VS Code and Zed settings, tasks, launch', () => {
  it('.vscode/settings.json: program paths, terminal profiles, env; not search dirs or tests', async () => {
    await put(
      '.vscode/settings.json',
      [
        '{',
        '  // the workspace interpreter',
        '  "python.defaultInterpreterPath": "${workspaceFolder}/.venv/bin/python",',
        '  "git.path": "./tools/git",',
        '  "typescript.tsdk": "node_modules/typescript/lib",',
        '  "rust-analyzer.server.path": "tools/ra",',
        '  "go.alternateTools": { "go": "./tools/go" },',
        '  "terminal.integrated.profiles.linux": { "x": { "path": "./tools/sh", "args": ["-l", "--rcfile", "./tools/rc"] } },',
        '  "terminal.integrated.env.linux": { "PATH": "./tools/bin:${env:PATH}" },',
        '  "terminal.integrated.shell.linux": "./tools/oldsh",',
        '  "terminal.integrated.automationShell.osx": "tools/autosh",',
        '  "python.envFile": "${workspaceFolder}/.env.vscode",',
        '  "python.analysis.extraPaths": ["./src"],',
        '  "python.testing.pytestPath": "./src/pytest",',
        '  "jest.rootPath": "packages/app",',
        '  "files.exclude": { "**/.git": true },',
        '  "editor.fontFamily": "Fira Code",',
        '}',
      ].join('\n'),
    );
    expect(held()).toEqual([
      '.env.vscode',
      '.venv/bin/python',
      'node_modules/typescript/lib',
      'tools/autosh',
      'tools/bin',
      'tools/git',
      'tools/go',
      'tools/oldsh',
      'tools/ra',
      'tools/rc',
      'tools/sh',
    ]);
  });

  it('.vscode/tasks.json: command, args, options.cwd, shell, platform forms; not bare args', async () => {
    await put(
      '.vscode/tasks.json',
      JSON.stringify({
        version: '2.0.0',
        tasks: [
          {
            label: 'open',
            type: 'shell',
            command: './scripts/open.sh --watch',
            runOptions: { runOn: 'folderOpen' },
          },
          { label: 'build', type: 'process', command: 'make', args: ['build', './gen/x.mk'] },
          {
            label: 'sub',
            command: 'run.sh',
            args: [{ value: 'sub/a.sh', quoting: 'escape' }],
            options: { cwd: '${workspaceFolder}/sub', shell: { executable: './tools/bash' } },
            linux: { command: './scripts/linux.sh' },
          },
        ],
      }),
    );
    expect(held()).toEqual([
      'gen/x.mk',
      'scripts/linux.sh',
      'scripts/open.sh',
      // A program started without a shell may have spaces in its path: the value is held too.
      'scripts/open.sh --watch',
      'sub',
      'sub/a.sh',
      'sub/scripts/linux.sh',
      'sub/sub/a.sh',
      'tools/bash',
    ]);
  });

  it('.vscode/launch.json: runtime, debugger, env file; not the program it debugs', async () => {
    await put(
      '.vscode/launch.json',
      JSON.stringify({
        configurations: [
          {
            name: 'a',
            type: 'node',
            program: '${workspaceFolder}/src/index.js',
            args: ['./data.json'],
            runtimeExecutable: './tools/node',
            runtimeArgs: ['--require', './tools/hook.cjs'],
            envFile: '${workspaceFolder}/.env.debug',
            preLaunchTask: 'build',
          },
          { name: 'b', type: 'cppdbg', miDebuggerPath: 'tools/gdb', program: './a.out' },
        ],
      }),
    );
    expect(held()).toEqual(['.env.debug', 'tools/gdb', 'tools/hook.cjs', 'tools/node']);
  });

  it('.zed/settings.json and tasks.json: lsp binary, context servers, terminal shell, tasks', async () => {
    await put(
      '.zed/settings.json',
      [
        '{',
        '  "lsp": { "rust-analyzer": { "binary": { "path": "./z/ra", "arguments": ["--log", "z/log.cfg"], "env": { "LD_PRELOAD": "./z/pre.so" } } } },',
        '  "context_servers": { "c": { "command": { "path": "z/ctx", "args": ["z/ctx.js"] } }, "d": { "command": "./z/d", "args": [] } },',
        '  "terminal": { "shell": { "program": "./z/sh" } },',
        '  "node": { "npm_path": "z/npm" },',
        '}',
      ].join('\n'),
    );
    await put('.zed/tasks.json', '[{"label": "t", "command": "$ZED_WORKTREE_ROOT/z/task.sh"}]');
    expect(held()).toEqual([
      'z/ctx',
      'z/ctx.js',
      'z/d',
      'z/log.cfg',
      'z/npm',
      'z/pre.so',
      'z/ra',
      'z/sh',
      'z/task.sh',
    ]);
  });
});

describe('class 9: where an agent setting is read against', () => {
  it('a settings file above the workspace names paths against the workspace it runs in', async () => {
    await writeFile(
      path.join(tmp ?? '', '.mcp.json'),
      '{"mcpServers": {"x": {"command": "./tools/up.sh", "args": ["ws/from-parent.js", "."]}}}',
    );
    expect(namedHeldPaths(ws)).toEqual([
      {
        path: 'from-parent.js',
        why: `Claude Code (mcpServers.x in ${path.join(tmp ?? '', '.mcp.json')})`,
      },
      {
        path: 'tools/up.sh',
        why: `Claude Code (mcpServers.x in ${path.join(tmp ?? '', '.mcp.json')})`,
      },
      // Read against the workspace as well: a path that happens to lie inside it is held too.
      {
        path: 'ws/from-parent.js',
        why: `Claude Code (mcpServers.x in ${path.join(tmp ?? '', '.mcp.json')})`,
      },
    ]);
  });

  it('a file that does not parse, a URL, a home, another variable: nothing', async () => {
    await put('.mcp.json', '{"mcpServers": {"x": {"command": "./a.sh"');
    await put(
      '.claude/settings.json',
      '{"apiKeyHelper": "~/bin/key", "hooks": {"Stop": [{"hooks": [{"command": "$HOME/x.sh"}]}]}}',
    );
    await put('.cursor/mcp.json', '{"mcpServers": {"u": {"url": "https://x/y"}}}');
    expect(held()).toEqual([]);
  });
});
