// Class 9, the list's rule read by family (src/host-obeyed.ts): a name is listed when a
// common host tool reads it from the directory it runs in, for a purpose other than running
// the project's own code, and what it says can make that tool run a program. Each family
// below is the set of tools of one kind whose project files do that, each member checked
// against what its tool does; a sibling missing from the list fails here, by name, so the
// list cannot close one spelling of a family and leave its siblings open.
import { describe, expect, it } from 'vitest';
import { HOST_OBEYED_NAMES, hostObeyedPrefix, isHostObeyed } from '../../src/host-obeyed.js';

const FAMILIES: Record<string, readonly string[]> = {
  // Repository directories and the files beside them whose settings run hooks or programs.
  'version control': [
    '.git',
    '.gitattributes',
    '.gitmodules',
    '.hg',
    '.hgsub',
    '.sl',
    '.jj',
    '.pijul',
    '_darcs',
    '.fslckout',
    '_FOSSIL_',
  ],
  // Project settings naming a language server, task or builder started on opening the folder.
  'editors and IDEs': [
    '.vscode',
    'x.code-workspace',
    '.theia',
    '.idea',
    '.fleet',
    '.zed',
    '.helix',
    'x.sublime-project',
    '.kateproject',
    '.project',
    '.externalToolBuilders',
    '.devcontainer',
    '.devcontainer.json',
  ],
  // Files vim, Neovim and Emacs run from the directory (exrc, lazy.nvim, dir-locals).
  'editor start files': [
    '.exrc',
    '_exrc',
    '.vimrc',
    '.nvimrc',
    '.nvim.lua',
    '.lazy.lua',
    '.dir-locals.el',
    '.dir-locals-2.el',
  ],
  // Project settings of agent CLIs and agentic editors naming hooks or MCP server commands.
  'AI agents': [
    '.claude',
    '.mcp.json',
    '.cursor',
    '.gemini',
    '.qwen',
    '.codex',
    '.windsurf',
    '.roo',
    '.kilocode',
    '.kilo',
    'kilo.json',
    'kilo.jsonc',
    '.continue',
    '.clinerules',
    '.amazonq',
    '.kiro',
    '.junie',
    '.trae',
    '.factory',
    '.augment',
    'opencode.json',
    '.opencode',
    'crush.json',
    '.crush.json',
    '.aider.conf.yml',
    '.github/hooks/policy.json',
  ],
  // Package managers' settings naming a program, a preload, a hooks file.
  'package managers': [
    '.npmrc',
    '.yarnrc',
    '.yarnrc.yml',
    '.env.yarn',
    '.pnpmfile.cjs',
    '.pnpmfile.mjs',
    'pnpm-workspace.yaml',
    'bunfig.toml',
  ],
  // Toolchain and environment managers: hooks on entering, wrappers, toolchain paths.
  'toolchain managers': [
    '.envrc',
    'mise.toml',
    '.mise.toml',
    'mise.local.toml',
    '.mise.local.toml',
    '.mise',
    '.tool-versions',
    '.cargo',
    'rust-toolchain',
    'rust-toolchain.toml',
    '.mvn',
    '.terraform',
  ],
  // Debuggers', REPLs' and document builders' start files read from the directory they start in.
  'REPL and debugger start files': [
    '.gdbinit',
    '.lldbinit',
    '.pdbrc',
    '.perldb',
    'perldb.ini',
    '.irbrc',
    'irb.rc',
    '_irbrc',
    '$irbrc',
    '.pryrc',
    '.psysh.php',
    '.ghci',
    '.ghcid',
    '.iex.exs',
    '.ocamlinit',
    '.Rprofile',
    '.Renviron',
    '.RData',
    '.octaverc',
    'startup.m',
    '.latexmkrc',
    'latexmkrc',
  ],
};

describe('class 9: the list closes each family', () => {
  for (const [family, members] of Object.entries(FAMILIES))
    it(`lists every ${family} member`, () => {
      const missing = members.filter((m) => !isHostObeyed(m));
      expect(missing).toEqual([]);
    });

  it('matches a two-component name only as the pair, at any depth', () => {
    expect(hostObeyedPrefix('.github/hooks/a.json')?.prefix).toBe('.github/hooks');
    expect(hostObeyedPrefix('pkg/.GitHub/Hooks/a.json')?.prefix).toBe('pkg/.GitHub/Hooks');
    for (const p of ['hooks/a.json', '.github/workflows/ci.yml', '.github', 'src/hooks'])
      expect(isHostObeyed(p), p).toBe(false);
  });

  it('says for each name who obeys it and why', () => {
    for (const n of HOST_OBEYED_NAMES) {
      expect(n.tool, n.name).not.toBe('');
      expect(n.why, n.name).not.toBe('');
    }
  });

  it('leaves off what runs nothing of the workspace: instructions, globs, plain VCS metadata', () => {
    for (const p of ['AGENTS.md', 'CLAUDE.md', '.goosehints', '.svn', '.bzr', '.kakrc'])
      expect(isHostObeyed(p), p).toBe(false);
  });

  it('leaves off start files their tool reads from the home only (psql, sqlite3, Julia)', () => {
    for (const p of ['.psqlrc', '.sqliterc', '.my.cnf', 'startup.jl', '.erlang'])
      expect(isHostObeyed(p), p).toBe(false);
  });
});
