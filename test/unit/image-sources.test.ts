// Images and toolchains (docs/operators.md): every spelling of the same content names the
// same content-addressed tag, a different content a different one, and a missing image is
// named with the command that builds THAT image (AH-DIAG-1: the error says what to do).
// Pure logic: the engine side is in integration/image.test.ts.
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { ProfileFile } from '../../src/config/profile-schema.js';
import { loadRecipe } from '../../src/image/recipe.js';
import { missingImageMessage, resolveImage } from '../../src/image/source.js';
import { PACKAGE_SETS, toolchainRecipe } from '../../src/image/toolchain.js';
import { readContext } from '../../src/image/context-pack.js';

/** Temporary directories of this file, removed after it (nothing left behind). */
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});
function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

const base = loadRecipe();
const cwd = os.tmpdir();

describe('toolchain tags are content-addressed', () => {
  it('names one tag for one content however it is spelled', () => {
    const a = toolchainRecipe(base, { sets: ['node', 'make'], packages: [] });
    const b = toolchainRecipe(base, { sets: ['make', 'node', 'make'], packages: [] });
    const c = toolchainRecipe(base, { sets: [], packages: ['npm', 'make', 'nodejs'] });
    const d = resolveImage('toolchain:make,node', { baseDir: cwd });
    const e = resolveImage({ with: ['node'], packages: ['make'] }, { baseDir: cwd });
    expect(a.ref).toMatch(/^cfh-toolchain:t-[0-9a-f]{16}$/);
    expect(new Set([a.ref, b.ref, c.ref, d.ref, e.ref]).size).toBe(1);
  });

  it('names another tag for other content, and never the base recipe tag', () => {
    const a = toolchainRecipe(base, { sets: ['make'], packages: [] });
    const b = toolchainRecipe(base, { sets: ['make'], packages: ['jq'] });
    const c = toolchainRecipe(base, { sets: ['gcc'], packages: [] });
    expect(new Set([a.ref, b.ref, c.ref, base.ref]).size).toBe(4);
    // A package already in the base is no new content.
    expect(toolchainRecipe(base, { sets: ['make'], packages: ['git'] }).ref).toBe(a.ref);
  });

  it('installs the base packages and every package of the sets', () => {
    const t = toolchainRecipe(base, { sets: ['python-dev', 'gcc'], packages: [] });
    for (const p of [...base.recipe.packages, ...(PACKAGE_SETS['python-dev'] ?? []), 'gcc'])
      expect(t.recipe.packages).toContain(p);
  });

  it('refuses a set it does not publish, naming the ones it does', () => {
    expect(() => resolveImage('toolchain:nodejs', { baseDir: cwd })).toThrow(
      /no package set 'nodejs'; the sets are .*make, node/,
    );
  });
});

describe('a missing image is named with the command for that image', () => {
  it('a toolchain: its sets and packages', () => {
    const image = resolveImage({ with: ['node', 'make'] }, { baseDir: cwd });
    expect(missingImageMessage(image)).toBe(
      `image ${image.ref} is missing; run cfh image build --with make,node`,
    );
    const pk = resolveImage({ packages: ['jq'], with: ['make'] }, { baseDir: cwd });
    expect(missingImageMessage(pk)).toMatch(/run cfh image build --with make --packages jq$/);
  });

  it('the base recipe: cfh image build', () => {
    expect(missingImageMessage(resolveImage('builtin:sandbox', { baseDir: cwd }))).toBe(
      `image ${base.ref} is missing; run cfh image build`,
    );
  });

  it('a local reference: not in the engine, and cfh never pulls', () => {
    const message = missingImageMessage(resolveImage('debian:bookworm', { baseDir: cwd }));
    expect(message).toMatch(/^image debian:bookworm is not in the engine, and cfh never pulls/);
    expect(message).not.toMatch(/cfh image build/);
  });

  it('a Dockerfile: its build, by profile when a profile named it', () => {
    const dir = tempDir('cfh-img-unit-');
    writeFileSync(path.join(dir, 'Dockerfile'), 'FROM scratch\n');
    const source = { dockerfile: 'Dockerfile', context: '.' };
    const bare = resolveImage(source, { baseDir: dir });
    expect(missingImageMessage(bare)).toBe(
      `image ${bare.ref} is missing; run cfh image build --dockerfile ${dir}/Dockerfile --context ${dir}`,
    );
    const byProfile = resolveImage(source, { baseDir: dir, profileRef: './p.yaml' });
    expect(missingImageMessage(byProfile)).toMatch(/run cfh image build --profile \.\/p\.yaml$/);
  });
});

describe("a profile's image: takes each documented form", () => {
  it('parses a reference, a toolchain and a Dockerfile, and refuses a mix', () => {
    for (const image of [
      'builtin:sandbox',
      'toolchain:node',
      'localhost/mine:1',
      { with: ['node'] },
      { packages: ['jq'] },
      { dockerfile: 'D', context: '.', args: { BASE: 'x' } },
    ])
      expect(ProfileFile.safeParse({ image }).success).toBe(true);
    for (const image of [
      {},
      { with: [] },
      { with: ['node'], dockerfile: 'D', context: '.' },
      { packages: ['Bad Name'] },
      { dockerfile: 'D' },
    ])
      expect(ProfileFile.safeParse({ image }).success).toBe(false);
  });
});

describe('a Dockerfile context holds regular files and directories only', () => {
  function context(): string {
    const dir = tempDir('cfh-ctx-unit-');
    mkdirSync(path.join(dir, 'sub'));
    writeFileSync(path.join(dir, 'sub', 'a.txt'), 'a');
    writeFileSync(path.join(dir, 'b.txt'), 'b');
    return dir;
  }

  it('is deterministic and changes with any content', () => {
    const one = context();
    const two = context();
    expect(readContext(one).digest).toBe(readContext(two).digest);
    writeFileSync(path.join(two, 'sub', 'a.txt'), 'A');
    expect(readContext(one).digest).not.toBe(readContext(two).digest);
  });

  it('refuses a link leaving the context, a link staying in it, and a FIFO', () => {
    const out = context();
    symlinkSync('/etc/passwd', path.join(out, 'sub', 'passwd'));
    expect(() => readContext(out)).toThrow(/passwd is a symbolic link/);
    const inside = context();
    symlinkSync('b.txt', path.join(inside, 'c.txt'));
    expect(() => readContext(inside)).toThrow(/c\.txt is a symbolic link/);
    const dirLink = context();
    symlinkSync('/etc', path.join(dirLink, 'etc'));
    expect(() => readContext(dirLink)).toThrow(/etc is a symbolic link/);
    const fifo = context();
    execFileSync('mkfifo', [path.join(fifo, 'pipe')]);
    expect(() => readContext(fifo)).toThrow(/pipe is not a regular file or directory/);
  });

  it('refuses a context that is itself a link', () => {
    const real = context();
    const link = path.join(tempDir('cfh-ctx-unit-'), 'ctx');
    symlinkSync(real, link);
    expect(() => readContext(link)).toThrow(/is not a directory \(a link is not followed\)/);
  });

  it('is bounded in bytes and entries', () => {
    const dir = context();
    writeFileSync(path.join(dir, 'big'), Buffer.alloc(2048));
    expect(() => readContext(dir, { maxBytes: 1024, maxEntries: 100, maxDepth: 8 })).toThrow(
      /larger than 1024 bytes/,
    );
    expect(() => readContext(dir, { maxBytes: 1 << 20, maxEntries: 2, maxDepth: 8 })).toThrow(
      /more than 2 entries/,
    );
  });

  it('drops set-id bits and world-write from what reaches the image', () => {
    const dir = context();
    writeFileSync(path.join(dir, 'tool'), '#!/bin/sh\n', { mode: 0o6777 });
    execFileSync('chmod', ['6777', path.join(dir, 'tool')]);
    const entry = readContext(dir).entries.find((e) => e.name === 'tool');
    expect(entry?.mode).toBe(0o755);
  });
});
