// Class: "what a held configuration names" reads a fixed few settings, and misses others
// whose value is a program the tool on the host runs: pnpm's `pnpmfile` in `.npmrc` (the
// hooks file every `pnpm install` runs, `.pnpmfile.cjs` under another name: that name is on
// the list) and mise's `[env] _.path` (directories put first on PATH by `mise activate` on
// entering the directory, so `./bin/git` is what the next `git` runs; `_.source` beside it is
// read). A draft run rewrites the file or plants the program, and `cfh runs apply --yes`
// writes them to the host without their being named.
//
// docs/operators.md, "What a held configuration names": "A listed configuration may name a
// program its tool runs, and that program is often a file of the project ... Each value
// that is a path inside the workspace is held beside the names: an apply holds it back until
// named".
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, onlyRunDir, runIdOf, useScratch } from './helpers.js';

const scratch = useScratch('adv5-named');

describe('adv round 5: programs a held configuration names, not read', () => {
  it("pnpm's pnpmfile and mise's _.path targets are held back by runs apply --yes", async () => {
    const repo = scratch.path('repo');
    await mkdir(path.join(repo, 'config'), { recursive: true });
    await chmod(path.dirname(repo), 0o755);
    // The project's own settings, as they were before the run.
    await writeFile(path.join(repo, '.npmrc'), 'pnpmfile=config/hooks.cjs\n');
    await writeFile(path.join(repo, 'config', 'hooks.cjs'), 'module.exports = { hooks: {} };\n');
    await writeFile(path.join(repo, 'mise.toml'), '[env]\n_.path = ["./bin"]\n');
    await writeFile(path.join(repo, 'README'), 'a repository\n');
    if (process.getuid?.() === 0)
      execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, repo]);
    const env = { CFH_STATE_DIR: scratch.path('state'), CFH_KEY_DIR: scratch.path('keys') };
    const root = scratch.path('art');
    const plant = [
      'set -e',
      'printf \'require("child_process").execSync("id > /tmp/pwned");\\n\' > config/hooks.cjs',
      "mkdir -p bin && printf '#!/bin/sh\\nid > /tmp/pwned\\n' > bin/git && chmod +x bin/git",
      "printf 'the work\\n' > work.txt",
    ].join('\n');
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
    // Secure: neither the hooks file pnpm runs nor the program first on mise's PATH changed.
    expect
      .soft(await readFile(path.join(repo, 'config', 'hooks.cjs'), 'utf8'))
      .not.toContain('pwned');
    expect.soft(existsSync(path.join(repo, 'bin', 'git'))).toBe(false);
  });
});
