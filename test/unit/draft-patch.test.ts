// The patch of a draft run, computed (governance extension, "Draft vs commit policy"):
// the tree copy and its baseline, the changes between two trees, the unified diff (checked
// by GNU patch applying it), binary and symlink changes listed and not inlined.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyTree } from '../../src/workspace/copy-tree.js';
import { changeOp, diffTrees, neededBlobs, summarize } from '../../src/workspace/patch.js';
import {
  isBinary,
  quote,
  renderPatch,
  type ContentReader,
} from '../../src/workspace/patch-text.js';
import type { TreeEntry } from '../../src/workspace/tree.js';
import { MAX_EDITS, unifiedHunks } from '../../src/workspace/unified-diff.js';
import { listTree } from '../../src/workspace/walk.js';
import { treeState } from '../fixtures/tree-state.js';

const signal = new AbortController().signal;
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const file = (p: string, body: string, mode = 0o644): TreeEntry => ({
  path: p,
  type: 'file',
  mode,
  size: Buffer.byteLength(body),
  sha256: sha(body),
});
const dir = (p: string, mode = 0o755): TreeEntry => ({ path: p, type: 'directory', mode });
const link = (p: string, target: string): TreeEntry => ({
  path: p,
  type: 'symlink',
  mode: 0o777,
  target,
});

let tmp = '';
beforeEach(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-patch-'));
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('diffTrees', () => {
  it('lists added, modified, removed and mode changes in path order, symlinks never applicable', () => {
    const before = [
      file('a.txt', 'a\n'),
      file('b.txt', 'b\n'),
      dir('d'),
      file('d/x', 'x', 0o644),
      file('run.sh', 'echo', 0o644),
      link('l', 'a.txt'),
    ];
    const after = [
      file('a.txt', 'A\n'),
      file('c.txt', 'c\n'),
      dir('d', 0o700),
      file('d/x', 'x', 0o600),
      file('run.sh', 'echo', 0o755),
      link('l', '/etc/passwd'),
      link('new-link', '/'),
    ];
    const changes = diffTrees(before, after);
    expect(changes.map((c) => [c.path, c.kind, c.applicable])).toEqual([
      ['a.txt', 'modified', true],
      ['b.txt', 'removed', true],
      ['c.txt', 'added', true],
      // d's own mode and d/x's non-executable bits are not carried: nothing to do there
      ['l', 'symlink', false],
      ['new-link', 'symlink', false],
      ['run.sh', 'mode', true],
    ]);
    expect(summarize(changes)).toEqual({
      added: 1,
      modified: 1,
      removed: 1,
      mode: 1,
      notApplied: 2,
    });
    expect(neededBlobs(changes).sort()).toEqual([sha('A\n'), sha('c\n')].sort());
  });

  it('turns a type change into a removal then an addition at the same path', () => {
    const changes = diffTrees(
      [file('p', 'file'), dir('q'), file('q/inner', 'i')],
      [dir('p'), file('p/inner', 'i'), file('q', 'now a file')],
    );
    expect(changes.map((c) => [c.path, c.kind, (c.after ?? c.before)?.type])).toEqual([
      ['p', 'removed', 'file'],
      ['p', 'added', 'directory'],
      ['p/inner', 'added', 'file'],
      ['q', 'removed', 'directory'],
      ['q', 'added', 'file'],
      ['q/inner', 'removed', 'file'],
    ]);
  });

  it('a file replaced by a symlink is one symlink change, not applied', () => {
    const changes = diffTrees([file('p', 'x')], [link('p', '/etc/shadow')]);
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ kind: 'symlink', applicable: false });
  });
});

describe('files too large to read', () => {
  it('are listed by size, never applied, and need no kept contents', async () => {
    const big = { path: 'big', type: 'file' as const, mode: 0o644, size: 2 ** 40 };
    const changes = diffTrees(
      [file('small', 's'), file('dir-now-big', 'x')],
      [big, { ...big, path: 'small' }],
    );
    expect(changes.map((c) => [c.path, c.kind, c.applicable])).toEqual([
      ['big', 'added', false],
      ['dir-now-big', 'removed', true],
      ['small', 'modified', false],
    ]);
    expect(neededBlobs(changes)).toEqual([]);
    // The walk lists such a file without opening it.
    await writeFile(path.join(tmp, 'sparse'), '');
    execFileSync('truncate', ['-s', '1T', path.join(tmp, 'sparse')]);
    const listing = await listTree(tmp, { signal, mayHash: (_p, size) => size < 2 ** 30 });
    expect(listing.entries.find((e) => e.path === 'sparse')).toEqual({
      path: 'sparse',
      type: 'file',
      mode: expect.any(Number),
      size: 2 ** 40,
    });
  });
});

describe('unifiedHunks', () => {
  async function roundTrip(oldText: string, newText: string): Promise<string> {
    const target = path.join(tmp, 'f');
    await writeFile(target, oldText);
    const hunks = unifiedHunks(oldText, newText);
    // Equal texts: no hunk at all (GNU patch would call a header-only patch garbage).
    if (hunks.length === 0) return oldText;
    const body = ['--- a/f', '+++ b/f', ...hunks].join('\n') + '\n';
    execFileSync('patch', ['--quiet', '--force', target], { input: body });
    return readFile(target, 'utf8');
  }

  it('produces hunks GNU patch applies, for edits anywhere and missing final newlines', async () => {
    const base = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const cases: [string, string][] = [
      [base, base.replace('line 3\n', 'LINE 3\n').replace('line 30\n', '')],
      [base, `${base}tail without newline`],
      ['no newline', 'no newline\n'],
      ['a\nb\nc', 'a\nB\nc'],
      [base, 'entirely\nnew\n'],
      ['', 'new file\n'],
    ];
    for (const [a, b] of cases) expect(await roundTrip(a, b)).toBe(b);
  });

  it('matches random edits of random texts', async () => {
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 30; round += 1) {
      const lines = Array.from({ length: 5 + rnd(60) }, () => `w${rnd(8)}`);
      const edited = [...lines];
      for (let e = rnd(12); e > 0; e -= 1) {
        const at = rnd(edited.length + 1);
        if (rnd(2) === 0) edited.splice(at, 1);
        else edited.splice(at, 0, `n${rnd(5)}`);
      }
      const a = `${lines.join('\n')}\n`;
      const b = `${edited.join('\n')}${rnd(3) === 0 ? '' : '\n'}`;
      expect(await roundTrip(a, b)).toBe(b);
    }
  });

  it('stays correct past the edit bound (one replacing hunk)', async () => {
    const a = Array.from({ length: MAX_EDITS + 10 }, (_, i) => `a${i}`).join('\n') + '\n';
    const b = Array.from({ length: MAX_EDITS + 10 }, (_, i) => `b${i}`).join('\n') + '\n';
    expect(await roundTrip(a, b)).toBe(b);
  });
});

describe('renderPatch', () => {
  const contents: Record<string, Buffer> = {};
  const reader: ContentReader = (c, side) => {
    const key = `${side}:${c.path}`;
    return Promise.resolve(contents[key] ?? { unavailable: `no ${key}` });
  };

  it('inlines text, lists binary changes without their bytes, marks what apply skips', async () => {
    const bin = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3, 0xff]);
    contents['before:t.txt'] = Buffer.from('one\ntwo\n');
    contents['after:t.txt'] = Buffer.from('one\n2\n');
    contents['after:b.bin'] = bin;
    const before = [file('t.txt', 'one\ntwo\n'), link('l', 'x')];
    const after = [
      file('t.txt', 'one\n2\n'),
      { ...file('b.bin', ''), sha256: createHash('sha256').update(bin).digest('hex') },
      link('l', '/etc'),
    ];
    const rendered = await renderPatch(diffTrees(before, after), reader);
    expect(rendered.text).toContain('diff --git a/t.txt b/t.txt\n');
    expect(rendered.text).toContain('-two\n+2\n');
    expect(rendered.text).toContain('new file mode 100644');
    expect(rendered.text).toContain('Binary files /dev/null and b/b.bin differ');
    expect(rendered.text).not.toContain('ELF');
    expect(rendered.text).toMatch(
      /# not applied by cfh runs apply: symlink[^\n]*\ndiff --git a\/l b\/l/,
    );
    expect(rendered.changes.find((c) => c.path === 'b.bin')?.binary).toBe(true);
    expect(rendered.changes.find((c) => c.path === 't.txt')?.binary).toBe(false);
  });

  // One model of the change set: each kind of change, as the diff renders it, as
  // changeOp names it (what `runs diff`/`runs apply` list and apply performs), and whether
  // it is applied, must say the same thing.
  const KINDS: {
    name: string;
    before: TreeEntry[];
    after: TreeEntry[];
    ops: string[];
    applied: boolean[];
    text: RegExp;
  }[] = [
    {
      name: 'file added',
      before: [],
      after: [file('f', 'x\n')],
      ops: ['add:file'],
      applied: [true],
      text: /new file mode 100644/,
    },
    {
      name: 'file removed',
      before: [file('f', 'x\n')],
      after: [],
      ops: ['delete:file'],
      applied: [true],
      text: /deleted file mode 100644/,
    },
    {
      name: 'file modified',
      before: [file('f', 'x\n')],
      after: [file('f', 'y\n')],
      ops: ['modify'],
      applied: [true],
      text: /-x\n\+y/,
    },
    {
      name: 'mode change',
      before: [file('f', 'x\n')],
      after: [file('f', 'x\n', 0o755)],
      ops: ['mode'],
      applied: [true],
      text: /old mode 100644\nnew mode 100755/,
    },
    {
      name: 'directory added',
      before: [],
      after: [dir('d')],
      ops: ['add:directory'],
      applied: [true],
      text: /# directory added: d\//,
    },
    {
      name: 'directory removed',
      before: [dir('d')],
      after: [],
      ops: ['delete:directory'],
      applied: [true],
      text: /# directory removed: d\//,
    },
    {
      name: 'symlink added',
      before: [],
      after: [link('l', 't')],
      ops: ['add:symlink'],
      applied: [false],
      text: /new file mode 120000/,
    },
    {
      name: 'symlink removed',
      before: [link('l', 't')],
      after: [],
      ops: ['delete:symlink'],
      applied: [false],
      text: /deleted file mode 120000/,
    },
    {
      name: 'symlink retargeted',
      before: [link('l', 't')],
      after: [link('l', 'u')],
      ops: ['retarget'],
      applied: [false],
      text: /-t\n\\ No newline at end of file\n\+u/,
    },
    {
      name: 'file became a symlink',
      before: [file('l', 'x\n')],
      after: [link('l', 't')],
      ops: ['retype:file>symlink'],
      applied: [false],
      text: /old mode 100644\nnew mode 120000/,
    },
    {
      name: 'symlink became a directory, with a file in it',
      before: [link('l', 't')],
      after: [dir('l'), file('l/f', 'x\n')],
      ops: ['retype:symlink>directory', 'add:file'],
      applied: [false, false],
      text: /# symlink replaced by directory: l\n[\s\S]*# not applied[^\n]*below a directory[^\n]*\ndiff --git a\/l\/f b\/l\/f/,
    },
    {
      name: 'directory became a symlink',
      before: [dir('l')],
      after: [link('l', 't')],
      ops: ['retype:directory>symlink'],
      applied: [false],
      text: /# directory replaced by symlink: l/,
    },
  ];

  it.each(KINDS)('$name: the diff, the change list and apply agree', async (k) => {
    for (const e of k.after)
      if (e.type === 'file')
        contents[`after:${e.path}`] = Buffer.from(k.name.includes('modified') ? 'y\n' : 'x\n');
    for (const e of k.before)
      if (e.type === 'file') contents[`before:${e.path}`] = Buffer.from('x\n');
    const changes = diffTrees(k.before, k.after);
    const ops = changes.map((c) => {
      const op = changeOp(c);
      return 'type' in op
        ? `${op.op}:${op.type}`
        : 'from' in op
          ? `${op.op}:${op.from}>${op.to}`
          : op.op;
    });
    expect(ops).toEqual(k.ops);
    expect(changes.map((c) => c.applicable)).toEqual(k.applied);
    const rendered = await renderPatch(changes, reader);
    expect(rendered.text).toMatch(k.text);
    // The diff marks as not applied exactly what apply skips, and names no other operation.
    const marks = rendered.text.split('\n').filter((l) => l.startsWith('# not applied')).length;
    expect(marks).toBe(k.applied.filter((a) => !a).length);
    if (!k.ops.includes('delete:directory'))
      expect(rendered.text).not.toContain('directory removed');
    // apply takes exactly the applicable changes, and their new contents.
    expect(neededBlobs(changes).length).toBe(
      changes.filter((c) => c.applicable && c.after?.type === 'file' && c.kind !== 'mode').length,
    );
  });

  it('calls non-UTF-8, NUL-holding and oversized contents binary', () => {
    expect(isBinary(Buffer.from('plain\n'))).toBe(false);
    expect(isBinary(Buffer.from([0xc3, 0x28]))).toBe(true);
    expect(isBinary(Buffer.from('a\0b'))).toBe(true);
    expect(isBinary(Buffer.alloc(1024 * 1024 + 1, 0x61))).toBe(true);
  });
});

describe('quote', () => {
  it('shows a name the sandbox chose so it can neither hide a line nor pass for another', () => {
    expect(quote('src/plain name.c')).toBe('src/plain name.c');
    // A terminal escape that would erase the line before it, an RTL override, a newline.
    expect(quote('a\u001b[2K\rb')).toBe('"a\\u001b[2K\\rb"');
    expect(quote('evil\u202egnp.exe')).toBe('"evil\\u202egnp.exe"');
    expect(quote('two\nlines')).toBe('"two\\nlines"');
    expect(quote('café')).toBe('"caf\\u00e9"');
    expect(quote(' lead')).toBe('" lead"');
  });
});

describe('copyTree and listTree', () => {
  it('copies contents and links (never followed), drops set-id bits and special files, and records the host as it was', async () => {
    const src = path.join(tmp, 'src');
    const dest = path.join(tmp, 'dest');
    await mkdir(path.join(src, 'sub'), { recursive: true });
    await writeFile(path.join(src, 'a.txt'), 'alpha\n');
    await writeFile(path.join(src, 'sub', 'tool'), '#!/bin/sh\n');
    await chmod(path.join(src, 'sub', 'tool'), 0o4755);
    await symlink('/etc/passwd', path.join(src, 'outside'));
    execFileSync('mkfifo', [path.join(src, 'pipe')]);
    await mkdir(dest, { mode: 0o700 });
    const copy = await copyTree(src, dest, { signal });
    expect(copy.skipped).toEqual([{ path: 'pipe', reason: 'fifo' }]);
    expect(copy.entries.find((e) => e.path === 'sub/tool')).toMatchObject({ mode: 0o4755 });
    expect(lstatSync(path.join(dest, 'sub', 'tool')).mode & 0o7777).toBe(0o755);
    expect(lstatSync(path.join(dest, 'outside')).isSymbolicLink()).toBe(true);
    const state = treeState(dest);
    expect(state['a.txt']).toContain(sha('alpha\n'));
    expect(state.pipe).toBeUndefined();
    // The listing of the copy is the baseline but for the dropped bits and the FIFO.
    const listing = await listTree(dest, { signal });
    expect(listing.entries.map((e) => [e.path, e.sha256 ?? e.target ?? e.type])).toEqual(
      copy.entries.map((e) => [e.path, e.sha256 ?? e.target ?? e.type]),
    );
  });
});
