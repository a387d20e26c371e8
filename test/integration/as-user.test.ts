// cfh run by an ordinary user in the docker group: the sandbox
// runs as that user, files it writes to an rw workspace belong to that user.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { access, chown, cp, mkdir, readFile, stat } from 'node:fs/promises';
import { constants } from 'node:fs';
import path from 'node:path';
import { CFH_MAIN, REPO_ROOT, removeDir, tempDir } from './helpers.js';

const USER = 'cfh-tester';

async function userIds(): Promise<{ uid: number; gid: number } | undefined> {
  const r = await execa('id', ['-u', USER], { reject: false });
  if (r.exitCode !== 0) return undefined;
  const g = await execa('id', ['-g', USER]);
  return { uid: Number(r.stdout), gid: Number(g.stdout) };
}

async function readableMain(ids: { uid: number; gid: number }): Promise<string> {
  // The checkout may sit where the user cannot read it; then run from a readable copy.
  const probe = await execa('runuser', ['-u', USER, '--', 'test', '-r', CFH_MAIN], {
    reject: false,
  });
  if (probe.exitCode === 0) return CFH_MAIN;
  const copy = await tempDir('usercopy');
  for (const part of [
    'dist',
    'node_modules',
    'profiles',
    'images',
    'seccomp',
    'rate-cards',
    'package.json',
  ]) {
    await cp(path.join(REPO_ROOT, part), path.join(copy, part), {
      recursive: true,
      verbatimSymlinks: true,
    });
  }
  await chown(copy, ids.uid, ids.gid);
  return path.join(copy, 'dist', 'cli', 'main.js');
}

describe('cfh as an ordinary user in the docker group', () => {
  it('runs the sandbox as the invoking user; rw files belong to that user', async (ctx) => {
    if (process.getuid?.() !== 0) {
      ctx.skip('needs root to switch to the test user (scripts/test-user.sh creates it)');
    }
    const ids = await userIds();
    expect(ids, `user ${USER} missing: run scripts/test-user.sh`).toBeDefined();
    if (ids === undefined) return;
    const scratch = await tempDir('user');
    try {
      await chown(scratch, ids.uid, ids.gid);
      const ws = path.join(scratch, 'ws');
      const art = path.join(scratch, 'art');
      await mkdir(ws);
      await chown(ws, ids.uid, ids.gid);
      const main = await readableMain(ids);
      await access(process.execPath, constants.X_OK);
      const r = await execa(
        'runuser',
        [
          '-u',
          USER,
          '--',
          process.execPath,
          main,
          'sandbox',
          'run',
          '--profile',
          'untrusted-repo',
          '--workspace',
          ws,
          '--artifact-root',
          art,
          '--',
          'sh',
          '-c',
          'id -u; id -g; echo made > made.txt',
        ],
        {
          reject: false,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp', CFH_LOG_LEVEL: 'error' },
          extendEnv: false,
        },
      );
      // Nothing but cfh's own line naming the run.
      expect(r.stderr).toMatch(/^cfh: run \S+ completed \(exit 0\); evidence in \S+\n?$/);
      expect(r.exitCode).toBe(0);
      expect(r.stdout.trim().split('\n')).toEqual([String(ids.uid), String(ids.gid)]);
      const made = await stat(path.join(ws, 'made.txt'));
      expect([made.uid, made.gid]).toEqual([ids.uid, ids.gid]);
      expect(await readFile(path.join(ws, 'made.txt'), 'utf8')).toBe('made\n');
      const runs = await execa('runuser', [
        '-u',
        USER,
        '--',
        process.execPath,
        main,
        'runs',
        'list',
        '--json',
        '--artifact-root',
        art,
      ]);
      expect(JSON.parse(runs.stdout)).toEqual([
        expect.objectContaining({ state: 'completed', exitCode: 0 }),
      ]);
    } finally {
      await removeDir(scratch);
    }
  });
});
