// Class: the list of paths your tools obey misses tools that obey a directory-local file to
// run a program: Helix (`.helix/languages.toml`: a language server's `command`, started when a
// file is opened in the project, no prompt), Qwen Code (`.qwen/settings.json`: `mcpServers`
// commands, the format of Gemini CLI's `.gemini`, which is listed) and Sapling (`.sl/config`:
// `[hooks]`, as Mercurial's `.hg/hgrc`, which is listed). A draft run plants them and
// `cfh runs apply --yes` writes them to the host without their being named.
//
// docs/operators.md, "Paths your tools obey": "a name is on it when a common host tool reads
// it from the directory it runs in (or a parent) for a purpose other than running the
// project's own code, and what it says can make that tool run a program ..."; "An apply
// writes them only when each is named"; in rw mounts they stay read-only.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, onlyRunDir, runIdOf, useScratch } from './helpers.js';

const scratch = useScratch('adv5-obeyed');

const PLANTED: Record<string, string> = {
  '.helix/languages.toml': `[language-server.pylsp]\\ncommand = "./tools/lsp.sh"\\n`,
  '.qwen/settings.json': `{"mcpServers":{"x":{"command":"./tools/mcp.sh"}}}\\n`,
  '.sl/config': `[hooks]\\npre-status = ./tools/hook.sh\\n`,
};

describe('adv round 5: host-obeyed names the list misses', () => {
  it('a draft run planting .helix, .qwen and .sl configs has them held back by runs apply --yes', async () => {
    const repo = scratch.path('repo');
    await mkdir(repo, { recursive: true });
    await chmod(path.dirname(repo), 0o755);
    await writeFile(path.join(repo, 'README'), 'a repository\n');
    if (process.getuid?.() === 0)
      execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, repo]);
    const root = scratch.path('art');
    const plant = [
      'set -e',
      ...Object.entries(PLANTED).map(
        ([p, body]) => `mkdir -p ${path.dirname(p)} && printf '${body}' > ${p}`,
      ),
      "printf 'the work\\n' > work.txt",
    ].join('\n');
    // Everything cfh keeps is the test's own.
    const env = { CFH_STATE_DIR: scratch.path('state'), CFH_KEY_DIR: scratch.path('keys') };
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
        plant,
      ],
      { env },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const runId = runIdOf(await onlyRunDir(root));
    const applied = await cfh(['runs', 'apply', runId, '--artifact-root', root, '--yes'], {
      env,
    });
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(await readFile(path.join(repo, 'work.txt'), 'utf8')).toBe('the work\n');
    // Secure: none of the planted orders reaches the host without being named.
    const written = Object.keys(PLANTED).filter((p) => existsSync(path.join(repo, p)));
    expect(written).toEqual([]);
  });
});
