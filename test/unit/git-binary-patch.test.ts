// `runs diff --binary` (patch-text.ts with gitBinary, git-binary.ts): the patch the host's
// own `git apply` takes whole, binary changes included, byte for byte; a preimage that is
// not the baseline is refused by git, not overwritten; changes cfh does not apply are left
// out. Pure rendering; the check is the real git of this machine, outside any repository.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile, lstat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gitBlobId } from '../../src/workspace/git-binary.js';
import type { PatchChange, PatchSide } from '../../src/workspace/patch.js';
import { renderPatch } from '../../src/workspace/patch-text.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-gitbin-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const side = (b: Buffer, mode = 0o644): PatchSide => ({
  type: 'file',
  mode,
  size: b.length,
  sha256: sha(b),
});

interface Case {
  readonly path: string;
  readonly before: Buffer | null;
  readonly after: Buffer | null;
}

async function patchOf(cases: readonly Case[], extra: PatchChange[] = []): Promise<string> {
  const blobs = new Map<string, Buffer>();
  const changes: PatchChange[] = cases.map((c) => {
    for (const b of [c.before, c.after]) if (b !== null) blobs.set(sha(b), b);
    return {
      path: c.path,
      kind: c.before === null ? 'added' : c.after === null ? 'removed' : 'modified',
      before: c.before === null ? null : side(c.before),
      after: c.after === null ? null : side(c.after),
      applicable: true,
    };
  });
  const rendered = await renderPatch(
    [...changes, ...extra],
    (c, which) => {
      const s = which === 'before' ? c.before : c.after;
      return Promise.resolve(blobs.get(s?.sha256 ?? '') ?? Buffer.alloc(0));
    },
    64 * 1024 * 1024,
    { gitBinary: true },
  );
  expect(rendered.missing).toEqual([]);
  return rendered.text;
}

function gitApply(cwd: string, patch: string): { status: number | null; stderr: string } {
  const r = spawnSync('git', ['apply', '--whitespace=nowarn', '-'], { cwd, input: patch });
  return { status: r.status, stderr: r.stderr.toString() };
}

describe('runs diff --binary: git apply takes it whole', () => {
  it('binary modified, added and removed, a large text file and a text edit: byte-exact', async () => {
    const ws = await mkdtemp(path.join(dir, 'ws-'));
    const cases: Case[] = [
      { path: 'img.bin', before: randomBytes(3000), after: randomBytes(5000) },
      { path: 'new.bin', before: null, after: Buffer.from([0, 1, 2, 255, 0, 10]) },
      { path: 'gone.bin', before: Buffer.from([0, 0, 7]), after: null },
      // Not UTF-8, no NUL: binary to cfh, and to git only through the binary patch.
      {
        path: 'latin1.txt',
        before: Buffer.from('caf\xe9\n', 'latin1'),
        after: Buffer.from('th\xe9\n', 'latin1'),
      },
      {
        path: 'big.txt',
        before: Buffer.alloc(1_100_000, 'a'),
        after: Buffer.alloc(1_200_000, 'b'),
      },
      { path: 'notes.txt', before: Buffer.from('one\ntwo\n'), after: Buffer.from('one\n2\n') },
      { path: 'empty.bin', before: Buffer.from([0]), after: Buffer.alloc(0) },
    ];
    for (const c of cases) if (c.before !== null) await writeFile(path.join(ws, c.path), c.before);
    const text = await patchOf(cases);
    expect(text).toMatch(/^GIT binary patch$/m);
    const img = cases[0];
    expect(text).toContain(
      `index ${gitBlobId(img?.before ?? Buffer.alloc(0))}..${gitBlobId(img?.after ?? Buffer.alloc(0))}`,
    );
    const r = gitApply(ws, text);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    for (const c of cases) {
      const at = path.join(ws, c.path);
      if (c.after === null) await expect(lstat(at)).rejects.toThrow();
      else expect((await readFile(at)).equals(c.after)).toBe(true);
    }
  });

  it('variant: a host file that is not the baseline is refused by git, nothing written', async () => {
    const ws = await mkdtemp(path.join(dir, 'ws-'));
    const before = randomBytes(100);
    const after = randomBytes(100);
    await writeFile(path.join(ws, 'a.bin'), randomBytes(100));
    const text = await patchOf([{ path: 'a.bin', before, after }]);
    const r = gitApply(ws, text);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/does not match/);
    expect((await readFile(path.join(ws, 'a.bin'))).equals(after)).toBe(false);
  });

  it('a change cfh does not apply (a symlink) is named, not given to git', async () => {
    const ws = await mkdtemp(path.join(dir, 'ws-'));
    const link: PatchChange = {
      path: 'evil',
      kind: 'symlink',
      before: null,
      after: { type: 'symlink', mode: 0o777, target: '/etc/passwd' },
      applicable: false,
      note: 'symlink',
    };
    const text = await patchOf(
      [{ path: 'x.bin', before: null, after: Buffer.from([0, 9]) }],
      [link],
    );
    expect(text).toMatch(/^# not applied by cfh runs apply, left out: evil/m);
    expect(gitApply(ws, text).status).toBe(0);
    await expect(lstat(path.join(ws, 'evil'))).rejects.toThrow();
    // The same blob id git computes for these bytes.
    expect(gitBlobId(Buffer.from([0, 9]))).toBe(
      execFileSync('git', ['hash-object', '--stdin'], { input: Buffer.from([0, 9]) })
        .toString()
        .trim(),
    );
  });
});
