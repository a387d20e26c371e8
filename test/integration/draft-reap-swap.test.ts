// A dead root-run cfh's draft copy is removed by descriptor and with its owner's authority
// (governance extension, "Draft vs commit policy"; AH-LIFE-3): the class is any removal of
// a tree another user can change while it goes. The workspace's owner, who may reach their
// copy, swaps its directories for links to a root-owned directory they cannot write (a
// renameat2(RENAME_EXCHANGE) loop) while `cfh reap` removes the copy; a removal by path as
// root deletes files through the links. Nothing outside the copy may go, in any try.
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { cfh, readJson, removeDir, runIdOf, startCfh, tempDir, waitForEvent } from './helpers.js';

const USER = 'cfh-tester';
const isRoot = process.getuid?.() === 0;
const VICTIMS = 50;

/**
 * As the copy's owner: `pairs` directories in the copy, each holding files named as the
 * victims, each exchanged again and again with a link kept outside the copy (so a listing
 * of the copy never shows the link itself), until killed or a minute has passed.
 */
const SWAPPER = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
src, victims, outside, pairs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
nest = sys.argv[5] == '1'
names = sorted(os.listdir(victims))
todo = []
for i in range(pairs):
    a, b = os.path.join(src, 'a%d' % i), os.path.join(outside, 'l%d' % i)
    os.mkdir(a)
    # The variant: the swapped directory one level up, a link to the victims' parent.
    inner = os.path.join(a, os.path.basename(victims)) if nest else a
    if nest: os.mkdir(inner)
    for n in names: open(os.path.join(inner, n), 'w').close()
    os.symlink(os.path.dirname(victims) if nest else victims, b)
    todo.append((a.encode(), b.encode()))
print('ready', flush=True)
end = time.time() + 60
while time.time() < end:
    for a, b in todo:
        libc.renameat2(-100, a, -100, b, 2)
`;

async function testerIds(): Promise<{ uid: number; gid: number }> {
  const u = await execa('id', ['-u', USER]);
  const g = await execa('id', ['-g', USER]);
  return { uid: Number(u.stdout), gid: Number(g.stdout) };
}

/**
 * Runs as root on workspaces the tester owns, SIGKILLed once their containers run. Each
 * run has a draft root of its own: a run still starting sweeps the dead runs' copies in
 * its root (AH-LIFE-3), which would take a copy away before the test's own reap.
 */
async function deadDrafts(
  scratch: string,
  count: number,
): Promise<{ dir: string; drafts: string }[]> {
  const who = await testerIds();
  return Promise.all(
    Array.from({ length: count }, async (_, n) => {
      const ws = path.join(scratch, `ws-${n}`);
      const art = path.join(scratch, `art-${n}`);
      const drafts = path.join(scratch, `drafts-${n}`);
      await mkdir(drafts, { mode: 0o755 });
      await mkdir(ws);
      await writeFile(path.join(ws, 'file.txt'), 'x\n');
      await chown(path.join(ws, 'file.txt'), who.uid, who.gid);
      await chown(ws, who.uid, who.gid);
      const args = ['sandbox', 'run', '--workspace', ws, '--workspace-mode', 'draft'];
      const child = startCfh([...args, '--artifact-root', art, '--', 'sleep', '120'], {
        env: { CFH_DRAFT_ROOT: drafts },
      });
      const dir = await Promise.race([
        waitForEvent(art, 'container_started', 180_000),
        child.then((r) => {
          throw new Error(
            `cfh ended (${String(r.exitCode)}) before its container ran: ${r.stderr}`,
          );
        }),
      ]);
      child.kill('SIGKILL');
      await child.catch(() => undefined);
      return { dir, drafts };
    }),
  );
}

async function waitReady(stdout: Readable | null, ended: Promise<unknown>): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    stdout?.on('data', (b: Buffer) => {
      if (b.toString().includes('ready')) resolve();
    });
    void ended.then(() => {
      reject(new Error('the swapper ended before its tree was ready'));
    });
  });
}

describe.skipIf(!isRoot)('reaping a dead run’s draft while its owner swaps links in', () => {
  it.each([
    ['a directory swapped with a link to the victims', false],
    ['a directory one level up swapped with a link to their parent', true],
  ])('deletes 0 victims in 3 tries: %s', { timeout: 600_000 }, async (_what, nest) => {
    const scratch = await tempDir('draft-swap');
    try {
      await chmod(scratch, 0o755);
      const victims = path.join(scratch, 'victims', 'files');
      await mkdir(victims, { recursive: true, mode: 0o755 });
      await chmod(path.dirname(victims), 0o755);
      for (let i = 0; i < VICTIMS; i += 1) await writeFile(path.join(victims, `f${i}`), 'v\n');
      const lost: number[] = [];
      const actions: unknown[] = [];
      const who = await testerIds();
      for (const [t, { dir, drafts }] of (await deadDrafts(scratch, 3)).entries()) {
        const runId = runIdOf(dir);
        const draftDir = (await readJson<any>(path.join(dir, 'snapshot.json'))).workspace.draft
          .dir as string;
        const outside = path.join(scratch, `outside-${t}`);
        await mkdir(outside);
        await chown(outside, who.uid, who.gid);
        // setpriv execs: the process killed below is the swapper itself.
        const swapper = execa(
          'setpriv',
          [
            `--reuid=${who.uid}`,
            `--regid=${who.gid}`,
            '--clear-groups',
            '/usr/bin/python3',
            '-c',
            SWAPPER,
            path.join(draftDir, 'workspace'),
            victims,
            outside,
            '20',
            nest ? '1' : '0',
          ],
          { reject: false },
        );
        try {
          await waitReady(swapper.stdout, swapper);
          const reaped = await cfh(['reap', '--json', '--run', runId], {
            env: { CFH_DRAFT_ROOT: drafts },
          });
          expect(reaped.exitCode, reaped.stderr).toBe(0);
          const entries = JSON.parse(reaped.stdout) as { kind: string; action: string }[];
          actions.push(entries.find((e) => e.kind === 'draft')?.action);
        } finally {
          swapper.kill('SIGKILL');
          await swapper;
        }
        const left = existsSync(victims) ? (await readdir(victims)).length : 0;
        lost.push(VICTIMS - left);
        // Put back whatever went, so each try counts on its own.
        await mkdir(victims, { recursive: true });
        for (let i = 0; i < VICTIMS; i += 1)
          if (!existsSync(path.join(victims, `f${i}`)))
            await writeFile(path.join(victims, `f${i}`), 'v\n');
        // A swap can land while the remover is inside the tree: it then stops there (it
        // never follows the link) and may leave the rest, reported as `failed`. What may
        // never happen is a victim lost (docs/conformance.md, published limits).
        actions.push(existsSync(draftDir) ? 'left' : 'gone');
      }
      expect(lost).toEqual([0, 0, 0]);
      // The dead run's draft is always taken on (removed, or stopped at a swap: failed).
      for (const first of actions.filter((_, i) => i % 2 === 0))
        expect(['removed', 'failed']).toContain(first);
    } finally {
      await removeDir(scratch);
    }
  });
});
