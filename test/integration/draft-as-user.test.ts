// Draft mode when cfh runs as an ordinary user (governance extension, "Draft vs commit
// policy"): the sandbox runs as that user and owns its copy, so it can make parts of the
// copy unreadable and unwritable to try to leave it behind or hide changes; cfh still
// reads the whole draft, writes the patch and removes the copy. A host file cfh cannot
// read is not copied, is listed, and is never overwritten by an apply.
import { execa } from 'execa';
import { chmod, chown, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CFH_MAIN,
  onlyRunDir,
  readEvents,
  readJson,
  removeDir,
  runIdOf,
  tempDir,
} from './helpers.js';

const USER = 'cfh-tester';
const isRoot = process.getuid?.() === 0;

async function ids(): Promise<{ uid: number; gid: number }> {
  const u = await execa('id', ['-u', USER]);
  const g = await execa('id', ['-g', USER]);
  return { uid: Number(u.stdout), gid: Number(g.stdout) };
}

function asUser(args: string[]) {
  return execa('runuser', ['-u', USER, '--', process.execPath, CFH_MAIN, ...args], {
    reject: false,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp', CFH_LOG_LEVEL: 'error' },
    extendEnv: false,
  });
}

async function draftsOf(runId: string): Promise<string[]> {
  return (await readdir(os.tmpdir())).filter((n) => n.startsWith(`cfh-draft-${runId}-`));
}

describe.skipIf(!isRoot)('draft mode as an ordinary user', () => {
  it('reads and removes a copy the sandbox made unreadable and unwritable', async () => {
    const who = await ids();
    const scratch = await tempDir('draft-user');
    try {
      await chown(scratch, who.uid, who.gid);
      const ws = path.join(scratch, 'ws');
      const art = path.join(scratch, 'art');
      await mkdir(path.join(ws, 'locked'), { recursive: true });
      await writeFile(path.join(ws, 'locked', 'inside.txt'), 'inside\n');
      for (const p of [ws, path.join(ws, 'locked'), path.join(ws, 'locked', 'inside.txt')])
        await chown(p, who.uid, who.gid);
      const r = await asUser([
        'sandbox',
        'run',
        '--workspace',
        ws,
        '--workspace-mode',
        'draft',
        '--artifact-root',
        art,
        '--',
        'sh',
        '-c',
        [
          'echo changed > locked/inside.txt',
          'echo hidden > locked/new.txt',
          'chmod 000 locked/new.txt',
          'chmod 000 locked',
          'id -u',
        ].join('; '),
      ]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(String(who.uid));
      const dir = await onlyRunDir(art);
      expect(await draftsOf(runIdOf(dir))).toEqual([]);
      const patch = await readJson<any>(path.join(dir, 'patch', 'patch.json'));
      expect(
        (patch.changes as { path: string; kind: string }[]).map((c) => [c.path, c.kind]),
      ).toEqual([
        ['locked/inside.txt', 'modified'],
        ['locked/new.txt', 'added'],
      ]);
      expect(await readFile(path.join(ws, 'locked', 'inside.txt'), 'utf8')).toBe('inside\n');
      const applied = await asUser([
        'runs',
        'apply',
        runIdOf(dir),
        '--artifact-root',
        art,
        '--yes',
      ]);
      expect(applied.exitCode, applied.stderr).toBe(0);
      expect(await readFile(path.join(ws, 'locked', 'new.txt'), 'utf8')).toBe('hidden\n');
      expect((await readEvents(dir)).at(-1)?.data.approver).toMatchObject({ uid: who.uid });
    } finally {
      await removeDir(scratch);
    }
  });

  it('does not copy a host file cfh cannot read, lists it, and never overwrites it', async () => {
    const who = await ids();
    const scratch = await tempDir('draft-user-ro');
    try {
      await chown(scratch, who.uid, who.gid);
      const ws = path.join(scratch, 'ws');
      const art = path.join(scratch, 'art');
      await mkdir(ws);
      await chown(ws, who.uid, who.gid);
      await writeFile(path.join(ws, 'secret'), 'root only\n');
      await chmod(path.join(ws, 'secret'), 0o600);
      const r = await asUser([
        'sandbox',
        'run',
        '--workspace',
        ws,
        '--workspace-mode',
        'draft',
        '--artifact-root',
        art,
        '--',
        'sh',
        '-c',
        'ls; echo mine > secret',
      ]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).not.toContain('secret');
      const dir = await onlyRunDir(art);
      const baseline = await readJson<any>(path.join(dir, 'workspace-baseline.json'));
      expect(baseline.skipped).toEqual([{ path: 'secret', reason: 'unreadable' }]);
      expect(await draftsOf(runIdOf(dir))).toEqual([]);
      const applied = await asUser([
        'runs',
        'apply',
        runIdOf(dir),
        '--artifact-root',
        art,
        '--yes',
      ]);
      expect(applied.exitCode).toBe(1);
      expect(applied.stderr).toContain('secret: exists on the host now');
      expect(await readFile(path.join(ws, 'secret'), 'utf8')).toBe('root only\n');
    } finally {
      await removeDir(scratch);
    }
  });
});
