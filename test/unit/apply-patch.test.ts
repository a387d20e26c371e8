// The commit of a draft's patch to a host tree (governance extension, "Draft vs commit
// policy"): all or nothing. A real file system under a temp directory; the only fake is a
// CommitFs that fails one chosen step, to prove every earlier step is undone.
import { createHash } from 'node:crypto';
import { lstatSync } from 'node:fs';
import {
  chmod,
  copyFile,
  link,
  mkdir,
  mkdtemp,
  open,
  readFile,
  rm,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkspaceError } from '../../src/errors.js';
import {
  NODE_COMMIT_FS,
  appliedMode,
  applyPatch,
  type CommitFs,
} from '../../src/workspace/apply-patch.js';
import { copyTree } from '../../src/workspace/copy-tree.js';
import { diffTrees, neededBlobs, type PatchChange } from '../../src/workspace/patch.js';
import { listTree } from '../../src/workspace/walk.js';
import { patchableState, treeState } from '../fixtures/tree-state.js';

const signal = new AbortController().signal;
let tmp = '';
let host = '';
let draft = '';
let blobs = '';

beforeEach(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-apply-'));
  host = path.join(tmp, 'host');
  draft = path.join(tmp, 'draft');
  blobs = path.join(tmp, 'blobs');
  await mkdir(path.join(host, 'src', 'deep'), { recursive: true });
  await mkdir(path.join(host, 'old-dir'));
  await mkdir(blobs);
  await writeFile(path.join(host, 'README'), 'readme\n');
  await writeFile(path.join(host, 'src', 'a.c'), 'int a;\n');
  await writeFile(path.join(host, 'src', 'b.c'), 'int b;\n');
  await writeFile(path.join(host, 'src', 'deep', 'z.c'), 'int z;\n');
  await writeFile(path.join(host, 'old-dir', 'gone'), 'gone\n');
  await writeFile(path.join(host, 'script'), 'echo hi\n');
  await chmod(path.join(host, 'src', 'b.c'), 0o600);
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Copies host → draft, lets `edit` change the draft, returns the patch's changes. */
async function draftPatch(edit: () => Promise<void>): Promise<PatchChange[]> {
  await mkdir(draft, { mode: 0o700 });
  const baseline = await copyTree(host, draft, { signal });
  await edit();
  const end = await listTree(draft, { signal });
  const changes = diffTrees(baseline.entries, end.entries);
  // The run keeps the new contents content-addressed; so does this test.
  for (const e of end.entries) {
    if (e.sha256 !== undefined && neededBlobs(changes).includes(e.sha256))
      await copyFile(path.join(draft, e.path), path.join(blobs, e.sha256)).catch(() => undefined);
  }
  return changes;
}

const standardEdits = async (): Promise<void> => {
  await writeFile(path.join(draft, 'src', 'a.c'), 'int a = 1;\n');
  await writeFile(path.join(draft, 'src', 'b.c'), 'int b = 2;\n');
  await unlink(path.join(draft, 'README'));
  await rm(path.join(draft, 'old-dir'), { recursive: true });
  await mkdir(path.join(draft, 'new', 'nested'), { recursive: true });
  await writeFile(path.join(draft, 'new', 'nested', 'n.c'), 'int n;\n');
  await writeFile(path.join(draft, 'blob.bin'), Buffer.from([0, 1, 2, 255]));
  await chmod(path.join(draft, 'script'), 0o4755);
  await symlink('/etc/passwd', path.join(draft, 'evil-link'));
};

function apply(
  changes: PatchChange[],
  extra: { fs?: CommitFs; record?: () => Promise<void> } = {},
) {
  return applyPatch({
    root: host,
    changes,
    openBlob: (sha) => open(path.join(blobs, sha), 'r'),
    record: extra.record ?? (() => Promise.resolve()),
    signal,
    ...(extra.fs === undefined ? {} : { fs: extra.fs }),
  });
}

async function refused(p: Promise<unknown>, code: string): Promise<WorkspaceError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkspaceError);
  expect((error as WorkspaceError).code).toBe(code);
  return error as WorkspaceError;
}

describe('applyPatch', () => {
  it("makes the host equal the draft's end state, symlinks and set-id bits excepted", async () => {
    const changes = await draftPatch(standardEdits);
    const result = await apply(changes);
    expect(result.applied.length).toBeGreaterThan(5);
    const { 'evil-link': link, ...draftRest } = treeState(draft);
    expect(link).toContain('/etc/passwd');
    expect(patchableState(treeState(host))).toEqual(patchableState(draftRest));
    expect(lstatSync(path.join(host, 'evil-link'), { throwIfNoEntry: false })).toBeUndefined();
    // Executable bit carried, set-uid never; a modified file keeps its host bits.
    expect(lstatSync(path.join(host, 'script')).mode & 0o7777).toBe(0o755);
    expect(lstatSync(path.join(host, 'src', 'b.c')).mode & 0o7777).toBe(0o600);
    expect(await readFile(path.join(host, 'blob.bin'))).toEqual(Buffer.from([0, 1, 2, 255]));
    // Nothing of the apply's own is left in the workspace.
    expect(Object.keys(treeState(host)).some((p) => p.startsWith('.cfh-apply'))).toBe(false);
  });

  it('a mode change to a hard-linked file never reaches its other links (outside the workspace)', async () => {
    const outside = path.join(tmp, 'store', 'shared');
    await mkdir(path.dirname(outside));
    await writeFile(outside, 'echo shared\n', { mode: 0o644 });
    await rm(path.join(host, 'script'));
    await link(outside, path.join(host, 'script'));
    const changes = await draftPatch(() => chmod(path.join(draft, 'script'), 0o755));
    expect(changes.map((c) => [c.path, c.kind])).toEqual([['script', 'mode']]);
    await apply(changes);
    expect(lstatSync(outside).mode & 0o7777).toBe(0o644);
    expect(lstatSync(outside).nlink).toBe(1);
    expect(lstatSync(path.join(host, 'script')).mode & 0o7777).toBe(0o755);
    expect(await readFile(path.join(host, 'script'), 'utf8')).toBe('echo shared\n');
  });

  it('refuses, changing nothing, when a file the patch touches changed on the host', async () => {
    const changes = await draftPatch(standardEdits);
    await writeFile(path.join(host, 'src', 'a.c'), 'int a; // edited on the host\n');
    const before = treeState(host);
    const e = await refused(apply(changes), 'host_changed');
    expect(e.message).toContain('src/a.c');
    expect(treeState(host)).toEqual(before);
  });

  it('refuses when a path the patch adds exists on the host now', async () => {
    const changes = await draftPatch(standardEdits);
    await writeFile(path.join(host, 'blob.bin'), 'mine');
    const before = treeState(host);
    await refused(apply(changes), 'host_changed');
    expect(treeState(host)).toEqual(before);
  });

  it('refuses a host executable-bit change and a new file in a directory the patch removes', async () => {
    const changes = await draftPatch(standardEdits);
    await chmod(path.join(host, 'src', 'a.c'), 0o755);
    await writeFile(path.join(host, 'old-dir', 'new-on-host'), 'x');
    const e = await refused(apply(changes), 'host_changed');
    expect(e.message).toContain('executable bit');
    expect(e.message).toContain('old-dir/new-on-host');
  });

  it('never writes through a host symlink on the way to a path (the draft replaced it with a directory)', async () => {
    const outside = path.join(tmp, 'outside');
    await mkdir(outside);
    await symlink(outside, path.join(host, 'lib'));
    const changes = await draftPatch(async () => {
      await unlink(path.join(draft, 'lib'));
      await mkdir(path.join(draft, 'lib'));
      await writeFile(path.join(draft, 'lib', 'planted'), 'owned\n');
    });
    // The link's replacement is a symlink change (never applied), and what the run put in
    // the directory is listed below it, not applied (one model: diff and apply agree).
    expect(changes.filter((c) => c.path.startsWith('lib')).map((c) => c.applicable)).toEqual([
      false,
      false,
    ]);
    const before = treeState(host);
    await apply(changes);
    expect(treeState(outside)).toEqual({});
    expect(treeState(host)).toEqual(before);
    // Were the additions marked applicable (a patch of an older cfh), the host link stops them.
    const forced = changes.map((c) => (c.path === 'lib/planted' ? { ...c, applicable: true } : c));
    const e = await refused(apply(forced), 'host_changed');
    expect(e.message).toMatch(/lib/);
    expect(treeState(outside)).toEqual({});
    expect(treeState(host)).toEqual(before);
  });

  for (const failAt of [1, 3, 6, 9]) {
    it(`undoes every done step when step ${failAt} of the commit fails`, async () => {
      const changes = await draftPatch(standardEdits);
      const before = treeState(host);
      let calls = 0;
      const failing: CommitFs = Object.fromEntries(
        Object.entries(NODE_COMMIT_FS).map(([name, fn]) => [
          name,
          async (...args: unknown[]) => {
            calls += 1;
            if (calls === failAt) throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
            await (fn as (...a: unknown[]) => Promise<void>)(...args);
          },
        ]),
      ) as unknown as CommitFs;
      const e = await refused(apply(changes, { fs: failing }), 'apply_failed');
      expect(e.message).toContain('injected');
      expect(calls).toBeGreaterThanOrEqual(failAt);
      expect(treeState(host)).toEqual(before);
    });
  }

  it('undoes everything when the record (the applied event) fails', async () => {
    const changes = await draftPatch(standardEdits);
    const before = treeState(host);
    await refused(
      apply(changes, { record: () => Promise.reject(new Error('event log full')) }),
      'apply_failed',
    );
    expect(treeState(host)).toEqual(before);
  });

  it('refuses new contents that do not match the patch (a swapped blob)', async () => {
    const changes = await draftPatch(standardEdits);
    const sha = createHash('sha256').update('int a = 1;\n').digest('hex');
    await writeFile(path.join(blobs, sha), 'int a = 666;\n');
    const before = treeState(host);
    await refused(apply(changes), 'patch_blob_mismatch');
    expect(treeState(host)).toEqual(before);
  });
});

describe('appliedMode', () => {
  it("keeps the host's bits, sets or clears only the executable ones, never set-id", () => {
    expect(appliedMode(undefined, false)).toBe(0o644);
    expect(appliedMode(undefined, true)).toBe(0o755);
    expect(appliedMode(0o640, true)).toBe(0o750);
    expect(appliedMode(0o4755, false)).toBe(0o644);
    expect(appliedMode(0o6700, true)).toBe(0o700);
  });
});
