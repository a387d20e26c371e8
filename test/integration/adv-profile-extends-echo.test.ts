// Adversarial round: BROKE. Class: a profile's `extends` may name any host file cfh can read
// (absolute, `../`, or through a symlink the repository ships), and when that file is not a
// profile the refusal quotes its contents: zod-issues.ts prints the value it got (`(got
// "machine … password …")`), an unknown key is named whole (an /etc/shadow line is one key),
// and a YAML parse error carries the yaml library's excerpt of the lines
// (profile-loader.ts). A repository's profile can so print a host secret (.netrc, .env, an
// SSH key, /etc/shadow as root) on cfh's stderr, into a CI log anyone may read. Unskip once
// fixed: a refusal names the file and the field, never the file's text.
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

describe('adv: a profile extends a host file and the refusal quotes it (BROKE)', () => {
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
    // Today: all four print it (and all 24 of shape × spelling × command, measured).
    expect(leaks).toEqual([]);
  }, 120_000);
});
