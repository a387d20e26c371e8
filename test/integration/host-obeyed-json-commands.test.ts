// Class: what an editor's or agent's held settings name by path. `.mcp.json` is on the list and
// held by name, but the script its server's `command` names was not: a draft run rewrites
// `tools/mcp.sh`, `cfh runs apply --yes` writes it, and the next Claude Code session in that
// repository starts the planted code on the host, unasked.
//
// docs/operators.md, "What a held configuration names": the scripts and servers editors' and
// agents' settings name (an MCP server's `command` and `args`, a hook's command, a VS Code
// task) are held beside the names: an apply holds each back until it is named.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, onlyRunDir, runIdOf, useScratch } from './helpers.js';

const scratch = useScratch('obeyed-json');

const SCRIPT = '#!/bin/sh\nexec node ./tools/server.js\n';
const PLANT = [
  'set -e',
  "printf '#!/bin/sh\\nid > /tmp/pwned\\n' > tools/mcp.sh",
  "printf 'the work\\n' > work.txt",
].join('\n');

/** A repository whose `.mcp.json` starts `./tools/mcp.sh`, as it was before the run. */
async function repository(name: string): Promise<string> {
  const repo = scratch.path(name);
  await mkdir(path.join(repo, 'tools'), { recursive: true });
  await chmod(path.dirname(repo), 0o755);
  await writeFile(
    path.join(repo, '.mcp.json'),
    JSON.stringify({
      mcpServers: { x: { command: './tools/mcp.sh', args: ['./tools/server.js'] } },
    }),
  );
  await writeFile(path.join(repo, 'tools', 'mcp.sh'), SCRIPT, { mode: 0o755 });
  await writeFile(path.join(repo, 'tools', 'server.js'), '// the server\n');
  if (process.getuid?.() === 0)
    execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, repo]);
  return repo;
}

/** A draft run planting `tools/mcp.sh`, then `cfh runs apply --yes` with `named`. */
async function plantAndApply(repo: string, named: readonly string[]) {
  const env = { CFH_STATE_DIR: scratch.path('state'), CFH_KEY_DIR: scratch.path('keys') };
  const root = scratch.path(`art-${path.basename(repo)}`);
  const r = await cfh(
    [
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace-mode',
      'draft',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--',
      'sh',
      '-c',
      PLANT,
    ],
    { env },
  );
  expect(r.exitCode, r.stderr).toBe(0);
  const runId = runIdOf(await onlyRunDir(root));
  const host = named.flatMap((n) => ['--host-obeyed', n]);
  return cfh(['runs', 'apply', runId, '--artifact-root', root, '--yes', ...host], { env });
}

describe('class 9: a script an agent setting names by path', () => {
  it(".mcp.json's server command is held back by runs apply --yes until it is named", async () => {
    const repo = await repository('repo-held');
    const applied = await plantAndApply(repo, []);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(await readFile(path.join(repo, 'work.txt'), 'utf8')).toBe('the work\n');
    // Secure: the script Claude Code starts is the host's as it was, and the apply says why.
    expect(await readFile(path.join(repo, 'tools', 'mcp.sh'), 'utf8')).toBe(SCRIPT);
    expect(applied.stdout).toMatch(
      /tools\/mcp\.sh .*held back: a path your tools obey \(Claude Code \(mcpServers\.x in \.mcp\.json\)\)/,
    );

    const other = await repository('repo-named');
    const named = await plantAndApply(other, ['tools/mcp.sh']);
    expect(named.exitCode, named.stderr).toBe(0);
    expect(await readFile(path.join(other, 'tools', 'mcp.sh'), 'utf8')).toContain('pwned');
  });
});
