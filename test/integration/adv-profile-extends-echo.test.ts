// Adversarial round, fixed (AH-INV-4). Class: an error message about a file's content that
// quotes the content. A profile's `extends` may name any host file cfh can read (absolute,
// `../`); when that file is not a profile the refusal names the file, the line and the
// field path only (src/config/zod-issues.ts, yaml-file.ts), never a value, an unknown key
// or the YAML library's excerpt; and a layer named by `extends` is read through no symbolic
// link, so a link the repository ships pulls nothing in. test/unit/file-content-echo.test.ts
// holds the other shapes and readers (--script, --approvals).
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cfh, useScratch } from './helpers.js';

const scratch = useScratch('adv-extends');
const SECRET = `hunter2-${process.pid}-q7Zp`;

/** The host "secret" files, outside the repository, each a shape a credential file has. */
const SECRETS: Readonly<Record<string, string>> = {
  netrc: `machine build.example.test login ci password ${SECRET}\n`,
  dotenv: `API_TOKEN=${SECRET}\nOTHER=1\n`,
  shadowish: `root:${SECRET}:20228:0:99999:7:::\n`,
  ini: `[default]\naws_secret_access_key = ${SECRET}\n`,
};

describe('adv: a profile extends a host file and the refusal never quotes it', () => {
  it('never prints an extended file whatever its shape or how it is named', async () => {
    const repo = scratch.path('repo');
    await mkdir(path.join(repo, 'ci'), { recursive: true });
    const leaks: string[] = [];
    for (const [n, [name, body]] of Object.entries(SECRETS).entries()) {
      const secret = await scratch.file(name, body);
      // Three spellings of the same reach: absolute, relative out of the repo, a shipped link;
      // one per shape (each cfh costs seconds here), through both commands in turn.
      await symlink(secret, path.join(repo, 'ci', `${name}-link.yaml`));
      const refs = [secret, path.relative(path.join(repo, 'ci'), secret), `./${name}-link.yaml`];
      const ref = refs[n % refs.length] ?? secret;
      const profile = path.join(repo, 'ci', `${name}.yaml`);
      await writeFile(profile, `extends: ${JSON.stringify(ref)}\nname: p\n`);
      const args =
        n % 2 === 0
          ? ['profiles', 'show', profile, '--resolved']
          : ['sandbox', 'run', '--profile', profile, '--workspace', repo, '--', 'true'];
      const r = await cfh(args);
      expect(r.exitCode).not.toBe(0);
      if (`${r.stdout}${r.stderr}`.includes(SECRET)) leaks.push(`${name} via ${ref}: ${args[0]}`);
    }
    // Before the fix: all four printed it (and all 24 of shape × spelling × command).
    expect(leaks).toEqual([]);
  }, 120_000);
});
