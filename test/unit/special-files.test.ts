// Planning mode's FIFO search (src/sandbox/special-files.ts): a FIFO anywhere in a mount's
// tree is found and named as the sandbox sees it; symlinks are not followed.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findFifos } from '../../src/sandbox/special-files.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'cfh-fifo-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('findFifos', () => {
  it('finds a FIFO deep in a mount, by its sandbox path', () => {
    mkdirSync(path.join(dir, 'ws', 'a', 'b'), { recursive: true });
    writeFileSync(path.join(dir, 'ws', 'a', 'file'), 'x');
    execFileSync('mkfifo', [path.join(dir, 'ws', 'a', 'b', 'pipe')]);
    const check = findFifos([{ source: path.join(dir, 'ws'), target: '/workspace', mode: 'ro' }]);
    expect(check).toMatchObject({ fifos: ['/workspace/a/b/pipe'], complete: true });
  });

  it('finds none in a tree without one, and does not follow a link to one', () => {
    mkdirSync(path.join(dir, 'clean'));
    symlinkSync(path.join(dir, 'ws', 'a'), path.join(dir, 'clean', 'link'));
    const check = findFifos([{ source: path.join(dir, 'clean'), target: '/data', mode: 'ro' }]);
    expect(check).toMatchObject({ fifos: [], complete: true });
  });
});
