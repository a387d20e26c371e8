// Adversarial round 4, class 8: "the list closes by its rule" (src/host-obeyed.ts): a name is
// listed when a common host tool reads it from the directory it runs in for a purpose other
// than running the project's own code, and what it says can make that tool run a program.
// Each name below meets that rule as the listed ones do (a sibling of a listed name, or the
// same kind of setting for another common tool), and is not on the list today: an rw run
// writes it unheld and unsaid, and an apply writes it unnamed. Each case asserts cfh holds
// (the name is on the list), so each fails today.
import { describe, expect, it } from 'vitest';
import { isHostObeyed } from '../../src/host-obeyed.js';

const CASES: readonly { path: string; why: string }[] = [
  {
    path: '.zed/settings.json',
    why: 'Zed: project settings name language-server binaries it starts on opening the folder (as .vscode, .idea)',
  },
  {
    path: '.mcp.json',
    why: 'Claude Code: project MCP servers, commands the agent starts (.claude is listed for the same tool)',
  },
  {
    path: '.cursor/mcp.json',
    why: 'Cursor: project MCP servers, commands the editor starts',
  },
  {
    path: '.gemini/settings.json',
    why: 'Gemini CLI: mcpServers and toolDiscoveryCommand, commands it runs',
  },
  {
    path: '.terraform/providers/registry.terraform.io/hashicorp/null/3.2.0/linux_amd64/terraform-provider-null_v3.2.0',
    why: 'terraform: provider plugins every plan runs (as .mvn extensions every mvn loads)',
  },
  {
    path: 'rust-toolchain.toml',
    why: 'rustup: [toolchain] path names the toolchain every cargo and rustc run (as .cargo rustc-wrapper)',
  },
  {
    path: '.vimrc',
    why: "vim's exrc reads .vimrc in the directory as it reads .exrc (listed)",
  },
  {
    path: '.pylintrc',
    why: 'pylint: init-hook is Python it runs on start, linting being no run of the project',
  },
];

describe('adv round 4: names that meet the list rule', () => {
  for (const c of CASES)
    it(`${c.path} is host-obeyed (${c.why})`, () => {
      expect(isHostObeyed(c.path)).toBe(true);
    });
});
