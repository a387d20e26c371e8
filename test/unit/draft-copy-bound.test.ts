// A draft copy is bounded (AH-CONT-5): a workspace, or a sparse file planted in it (a few KiB
// on disk, terabytes when read), must not fill the host's disk before the command starts.
// The copy stops at its bound with `draft_too_large`; the bound is CFH_DRAFT_MAX_BYTES
// (8 GiB by default), parsed at planning.
import { mkdir, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { execSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, WorkspaceError } from '../../src/errors.js';
import { DRAFT_MAX_BYTES, planDraft } from '../../src/sandbox/draft-root.js';
import { copyTree } from '../../src/workspace/copy-tree.js';
import { workspaceMountOf } from './helpers.js';

const signal = new AbortController().signal;
let tmp = '';
beforeEach(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-draft-bound-'));
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('the draft copy is bounded', () => {
  it('stops at its bound on a sparse file, having copied nothing of it', async () => {
    const ws = path.join(tmp, 'ws');
    const dest = path.join(tmp, 'copy');
    await mkdir(ws);
    await mkdir(dest);
    await writeFile(path.join(ws, 'small'), 'x'.repeat(1000));
    const sparse = await open(path.join(ws, 'sparse'), 'w');
    await sparse.truncate(64 * 1024 ** 3);
    await sparse.close();
    const error = await copyTree(ws, dest, { signal, maxBytes: 1024 ** 2 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkspaceError);
    expect((error as WorkspaceError).code).toBe('draft_too_large');
    expect((error as WorkspaceError).message).toContain('sparse');
    // Nothing of the sparse file's size was written.
    expect(
      Number(
        execSync(`du -sk ${JSON.stringify(dest)}`)
          .toString()
          .split('\t')[0],
      ),
    ).toBeLessThan(1024);
  });

  it('copies a tree within its bound, and counts every byte', async () => {
    const ws = path.join(tmp, 'ws');
    const dest = path.join(tmp, 'copy');
    await mkdir(ws);
    await mkdir(dest);
    await writeFile(path.join(ws, 'a'), 'x'.repeat(600));
    await writeFile(path.join(ws, 'b'), 'y'.repeat(400));
    expect((await copyTree(ws, dest, { signal, maxBytes: 1000 })).bytes).toBe(1000);
    const over = path.join(tmp, 'copy2');
    await mkdir(over);
    await expect(copyTree(ws, over, { signal, maxBytes: 999 })).rejects.toMatchObject({
      code: 'draft_too_large',
    });
  });

  it('takes its bound from CFH_DRAFT_MAX_BYTES, 8 GiB by default, and refuses a bad one', async () => {
    const ws = path.join(tmp, 'ws');
    await mkdir(ws);
    const host = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const user = {
      user: `${String(host.uid)}:${String(host.gid)}`,
      reason: 'invoking-user' as const,
    };
    const plan = (max?: string) =>
      planDraft(workspaceMountOf(ws), os.tmpdir(), [], path.join(tmp, 'art'), user, host, max);
    expect(plan().maxBytes).toBe(DRAFT_MAX_BYTES);
    expect(plan('2g').maxBytes).toBe(2 * 1024 ** 3);
    expect(() => plan('lots')).toThrow(ConfigError);
    expect(() => plan('lots')).toThrow(/CFH_DRAFT_MAX_BYTES/);
  });
});
