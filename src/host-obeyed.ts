// The one list of host-obeyed paths: files and directories that a tool on the host executes
// or obeys later, when the operator runs that tool for some other purpose than running the
// project's code (git's status or checkout, a shell entering the directory, an editor
// opening the folder, a package manager's settings). The sandbox writing one of them would
// plant code the host runs later: a `.git/hooks/post-checkout` the next `git checkout` runs,
// as whoever runs it. The project's own code that the operator runs knowingly (its Makefile,
// its tests, its build scripts) is not on the list: running it is running the sandbox's work.
//
// Two mechanisms use this list and only this list: the rw protection (sandbox/
// host-obeyed-mounts.ts: each such entry at the top of an rw mount is mounted read-only;
// sandbox/host-obeyed-watch.ts: what the run created or changed anywhere else is found at
// its end) and the apply gate (workspace/host-obeyed-gate.ts: an apply writes such a path
// only when the operator names it). docs/operators.md lists it ("Paths your tools obey").
//
// The rule for what is on the list: a name is listed when a common host tool reads it from
// the directory it runs in (or a parent of it) for a purpose other than running the
// project's own code, and what it says can make that tool run a program or send
// credentials somewhere: settings that name a hook, a helper, a wrapper, a credential
// process, a task run on opening the folder, a shell snippet run on entering it. The
// project's build definitions (Makefile, package.json scripts, build.gradle, build.rs) are
// not: running them is running the project. The names a repository's own git settings give
// (core.hooksPath, a `.git` file's gitdir, include.path) are not on this static list: they
// are read from the host's repository at run start and held the same way
// (host-obeyed-git.ts); nor are the programs a listed configuration names (`.yarnrc.yml`'s
// yarnPath: host-obeyed-named.ts). Left off by the rule: configuration that is the
// project's code and loads more of it (eslint.config.js, prettier.config.js, babel, jest,
// vite configs): the linter and plugins an editor runs for them come from node_modules and
// the project's sources, which the sandbox writes as ordinary work, so holding the config
// would close nothing; build definitions that can also carry a pylint init-hook
// (pyproject.toml, setup.cfg, tox.ini); instructions to an agent (CLAUDE.md, AGENTS.md),
// which are text it reads, not settings that name a program.
//
// The rule read by family, each member checked against what its tool does (and the family
// table in test/unit/host-obeyed-families.test.ts fails when a member is missing): version
// control systems' repository directories and the files beside them that their commands
// obey (git, Mercurial, Sapling, Jujutsu, Pijul, Darcs, Fossil's checkout database);
// editors' and IDEs' project settings that name a language server, a task or a builder they
// start on opening the folder (VS Code and Theia, JetBrains and Fleet, Zed, Helix, Sublime
// Text, Kate, Eclipse), and the files vim, Neovim and Emacs run from the directory; AI agent
// CLIs' and agentic editors' project settings naming hooks or MCP server commands; package
// managers' and toolchain managers' settings naming a program, a preload or a PATH entry;
// debuggers', REPLs' and document builders' start files read from the directory they start
// in (gdb, lldb, pdb, the Perl debugger, irb, pry, PsySH, GHCi, ghcid, IEx, the OCaml
// toplevel, R, Octave, MATLAB, latexmk); credential helpers; a home's shell and tool files.
// Left off by the same check: start files their tool reads from the home only (psql's
// `.psqlrc`, sqlite3's `.sqliterc`, mysql's `.my.cnf`, Julia's `startup.jl`, Erlang's
// `.erlang` since OTP 21, Python's PYTHONSTARTUP file); Bazaar's `.bzr` and Subversion's
// `.svn` (nothing in a branch or working copy names a program their client runs), Fossil's
// `.fossil-settings` (its versioned settings are globs, no commands), Kakoune's `.kakrc`
// (Kakoune reads no file from the project unless the user's own kakrc sources it), goose's
// `.goosehints` (text).
//
// A path is host-obeyed when any of its components is one of these names (compared without
// regard to case: a case-insensitive file system or git's core.ignorecase finds `.GIT` as
// `.git`): each tool looks for them in whatever directory it runs in, not only at the top. A
// name of two components (`.github/hooks`) matches two consecutive components.

export interface HostObeyedName {
  /** The file or directory name, `*` in it for one or more characters, `a/b` for b inside a. */
  readonly name: string;
  /** Who obeys it. */
  readonly tool: string;
  /** What it makes that tool do. */
  readonly why: string;
}

export const HOST_OBEYED_NAMES: readonly HostObeyedName[] = [
  {
    name: '.git',
    tool: 'git',
    why: 'the repository: hooks, config (core.fsmonitor, core.hooksPath, aliases, filters), a gitdir pointer, a nested repository',
  },
  { name: '.gitattributes', tool: 'git', why: 'filter, diff and merge drivers per path' },
  { name: '.gitmodules', tool: 'git', why: 'submodules: where they are and what is fetched' },
  { name: '.gitconfig', tool: 'git', why: 'git configuration (a workspace that is a home)' },
  { name: '.lfsconfig', tool: 'git-lfs', why: 'LFS endpoints and settings' },
  { name: '.husky', tool: 'git (husky)', why: 'hooks, through core.hooksPath' },
  { name: '.githooks', tool: 'git', why: 'hooks, through core.hooksPath' },
  { name: '.pre-commit-config.yaml', tool: 'pre-commit', why: 'commands run on git commit' },
  { name: 'lefthook.yml', tool: 'lefthook', why: 'commands run by git hooks' },
  { name: '.lefthook.yml', tool: 'lefthook', why: 'commands run by git hooks' },
  { name: '.hg', tool: 'Mercurial', why: 'the repository: .hg/hgrc hooks run on hg status' },
  { name: '.hgsub', tool: 'Mercurial', why: 'subrepositories: what hg update fetches and runs' },
  { name: '.sl', tool: 'Sapling', why: 'the repository: .sl/config [hooks] run on sl status' },
  { name: '.jj', tool: 'Jujutsu', why: '.jj/repo/config.toml: ui.pager, ui.editor, fix tools' },
  { name: '.pijul', tool: 'Pijul', why: 'the repository: .pijul/hooks run on record' },
  { name: '_darcs', tool: 'Darcs', why: 'prefs/defaults: posthook and prehook commands' },
  {
    name: '.fslckout',
    tool: 'Fossil',
    why: 'the checkout: names the repository whose hooks and commands run',
  },
  {
    name: '_FOSSIL_',
    tool: 'Fossil',
    why: 'the checkout: names the repository whose hooks and commands run',
  },
  { name: '.envrc', tool: 'direnv', why: 'shell code run on entering the directory' },
  {
    name: '.vscode',
    tool: 'VS Code',
    why: 'tasks run on opening the folder, settings naming programs',
  },
  { name: '*.code-workspace', tool: 'VS Code', why: 'a workspace file: settings and tasks' },
  { name: '.idea', tool: 'JetBrains IDEs', why: 'run configurations and tool settings' },
  { name: '.devcontainer', tool: 'Dev Containers', why: 'initializeCommand runs on the host' },
  { name: '.devcontainer.json', tool: 'Dev Containers', why: 'initializeCommand runs on the host' },
  { name: '.zed', tool: 'Zed', why: 'settings naming language servers and tasks it runs' },
  {
    name: '.helix',
    tool: 'Helix',
    why: 'languages.toml: language-server commands it starts on opening a file',
  },
  { name: '.theia', tool: 'Eclipse Theia', why: 'tasks and settings, as .vscode' },
  {
    name: '*.sublime-project',
    tool: 'Sublime Text',
    why: 'project settings: LSP server commands it starts',
  },
  { name: '.kateproject', tool: 'Kate', why: 'lspclient: language-server commands it starts' },
  { name: '.project', tool: 'Eclipse', why: 'builders run by the automatic build' },
  { name: '.externalToolBuilders', tool: 'Eclipse', why: 'external programs run as builders' },
  { name: '.fleet', tool: 'JetBrains Fleet', why: 'run configurations and tool settings' },
  { name: '.claude', tool: 'Claude Code', why: 'settings: hooks and commands run by the agent' },
  { name: '.mcp.json', tool: 'Claude Code', why: 'project MCP servers: commands the agent starts' },
  { name: '.cursor', tool: 'Cursor', why: 'mcp.json: MCP server commands the editor starts' },
  { name: '.gemini', tool: 'Gemini CLI', why: 'mcpServers and toolDiscoveryCommand it runs' },
  { name: '.qwen', tool: 'Qwen Code', why: 'settings.json: mcpServers commands it starts' },
  { name: '.codex', tool: 'Codex CLI', why: 'config.toml: MCP server commands it starts' },
  { name: '.windsurf', tool: 'Windsurf', why: 'hooks and workflows the agent runs' },
  { name: '.roo', tool: 'Roo Code', why: 'mcp.json: MCP server commands it starts' },
  { name: '.continue', tool: 'Continue', why: 'MCP server commands it starts' },
  { name: '.clinerules', tool: 'Cline', why: 'hooks and workflows the agent runs' },
  { name: '.amazonq', tool: 'Amazon Q', why: 'mcp.json: MCP server commands it starts' },
  { name: '.kiro', tool: 'Kiro', why: 'hooks and MCP server commands it runs' },
  { name: '.kilocode', tool: 'Kilo Code', why: 'mcp.json: MCP server commands it starts' },
  { name: '.kilo', tool: 'Kilo Code', why: 'kilo.jsonc: MCP server commands it starts' },
  { name: 'kilo.json', tool: 'Kilo Code', why: 'MCP server commands it starts' },
  { name: 'kilo.jsonc', tool: 'Kilo Code', why: 'MCP server commands it starts' },
  { name: '.junie', tool: 'Junie', why: 'mcp/mcp.json: MCP server commands it starts' },
  { name: '.trae', tool: 'Trae', why: 'mcp.json: MCP server commands it starts' },
  { name: '.factory', tool: 'Factory Droid', why: 'hooks and MCP server commands it runs' },
  { name: '.augment', tool: 'Auggie', why: 'settings.json: hooks and MCP servers it runs' },
  { name: 'crush.json', tool: 'Crush', why: 'LSP and MCP server commands it starts' },
  { name: '.crush.json', tool: 'Crush', why: 'LSP and MCP server commands it starts' },
  {
    name: '.github/hooks',
    tool: 'Copilot CLI, VS Code',
    why: 'agent hooks: commands run around its tool calls',
  },
  { name: 'opencode.json', tool: 'opencode', why: 'MCP server commands it starts' },
  { name: '.opencode', tool: 'opencode', why: 'configuration, plugins and commands it runs' },
  { name: '.aider.conf.yml', tool: 'aider', why: 'lint-cmd and test-cmd it runs after edits' },
  { name: '.dir-locals.el', tool: 'Emacs', why: 'directory-local variables, eval forms' },
  { name: '.dir-locals-2.el', tool: 'Emacs', why: 'directory-local variables, eval forms' },
  { name: '.exrc', tool: 'vim', why: 'commands run on start (exrc)' },
  { name: '_exrc', tool: 'vim', why: 'commands run on start (exrc)' },
  { name: '.vimrc', tool: 'vim', why: 'commands run on start (exrc)' },
  { name: '_vimrc', tool: 'vim', why: 'commands run on start (exrc)' },
  { name: '.gvimrc', tool: 'gvim', why: 'commands run on start (exrc)' },
  { name: '_gvimrc', tool: 'gvim', why: 'commands run on start (exrc)' },
  { name: '.nvim.lua', tool: 'Neovim', why: 'Lua run on start (exrc)' },
  { name: '.nvimrc', tool: 'Neovim', why: 'commands run on start (exrc)' },
  { name: '.lazy.lua', tool: 'Neovim (lazy.nvim)', why: 'a plugin spec: Lua run on start' },
  // Debuggers', REPLs' and document builders' start files, each read from the directory the
  // tool starts in (not only from the home): what one says is code the tool runs there.
  { name: '.gdbinit', tool: 'gdb', why: 'commands run on start' },
  { name: '.lldbinit', tool: 'lldb', why: 'commands run on start' },
  { name: '.pdbrc', tool: 'pdb', why: 'Python run when the debugger starts' },
  { name: '.perldb', tool: 'perl -d', why: 'Perl run when the debugger starts' },
  { name: 'perldb.ini', tool: 'perl -d', why: 'Perl run when the debugger starts (Windows)' },
  { name: '.irbrc', tool: 'irb', why: 'Ruby run when irb starts' },
  { name: 'irb.rc', tool: 'irb', why: 'Ruby run when irb starts (its other spellings)' },
  { name: '_irbrc', tool: 'irb', why: 'Ruby run when irb starts (its other spellings)' },
  { name: '$irbrc', tool: 'irb', why: 'Ruby run when irb starts (its other spellings)' },
  { name: '.pryrc', tool: 'pry', why: 'Ruby run when pry starts' },
  { name: '.psysh.php', tool: 'PsySH (tinker)', why: 'PHP run when the REPL starts' },
  { name: '.ghci', tool: 'GHCi', why: 'commands run on start: `:!` shell, `:def` macros' },
  { name: '.ghcid', tool: 'ghcid', why: 'its arguments: the --command it runs' },
  { name: '.iex.exs', tool: 'IEx', why: 'Elixir run when IEx starts' },
  { name: '.ocamlinit', tool: 'ocaml, utop', why: 'OCaml run when the toplevel starts' },
  { name: '.Rprofile', tool: 'R, RStudio', why: 'R run when R starts' },
  { name: '.Renviron', tool: 'R, RStudio', why: 'environment: R_PROFILE_USER, R_LIBS' },
  { name: '.RData', tool: 'R, RStudio', why: 'the workspace restored on start: its .First runs' },
  { name: '.octaverc', tool: 'GNU Octave', why: 'Octave run when Octave starts' },
  { name: 'startup.m', tool: 'MATLAB', why: 'MATLAB code run on start in its startup folder' },
  { name: '.latexmkrc', tool: 'latexmk', why: 'Perl run by latexmk (editors build on save)' },
  { name: 'latexmkrc', tool: 'latexmk', why: 'Perl run by latexmk (editors build on save)' },
  {
    name: '.pylintrc',
    tool: 'pylint',
    why: 'init-hook: Python run on start (editors lint on open)',
  },
  {
    name: 'pylintrc',
    tool: 'pylint',
    why: 'init-hook: Python run on start (editors lint on open)',
  },
  { name: '.mise.toml', tool: 'mise', why: 'hooks, tasks and env run on entering the directory' },
  { name: 'mise.toml', tool: 'mise', why: 'hooks, tasks and env run on entering the directory' },
  {
    name: '.mise.local.toml',
    tool: 'mise',
    why: 'hooks, tasks and env run on entering the directory',
  },
  {
    name: 'mise.local.toml',
    tool: 'mise',
    why: 'hooks, tasks and env run on entering the directory',
  },
  { name: '.mise', tool: 'mise', why: 'configuration and tasks' },
  // mise's own list of the configuration files it reads in each directory (jdx/mise
  // src/config/mod.rs, LOCAL_CONFIG_FILENAMES and DEFAULT_CONFIG_FILENAMES; docs
  // https://mise.jdx.dev/configuration.html): beside the names above, `mise/config.toml`,
  // `.rtx.toml` (rtx, its old name), their `.local` forms and, for each MISE_ENV,
  // `mise.<env>.toml`, `.mise.<env>.toml`, `mise/config.<env>.toml`, `.rtx.<env>.toml` and
  // their `.local` forms; the `.config/mise*` ones lie under `.config`, held whole.
  {
    name: 'mise.*.toml',
    tool: 'mise',
    why: 'a MISE_ENV or local configuration: hooks, tasks and env run on entering',
  },
  {
    name: '.mise.*.toml',
    tool: 'mise',
    why: 'a MISE_ENV or local configuration: hooks, tasks and env run on entering',
  },
  {
    name: 'mise/config.toml',
    tool: 'mise',
    why: 'hooks, tasks and env run on entering the directory',
  },
  {
    name: 'mise/config.*.toml',
    tool: 'mise',
    why: 'a MISE_ENV or local configuration: hooks, tasks and env run on entering',
  },
  { name: '.rtx.toml', tool: 'mise (rtx)', why: 'hooks, tasks and env run on entering' },
  {
    name: '.rtx.*.toml',
    tool: 'mise (rtx)',
    why: 'a MISE_ENV or local configuration: hooks, tasks and env run on entering',
  },
  { name: '.tool-versions', tool: 'asdf, mise', why: 'plugins installed and run on use' },
  {
    name: '.cargo',
    tool: 'cargo',
    why: 'config.toml: rustc-wrapper, runners, credential providers',
  },
  {
    name: 'rust-toolchain.toml',
    tool: 'rustup',
    why: 'toolchain path: the programs every cargo and rustc run',
  },
  {
    name: 'rust-toolchain',
    tool: 'rustup',
    why: 'toolchain path: the programs every cargo and rustc run',
  },
  { name: '.mvn', tool: 'Maven', why: 'extensions.xml and jvm.config: code loaded by every mvn' },
  { name: '.terraform', tool: 'terraform', why: 'provider plugins every plan and apply runs' },
  {
    name: '.terraformrc',
    tool: 'terraform',
    why: 'provider installation overrides (a workspace that is a home)',
  },
  { name: '.terraform.d', tool: 'terraform', why: 'provider plugins (a workspace that is a home)' },
  { name: '.kube', tool: 'kubectl', why: 'kubeconfig: exec credential plugins' },
  { name: '.docker', tool: 'docker', why: 'credential helpers and stores run by the CLI' },
  { name: '.aws', tool: 'AWS CLI and SDKs', why: 'credential_process run for credentials' },
  { name: '.netrc', tool: 'curl, git, pip', why: 'credentials sent to the hosts it names' },
  { name: '.npmrc', tool: 'npm', why: 'registry, script shell and other settings' },
  { name: '.yarnrc', tool: 'yarn', why: 'yarn-path: the program every yarn command runs' },
  { name: '.yarnrc.yml', tool: 'yarn', why: 'yarnPath: the program every yarn command runs' },
  { name: '.pnpmfile.cjs', tool: 'pnpm', why: 'code run on install, scripts disabled or not' },
  { name: '.pnpmfile.mjs', tool: 'pnpm', why: 'code run on install, scripts disabled or not' },
  {
    name: 'pnpm-workspace.yaml',
    tool: 'pnpm',
    why: 'settings: pnpmfile, scriptShell, nodeOptions, as .npmrc',
  },
  {
    name: '.env.yarn',
    tool: 'yarn',
    why: 'environment every yarn script gets: NODE_OPTIONS preloads',
  },
  { name: 'bunfig.toml', tool: 'bun', why: 'preload: modules run before every bun run' },
  {
    name: '.bunfig.toml',
    tool: 'bun',
    why: 'preload: modules run before every bun run (a workspace that is a home)',
  },
  { name: '.bashrc', tool: 'bash', why: 'shell code (a workspace that is a home)' },
  { name: '.bash_profile', tool: 'bash', why: 'shell code (a workspace that is a home)' },
  { name: '.bash_login', tool: 'bash', why: 'shell code (a workspace that is a home)' },
  { name: '.profile', tool: 'sh', why: 'shell code (a workspace that is a home)' },
  { name: '.zshrc', tool: 'zsh', why: 'shell code (a workspace that is a home)' },
  { name: '.zshenv', tool: 'zsh', why: 'shell code (a workspace that is a home)' },
  { name: '.zprofile', tool: 'zsh', why: 'shell code (a workspace that is a home)' },
  {
    name: '.gnupg',
    tool: 'gpg',
    why: 'gpg-agent.conf: the pinentry program (a workspace that is a home)',
  },
  {
    name: '.ssh',
    tool: 'ssh',
    why: 'keys, authorized keys, ProxyCommand (a workspace that is a home)',
  },
  {
    name: '.config',
    tool: 'many',
    why: 'per-user settings: git, systemd units, autostart (a home)',
  },
  { name: '.local', tool: 'many', why: 'per-user programs on PATH (a home)' },
];

/** A name's pattern: `*` stands for one or more characters, compared without case. */
const pattern = (name: string): RegExp =>
  new RegExp(
    `^${name
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.+')}$`,
    'i',
  );

const single = HOST_OBEYED_NAMES.filter((n) => !n.name.includes('/'));
const EXACT = new Map(
  single.filter((n) => !n.name.includes('*')).map((n) => [n.name.toLowerCase(), n]),
);
const PATTERNS = single
  .filter((n) => n.name.includes('*'))
  .map((n) => ({ re: pattern(n.name), entry: n }));
// An entry of more than one component (`.github/hooks`, `mise/config.toml`): the name alone
// (`hooks`, `mise`) is too common to hold, the pair is what the tool reads.
const NESTED = HOST_OBEYED_NAMES.filter((n) => n.name.includes('/')).map((n) => ({
  parts: n.name.split('/').map(pattern),
  entry: n,
}));

/** The list entry a single file name matches, if any (not a nested one: `.github/hooks`). */
export function hostObeyedName(name: string): HostObeyedName | undefined {
  const exact = EXACT.get(name.toLowerCase());
  if (exact !== undefined) return exact;
  return PATTERNS.find((p) => p.re.test(name))?.entry;
}

/**
 * Where a relative, `/`-separated path first meets the list: the path up to and including
 * the first component that is a host-obeyed name, and that name's entry; undefined when no
 * component is.
 */
export function hostObeyedPrefix(
  relPath: string,
): { readonly prefix: string; readonly entry: HostObeyedName } | undefined {
  const parts = relPath.split('/');
  for (let i = 0; i < parts.length; i += 1) {
    const entry = hostObeyedName(parts[i] ?? '');
    if (entry !== undefined) return { prefix: parts.slice(0, i + 1).join('/'), entry };
    const nested = NESTED.find((n) => n.parts.every((p, k) => p.test(parts[i + k] ?? '')));
    if (nested !== undefined)
      return { prefix: parts.slice(0, i + nested.parts.length).join('/'), entry: nested.entry };
  }
  return undefined;
}

/** Whether a tool on the host obeys `relPath` (relative to a workspace, `/`-separated). */
export function isHostObeyed(relPath: string): boolean {
  return hostObeyedPrefix(relPath) !== undefined;
}
