// The end of a draft: its copy is removed whatever the sandbox left in it. A tree nested
// past PATH_MAX (no path-based call reaches its bottom) and directories the sandbox made
// unwritable must not leave the copy on the host's disk. The class of the removal's own
// risk: a tree another user can change is removed by descriptor and, as root, with that
// user's authority (remove-tree.ts; the swap attack itself: draft-reap-swap.test.ts).
import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeTree } from '../../src/remove-tree.js';
import { Report } from '../../src/evidence/schema/report.js';

let tmp = '';
afterEach(async () => {
  if (tmp !== '') await execa('rm', ['-rf', '--', tmp], { reject: false });
});

describe('removeTree', () => {
  it('removes a tree nested past PATH_MAX, with unwritable directories in it', async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-rm-'));
    const draft = path.join(tmp, 'draft');
    // Made as the sandbox makes it: one relative step at a time (mkdir, chdir), 20 levels
    // of 250 characters, a file at the bottom, and a directory on the way made unwritable.
    const made = await execa('python3', [
      '-c',
      [
        'import os, sys',
        'os.mkdir(sys.argv[1]); os.chdir(sys.argv[1])',
        'for i in range(20):',
        "    os.mkdir('0' * 250); os.chdir('0' * 250)",
        "open('bottom', 'w').write('x')",
        "os.mkdir('locked'); open('locked/f', 'w').write('y'); os.chmod('locked', 0)",
        'print(len(os.getcwd()))',
      ].join('\n'),
      draft,
    ]);
    expect(Number(made.stdout.trim())).toBeGreaterThan(4096);
    // A plain recursive removal cannot do it.
    await expect(rm(draft, { recursive: true, force: true })).rejects.toThrow();
    await removeTree(draft);
    expect(existsSync(draft)).toBe(false);
    expect(existsSync(tmp)).toBe(true);
  });

  it('never follows a symbolic link out of the tree', async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-rm-'));
    const draft = path.join(tmp, 'draft');
    const outside = path.join(tmp, 'outside');
    await execa('sh', [
      '-c',
      'mkdir -p "$1/d" "$2/keep" && echo k > "$2/keep/file" && ln -s "$2" "$1/d/out" && chmod 0 "$1/d"',
      'sh',
      draft,
      outside,
    ]);
    await removeTree(draft);
    expect(existsSync(draft)).toBe(false);
    expect(existsSync(path.join(outside, 'keep', 'file'))).toBe(true);
  });
});

const isRoot = process.getuid?.() === 0;
const TESTER = 'cfh-tester';

describe.skipIf(!isRoot)('removeTree as root, of a tree another user owns', () => {
  it("removes only what the tree's owner could: root's files in it stay, and it says so", async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-rm-'));
    const uid = Number((await execa('id', ['-u', TESTER])).stdout);
    const gid = Number((await execa('id', ['-g', TESTER])).stdout);
    const tree = path.join(tmp, 'tree');
    // The user's tree, holding a directory of root's (0755) the user may not empty.
    await mkdir(path.join(tree, 'mine', 'roots'), { recursive: true });
    await writeFile(path.join(tree, 'mine', 'file'), 'u\n');
    await writeFile(path.join(tree, 'mine', 'roots', 'kept'), 'r\n');
    for (const p of [tree, path.join(tree, 'mine'), path.join(tree, 'mine', 'file')])
      await chown(p, uid, gid);
    await expect(removeTree(tree)).rejects.toMatchObject({ code: 'tree_remove_failed' });
    expect(existsSync(path.join(tree, 'mine', 'roots', 'kept'))).toBe(true);
    expect(existsSync(path.join(tree, 'mine', 'file'))).toBe(false);
  });

  it('removes a tree of the user in full, names that are not UTF-8 included', async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-rm-'));
    const tree = path.join(tmp, 'tree');
    await chmod(tmp, 0o755);
    await mkdir(tree);
    await chown(tree, Number((await execa('id', ['-u', TESTER])).stdout), 0);
    await execa('runuser', [
      '-u',
      TESTER,
      '--',
      'python3',
      '-c',
      [
        'import os, sys',
        'os.chdir(sys.argv[1])',
        "os.mkdir(b'd\\xff'); open(b'd\\xff/f\\xfe', 'w').close()",
        "os.symlink('/etc', 'etc-link'); os.chmod(b'd\\xff', 0)",
      ].join('\n'),
      tree,
    ]);
    await removeTree(tree);
    expect(existsSync(tree)).toBe(false);
    expect(existsSync('/etc/passwd')).toBe(true);
  });

  it('is a no-op on a tree already gone', async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-rm-'));
    await removeTree(path.join(tmp, 'never-made'));
  });
});

describe("a draft run's report when no patch was written", () => {
  it('is valid evidence: the audit reads it as a run without a patch, with its error', () => {
    for (const draft of [{ patch: null }, { patch: null, error: 'run_failed' }])
      expect(Report.shape.draft.safeParse(draft).success, JSON.stringify(draft)).toBe(true);
    expect(Report.shape.draft.safeParse({ patch: null, file: 'x' }).success).toBe(false);
  });
});
