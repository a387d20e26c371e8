// The compile cache holds code Node runs: it is used only from a directory no one else can
// write or swap.
import { chmodSync, mkdtempSync, mkdirSync, symlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compileCacheDir, privateDirectory } from '../../src/cli/compile-cache.js';

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

describe('compile cache directory', () => {
  const root = tempDir('cfh-cc-');

  it("lives in cfh's own package, as writable as its code, never $HOME or the temp directory", () => {
    expect(compileCacheDir('file:///opt/cfh/dist/cli/compile-cache.js')).toBe(
      '/opt/cfh/node_modules/.cache/cfh-compile',
    );
  });

  it('is created private', () => {
    expect(privateDirectory(path.join(root, 'a', 'cache'))).toBe(true);
  });

  it('is refused when others may write it', () => {
    const open = path.join(root, 'open');
    mkdirSync(open, { mode: 0o777 });
    chmodSync(open, 0o777);
    expect(privateDirectory(open)).toBe(false);
  });

  it('is refused through a symbolic link', () => {
    const real = path.join(root, 'real');
    mkdirSync(real, { mode: 0o700 });
    symlinkSync(real, path.join(root, 'link'));
    expect(privateDirectory(path.join(root, 'link'))).toBe(false);
  });
});
