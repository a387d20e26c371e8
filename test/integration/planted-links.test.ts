// Adversarial (AH-CONT-1): a symbolic link one run's sandbox leaves in its rw workspace
// never chooses what a later run mounts. Run 1 (rw workspace, real engine) replaces
// `cache/` with a link to a "secret" directory outside every mount and leaves others (`sub`
// to a sibling directory, `up` to the secret's parent, `key` to a file, `nest/inner` one
// level down). Run 2 names a source through each of them, every way a source is spelled
// (--mount, --workspace, a profile's relative mount, draft mode's copy source, the artifact
// root, the working directory), and is refused with 125 before any engine object or run
// directory exists; the secret is neither read nor written. Then the same with cfh run by
// an ordinary user, whose sandbox writes as that user's own uid: the links are the
// operator's by owner, and still not followed.
import { execa } from 'execa';
import { chown, lstat, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CFH_MAIN,
  SANDBOX_UID,
  copySampleRepo,
  removeDir,
  tempDir,
  useScratch,
} from './helpers.js';
import { expectOneLineRefusal, refusal } from './refusal.js';

const scratch = useScratch('links');
const isRoot = process.getuid?.() === 0;
const USER = 'cfh-tester';

const KEY = 'PRIVATE KEY of the operator\n';
const AUTHORIZED = 'ssh-ed25519 AAAA operator\n';

/** A directory standing for ~/.ssh: outside every mount of every run. */
async function makeSecret(dir: string): Promise<string> {
  await mkdir(dir, { mode: 0o700 });
  await writeFile(path.join(dir, 'id_rsa'), KEY, { mode: 0o600 });
  await writeFile(path.join(dir, 'authorized_keys'), AUTHORIZED, { mode: 0o600 });
  return dir;
}

async function expectSecretUntouched(dir: string): Promise<void> {
  expect((await readdir(dir)).sort()).toEqual(['authorized_keys', 'id_rsa']);
  expect(await readFile(path.join(dir, 'id_rsa'), 'utf8')).toBe(KEY);
  expect(await readFile(path.join(dir, 'authorized_keys'), 'utf8')).toBe(AUTHORIZED);
}

/** What run 1's sandbox does in its rw workspace: links to host paths it cannot even see. */
function plantScript(secret: string): string {
  return [
    'rm -rf cache && ln -s ' + secret + ' cache',
    'mkdir real && ln -s real sub',
    'ln -s ' + path.dirname(secret) + ' up',
    'ln -s ' + secret + '/id_rsa key',
    'mkdir nest && ln -s ' + secret + ' nest/inner',
  ].join(' && ');
}

/** What run 2 would do with whatever it got: read the key, append to authorized_keys. */
const STEAL = [
  'sh',
  '-c',
  'cat /cache/id_rsa /s/id_rsa /key /workspace/id_rsa; for f in /cache /workspace /s; do echo pwned >> $f/authorized_keys; done',
];

/** Runs cfh from `dir` as a shell that `cd`s there would: PWD says how it got there. */
function enter(dir: string): string[] {
  return ['sh', '-c', 'cd "$0" && exec env PWD="$0" "$@"', dir];
}

/** Run 2's ways of naming a source through the planted links, and the link each goes through. */
function variants(
  ws: string,
  other: string,
  profile: string,
  secret: string,
): { name: string; args: string[]; link: string; cwd?: string }[] {
  return [
    {
      name: '--mount',
      args: ['--workspace', other, '--mount', `${ws}/cache:/cache:rw`],
      link: `${ws}/cache`,
    },
    {
      name: '--workspace through a link to a sibling',
      args: ['--workspace', `${ws}/sub`],
      link: `${ws}/sub`,
    },
    {
      name: '--workspace onto the secret',
      args: ['--workspace', `${ws}/cache`],
      link: `${ws}/cache`,
    },
    {
      name: 'a profile mount relative to its file',
      args: ['--workspace', other, '--profile', profile],
      link: `${ws}/cache`,
    },
    {
      name: 'a link in an intermediate component',
      args: ['--workspace', other, '--mount', `${ws}/up/${path.basename(secret)}:/s:ro`],
      link: `${ws}/up`,
    },
    {
      name: 'a link to a file',
      args: ['--workspace', other, '--mount', `${ws}/key:/key:ro`],
      link: `${ws}/key`,
    },
    {
      name: 'a link one directory down',
      args: ['--workspace', other, '--mount', `${ws}/nest/inner:/s:ro`],
      link: `${ws}/nest/inner`,
    },
    {
      name: 'the working directory, entered through the link by the shell',
      args: [],
      link: `${ws}/sub`,
      cwd: `${ws}/sub`,
    },
    {
      name: 'a relative --mount from a directory entered through the link',
      args: ['--workspace', other, '--mount', 'id_rsa:/key:ro'],
      link: `${ws}/cache`,
      cwd: `${ws}/cache`,
    },
    {
      name: "draft mode: the copy's source",
      args: ['--workspace', `${ws}/cache`, '--workspace-mode', 'draft'],
      link: `${ws}/cache`,
    },
  ];
}

describe('a link a previous sandbox planted never chooses a later mount (AH-CONT-1)', () => {
  it.runIf(isRoot)(
    'run 1 plants links in its rw workspace; run 2 through any of them is refused before anything exists',
    async () => {
      const secret = await makeSecret(scratch.path('secret'));
      const ws = await copySampleRepo(scratch.path('proj'));
      await mkdir(path.join(ws, 'cache'));
      await chown(path.join(ws, 'cache'), SANDBOX_UID, SANDBOX_UID);
      const other = await copySampleRepo(scratch.path('other'));
      const profile = scratch.path('relative.yaml');
      await writeFile(
        profile,
        'extends: untrusted-repo\nname: relative\nmounts:\n  - { source: proj/cache, target: /cache, mode: rw }\n',
      );
      const art1 = scratch.path('art-1');
      const first = await execa(
        process.execPath,
        [
          CFH_MAIN,
          'sandbox',
          'run',
          '--profile',
          'untrusted-repo',
          '--workspace',
          ws,
          '--artifact-root',
          art1,
          '--',
          'sh',
          '-c',
          plantScript(secret),
        ],
        {
          reject: false,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/root', CFH_LOG_LEVEL: 'error' },
          extendEnv: false,
        },
      );
      expect(first.exitCode, first.stderr).toBe(0);
      // The sandbox made them, as the workspace owner cfh ran it as.
      for (const name of ['cache', 'sub', 'up', 'key', 'nest/inner']) {
        const st = await lstat(path.join(ws, name));
        expect(st.isSymbolicLink(), name).toBe(true);
        expect(st.uid, name).toBe(SANDBOX_UID);
      }
      let n = 0;
      for (const v of variants(ws, other, profile, secret)) {
        const art = scratch.path(`art-2-${n++}`);
        const r = await refusal(
          ['sandbox', 'run', ...v.args, '--artifact-root', art, '--', ...STEAL],
          art,
          v.cwd === undefined ? {} : { under: enter(v.cwd) },
        );
        expectOneLineRefusal(r, new RegExp(`goes through the symbolic link '${v.link}'`));
      }
      // The artifact root through the link: cfh would write evidence into the secret.
      const art = `${ws}/cache/runs`;
      const r = await refusal(
        ['sandbox', 'run', '--workspace', other, '--artifact-root', art, '--', 'true'],
        art,
      );
      expectOneLineRefusal(
        r,
        new RegExp(`artifact root '${art}' goes through the symbolic link '${ws}/cache'`),
      );
      await expectSecretUntouched(secret);
    },
  );

  it.runIf(isRoot)(
    'the same when cfh runs as an ordinary user and its sandbox writes as that uid',
    async () => {
      const u = await execa('id', ['-u', USER], { reject: false });
      expect(u.exitCode, `user ${USER} missing: run scripts/test-user.sh`).toBe(0);
      const uid = Number(u.stdout);
      const gid = Number((await execa('id', ['-g', USER])).stdout);
      const home = await tempDir('links-user');
      try {
        await chown(home, uid, gid);
        const secret = await makeSecret(path.join(home, 'ssh'));
        const ws = path.join(home, 'proj');
        const other = path.join(home, 'other');
        await mkdir(path.join(ws, 'cache'), { recursive: true });
        await mkdir(other);
        const profile = path.join(home, 'relative.yaml');
        await writeFile(
          profile,
          'extends: untrusted-repo\nname: relative\nmounts:\n  - { source: proj/cache, target: /cache, mode: rw }\n',
        );
        await execa('chown', ['-R', `${uid}:${gid}`, home]);
        const env = {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: home,
          CFH_LOG_LEVEL: 'error',
        };
        const asUser = ['runuser', '-u', USER, '--'];
        const first = await execa(
          asUser[0] ?? 'runuser',
          [
            ...asUser.slice(1),
            process.execPath,
            CFH_MAIN,
            'sandbox',
            'run',
            '--profile',
            'untrusted-repo',
            '--workspace',
            ws,
            '--artifact-root',
            path.join(home, 'art-1'),
            '--',
            'sh',
            '-c',
            plantScript(secret),
          ],
          { reject: false, env, extendEnv: false },
        );
        expect(first.exitCode, first.stderr).toBe(0);
        // Owned by the operator's own uid: "only you could change it" is no defence.
        expect((await lstat(path.join(ws, 'cache'))).uid).toBe(uid);
        let n = 0;
        for (const v of variants(ws, other, profile, secret)) {
          const art = path.join(home, `art-2-${n++}`);
          const r = await refusal(
            ['sandbox', 'run', ...v.args, '--artifact-root', art, '--', ...STEAL],
            art,
            {
              under: [...asUser, ...(v.cwd === undefined ? [] : enter(v.cwd))],
              env: { HOME: home },
            },
          );
          expectOneLineRefusal(
            r,
            new RegExp(`goes through the symbolic link '${v.link}'.*uid ${uid}`),
          );
        }
        await expectSecretUntouched(secret);
      } finally {
        await removeDir(home);
      }
    },
  );
});
