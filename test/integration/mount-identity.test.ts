// Adversarial (class: one host tree under two names): mounted trees are compared by
// identity, not by how their paths are spelled (AH-CONT-1, AH-CFC-2). A bind mount makes a
// directory's tree reachable under another path, so a string comparison of sources misses
// it: an alias of a labelled directory bind-mounted inside the workspace (which draft mode's
// copy reads through, so the secret would be read under the workspace's label), a second
// path bound to the same directory, a source inside the rw workspace named through a bind
// of the workspace, an rw mount that writes a read-only workspace through one, a labelled
// file with a second name (a hard link) in the workspace. Each is refused at planning: exit
// 125, one line, no engine object, no run directory. The bind mounts are this file's own,
// in its scratch directory, unmounted in a finally.
import { link, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { cfh, ownBySandbox, useScratch } from './helpers.js';
import { expectOneLineRefusal, refusal } from './refusal.js';

const scratch = useScratch('mount-identity');
let n = 0;

/** Runs `body` with `source` bind-mounted at `at` (made if missing), unmounted after it. */
async function withBind<T>(source: string, at: string, body: () => Promise<T>): Promise<T> {
  await mkdir(at, { recursive: true });
  await execa('mount', ['--bind', source, at]);
  try {
    return await body();
  } finally {
    await execa('umount', [at]);
  }
}

/** A labelled directory holding one secret file. */
async function secretsDir(): Promise<string> {
  const dir = scratch.path(`secrets-${n++}`);
  await mkdir(dir, { mode: 0o755 });
  await writeFile(path.join(dir, 'key'), 'the secret\n', { mode: 0o644 });
  return dir;
}

/** A read-only workspace labelled `i:repo`, and `secrets` at /secrets labelled `secret`. */
async function labelledProfile(secrets: string, secretsLabel = 'confidentiality: [secret]') {
  return scratch.file(
    `profile-${n++}.yaml`,
    [
      'extends: default',
      `name: mount-identity-${n}`,
      'workspace: { mode: ro, label: { integrity: [repo] } }',
      `mounts:\n  - { source: ${secrets}, target: /secrets, label: { ${secretsLabel} } }`,
      '',
    ].join('\n'),
  );
}

describe.each(['enforce-explicit', 'enforce-strict'])(
  'one host tree under two labels, %s (AH-CFC-2)',
  (mode) => {
    it('an alias of the labelled directory bind-mounted inside the workspace is refused at planning', async () => {
      const repo = await scratch.sampleRepo();
      const secrets = await secretsDir();
      const profile = await labelledProfile(secrets);
      const art = scratch.path(`art-${n++}`);
      const r = await withBind(secrets, path.join(repo, 'alias'), () =>
        refusal(
          [
            'sandbox',
            'run',
            '--profile',
            profile,
            '--cfc',
            mode,
            '--workspace',
            repo,
            '--artifact-root',
            art,
            '--',
            'cat',
            '/workspace/alias/key',
          ],
          art,
        ),
      );
      expectOneLineRefusal(
        r,
        /^cfh: mount \/secrets: one host tree under two labels: '.*\/secrets-\d+' is reachable through '.*\/repo-\d+': the tree mounted at '.*\/alias' is .*, so its files are readable as \/workspace under its label; /,
      );
    });

    it('a second path bound to the labelled directory, mounted under another label, is refused', async () => {
      const repo = await scratch.sampleRepo();
      const secrets = await secretsDir();
      const profile = await labelledProfile(secrets);
      const art = scratch.path(`art-${n++}`);
      const other = scratch.path(`other-path-${n++}`);
      const r = await withBind(secrets, other, () =>
        refusal(
          [
            'sandbox',
            'run',
            '--profile',
            profile,
            '--cfc',
            mode,
            '--workspace',
            repo,
            '--mount',
            `${other}:/data`,
            '--label',
            '/data=i:repo',
            '--artifact-root',
            art,
            '--',
            'true',
          ],
          art,
        ),
      );
      expectOneLineRefusal(
        r,
        /^cfh: mount \/\w+: one host tree under two labels: .*the same directory/,
      );
    });

    it('a labelled file with another name (a hard link) inside the workspace is refused', async () => {
      const repo = await scratch.sampleRepo();
      const secrets = await secretsDir();
      await link(path.join(secrets, 'key'), path.join(repo, 'key-link'));
      const profile = await scratch.file(
        `profile-${n++}.yaml`,
        [
          'extends: default',
          `name: mount-identity-${n}`,
          'workspace: { mode: ro, label: { integrity: [repo] } }',
          `mounts:\n  - { source: ${path.join(secrets, 'key')}, target: /key, label: { confidentiality: [secret] } }`,
          '',
        ].join('\n'),
      );
      const art = scratch.path(`art-${n++}`);
      const r = await refusal(
        [
          'sandbox',
          'run',
          '--profile',
          profile,
          '--cfc',
          mode,
          '--workspace',
          repo,
          '--artifact-root',
          art,
          '--',
          'true',
        ],
        art,
      );
      expectOneLineRefusal(
        r,
        /^cfh: mount \/key: one host tree under two labels: '.*\/key' is a file with 2 names on file system \d+:\d+, which '.*\/repo-\d+' reaches/,
      );
    });
  },
);

describe('mounts nested through an alias (AH-CONT-1)', () => {
  it('a source inside the rw workspace, named through a bind of the workspace, is refused', async () => {
    const repo = await scratch.sampleRepo();
    await mkdir(path.join(repo, 'sub'));
    const view = scratch.path(`view-${n++}`);
    const art = scratch.path(`art-${n++}`);
    const r = await withBind(repo, view, () =>
      refusal(
        [
          'sandbox',
          'run',
          '--profile',
          'untrusted-repo',
          '--workspace',
          repo,
          '--mount',
          `${path.join(view, 'sub')}:/data:ro`,
          '--artifact-root',
          art,
          '--',
          'true',
        ],
        art,
      ),
    );
    expectOneLineRefusal(
      r,
      /^cfh: mount '.*\/sub' at \/data lies inside '.*', which is mounted rw at \/workspace \(one host tree: .*\)/,
    );
  });

  it('an rw mount that writes the read-only workspace through a bind of it is refused', async () => {
    const repo = await scratch.sampleRepo();
    // The sandbox user's, so that it could write it: the alias is the only reason to refuse.
    await mkdir(path.join(repo, 'out'));
    await ownBySandbox(path.join(repo, 'out'));
    const view = scratch.path(`view-${n++}`);
    const art = scratch.path(`art-${n++}`);
    const r = await withBind(repo, view, () =>
      refusal(
        [
          'sandbox',
          'run',
          '--workspace',
          repo,
          '--mount',
          `${path.join(view, 'out')}:/out:rw`,
          '--artifact-root',
          art,
          '--',
          'true',
        ],
        art,
      ),
    );
    expectOneLineRefusal(
      r,
      /^cfh: mount '.*\/out' at \/out is rw and writes the workspace '.*', whose mode is ro \(one host tree: .*\)/,
    );
  });
});

describe('what identity does not refuse', () => {
  it('an unrelated directory bound inside the workspace, and one tree under one label, run', async () => {
    const repo = await scratch.sampleRepo();
    const secrets = await secretsDir();
    const elsewhere = await secretsDir();
    // The same label on both names of the tree: nothing is read under a weaker one.
    const profile = await labelledProfile(secrets, 'integrity: [repo]');
    const art = scratch.path(`art-${n++}`);
    const r = await withBind(secrets, path.join(repo, 'alias'), () =>
      withBind(elsewhere, path.join(repo, 'other'), () =>
        cfh([
          'sandbox',
          'run',
          '--profile',
          profile,
          '--cfc',
          'enforce-explicit',
          '--workspace',
          repo,
          '--artifact-root',
          art,
          '--',
          'true',
        ]),
      ),
    );
    expect(r.exitCode, r.stderr).toBe(0);
  });
});
