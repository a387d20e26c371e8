// The commit of a draft run (governance extension, "Draft vs commit policy"): a patch is
// applied to the host workspace all at once or not at all.
//
// 1. check: the host is as the run found it where the patch touches it (host-check.ts);
// 2. stage: every new file's contents are copied from the run's blob store into a private
//    staging directory at the workspace root (same file system as the targets), with the
//    mode and owner they will have, and fsynced;
// 3. commit: each step is a rename, link, mkdir, rmdir or chmod, and each done step is
//    remembered with its undo: a replaced file is kept as a hard link in the staging
//    directory, a removed one is moved there; before touching an entry the commit checks
//    it is still the one the check saw;
// 4. record: the caller's `record` (the `applied` event) runs while every undo is still
//    possible; if any step or the record fails, every done step is undone, newest first.
// Only then are the backups and the staging directory removed.
import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { WorkspaceError, errorMessage } from '../errors.js';
import { removeTree } from '../remove-tree.js';
import { OWN_AUTHORITY, type Authority } from './authority.js';
import { isExecutable } from './tree.js';
import type { PatchChange } from './patch.js';
import {
  checkHost,
  hostChangedError,
  lstatOrUndefined,
  sameEntry,
  seenOf,
  type Seen,
} from './host-check.js';
import { hashHandle } from './walk.js';

/** The file-system calls the commit makes; a test can make one fail. */
export interface CommitFs {
  rename(from: string, to: string): Promise<void>;
  link(existing: string, created: string): Promise<void>;
  unlink(file: string): Promise<void>;
  mkdir(dir: string, mode: number): Promise<void>;
  rmdir(dir: string): Promise<void>;
  chmod(file: string, mode: number): Promise<void>;
}

export const NODE_COMMIT_FS: CommitFs = {
  rename: (a, b) => fsp.rename(a, b),
  link: (a, b) => fsp.link(a, b),
  unlink: (a) => fsp.unlink(a),
  mkdir: async (d, mode) => {
    await fsp.mkdir(d, { mode });
  },
  rmdir: (d) => fsp.rmdir(d),
  chmod: (f, mode) => fsp.chmod(f, mode),
};

export interface ApplyInput {
  /** The host workspace, realpath-resolved. */
  readonly root: string;
  readonly changes: readonly PatchChange[];
  /** Opens the kept new contents with this sha256 (with cfh's own authority). */
  readonly openBlob: (sha256: string) => Promise<fsp.FileHandle>;
  /**
   * New contents made by cfh itself rather than kept by the run (a `--3way` merge), by
   * sha256: staged from memory, checked against the digest like a blob.
   */
  readonly contents?: ReadonlyMap<string, Buffer>;
  /**
   * With whose authority the host is read and written. cfh as root applies a workspace
   * another user owns as that user, so a swap on a path (a directory turned into a link by
   * someone who may write there) can take the writes only where that user may write anyway.
   */
  readonly authority?: Authority;
  /**
   * When cfh writes with its own authority as root: the owner given to added entries, and
   * whether a replaced file keeps its owner. Undefined: entries belong to the writer.
   */
  readonly owner?: { readonly uid: number; readonly gid: number } | undefined;
  /** Runs after every step and before any backup is dropped; a throw undoes the apply. */
  readonly record: () => Promise<void>;
  readonly signal: AbortSignal;
  readonly fs?: CommitFs;
}

export interface ApplyResult {
  readonly applied: readonly { readonly path: string; readonly kind: string }[];
  /** Backups or staged files that could not be removed after the commit (harmless). */
  readonly leftovers: readonly string[];
}

interface Undo {
  readonly what: string;
  readonly run: () => Promise<void>;
}

export async function applyPatch(input: ApplyInput): Promise<ApplyResult> {
  const fs = input.fs ?? NODE_COMMIT_FS;
  const auth = input.authority ?? OWN_AUTHORITY;
  const changes = input.changes.filter((c) => c.applicable);
  const undo: Undo[] = [];
  const staging = await auth.asWriter(async () => {
    const check = await checkHost(input.root, changes, input.signal).catch((e: unknown) => {
      throw failure(e);
    });
    if (check.conflicts.length > 0) throw hostChangedError(check.conflicts);
    const dir = await fsp.mkdtemp(path.join(input.root, '.cfh-apply-'));
    try {
      const staged = await stageFiles(dir, changes, check.seen, input);
      input.signal.throwIfAborted();
      await commitSteps(input.root, dir, changes, check.seen, staged, undo, fs, input.owner);
    } catch (error) {
      throw await undoAll(undo, dir, error);
    }
    return dir;
  });
  try {
    await auth.asSelf(input.record);
  } catch (error) {
    throw await auth.asWriter(() => undoAll(undo, staging, error));
  }
  // Committed and recorded: the backups may go.
  const leftovers: string[] = [];
  await auth.asWriter(() =>
    removeTree(staging).catch(() => {
      leftovers.push(staging);
    }),
  );
  return { applied: changes.map((c) => ({ path: c.path, kind: c.kind })), leftovers };
}

/** Undoes what was done; the error to throw says whether the host is as it was. */
async function undoAll(undo: readonly Undo[], staging: string, error: unknown): Promise<Error> {
  const failed = await rollback(undo);
  if (failed.length > 0) {
    return new WorkspaceError(
      'rollback_incomplete',
      `apply failed (${errorMessage(error)}) and ${failed.length} step(s) could not be undone: ${failed.join('; ')}; the backups are in ${staging}`,
      { staging, failed },
      error,
    );
  }
  await removeTree(staging);
  return failure(error);
}

function failure(error: unknown): WorkspaceError {
  if (error instanceof WorkspaceError) return error;
  return new WorkspaceError(
    'apply_failed',
    `apply failed, the host workspace is as it was: ${errorMessage(error)}`,
    {},
    error,
  );
}

/** The mode a file gets on the host: the host's own bits, the run's executable bit only. */
export function appliedMode(hostMode: number | undefined, executable: boolean): number {
  if (hostMode === undefined) return executable ? 0o755 : 0o644;
  const base = hostMode & 0o777;
  return executable ? base | ((base & 0o444) >> 2) : base & ~0o111;
}

/** Copies each new file from the blob store into staging; returns path → staged file. */
async function stageFiles(
  staging: string,
  changes: readonly PatchChange[],
  seen: ReadonlyMap<string, Seen>,
  input: ApplyInput,
): Promise<Map<string, string>> {
  const staged = new Map<string, string>();
  let n = 0;
  for (const c of changes) {
    if (c.kind === 'mode' && c.after?.type === 'file') {
      const copy = await stageModeCopy(staging, `mode-${(n += 1)}`, c, seen, input);
      if (copy !== undefined) staged.set(c.path, copy);
      continue;
    }
    if ((c.kind !== 'added' && c.kind !== 'modified') || c.after?.type !== 'file') continue;
    input.signal.throwIfAborted();
    const want = c.after.sha256 ?? '';
    const file = path.join(staging, `new-${(n += 1)}`);
    const host = seen.get(c.path);
    const owner =
      input.owner === undefined || host === undefined
        ? input.owner
        : { uid: host.uid, gid: host.gid };
    const made = input.contents?.get(want);
    if (made !== undefined) await writeMade(made, file, want, c.path);
    else await copyBlob(await input.openBlob(want), file, want, c.path);
    if (owner !== undefined) await fsp.chown(file, owner.uid, owner.gid);
    // After chown, which would clear set-id bits; appliedMode never sets one anyway.
    await fsp.chmod(file, appliedMode(host?.mode, isExecutable(c.after.mode)));
    staged.set(c.path, file);
  }
  return staged;
}

/**
 * A mode change to a file with other hard links would change them all, files outside the
 * workspace included (a package store's, say): such a file gets a copy with the new mode,
 * renamed over it at commit as a modified file is, which leaves the other links as they
 * were. Undefined for a file with one link (changed in place).
 */
async function stageModeCopy(
  staging: string,
  name: string,
  c: PatchChange,
  seen: ReadonlyMap<string, Seen>,
  input: ApplyInput,
): Promise<string | undefined> {
  const target = path.join(input.root, c.path);
  const st = await fsp.lstat(target);
  if (!st.isFile() || st.nlink <= 1) return undefined;
  const host = seen.get(c.path);
  const file = path.join(staging, name);
  await fsp.copyFile(target, file, fsConstants.COPYFILE_EXCL);
  if (input.owner !== undefined && host !== undefined) await fsp.chown(file, host.uid, host.gid);
  await fsp.chmod(file, appliedMode(host?.mode, isExecutable(c.after?.mode ?? 0)));
  return file;
}

async function writeMade(data: Buffer, file: string, want: string, p: string): Promise<void> {
  const sha256 = createHash('sha256').update(data).digest('hex');
  if (sha256 !== want)
    throw new WorkspaceError(
      'patch_blob_mismatch',
      `the merged contents of ${p} do not match their digest (sha256 ${sha256}, expected ${want})`,
      { path: p },
    );
  const to = await fsp.open(file, 'wx', 0o600);
  try {
    await to.writeFile(data);
    await to.sync();
  } finally {
    await to.close();
  }
}

async function copyBlob(
  from: fsp.FileHandle,
  file: string,
  want: string,
  p: string,
): Promise<void> {
  try {
    const { sha256 } = await hashHandle(from);
    if (sha256 !== want) {
      throw new WorkspaceError(
        'patch_blob_mismatch',
        `the run's copy of ${p}'s new contents does not match the patch (sha256 ${sha256}, expected ${want})`,
        { path: p },
      );
    }
    const to = await fsp.open(file, 'wx', 0o600);
    try {
      const buffer = Buffer.allocUnsafe(1024 * 1024);
      let at = 0;
      for (;;) {
        const { bytesRead } = await from.read(buffer, 0, buffer.length, at);
        if (bytesRead === 0) break;
        await to.write(buffer, 0, bytesRead, at);
        at += bytesRead;
      }
      await to.sync();
    } finally {
      await to.close();
    }
  } finally {
    await from.close();
  }
}

async function commitSteps(
  root: string,
  staging: string,
  changes: readonly PatchChange[],
  seen: ReadonlyMap<string, Seen>,
  staged: ReadonlyMap<string, string>,
  undo: Undo[],
  fs: CommitFs,
  owner: ApplyInput['owner'],
): Promise<void> {
  let n = 0;
  const backup = (): string => path.join(staging, `old-${(n += 1)}`);
  const still = async (p: string): Promise<void> => {
    const was = seen.get(p);
    const now = await lstatOrUndefined(path.join(root, p));
    if (was === undefined || now === undefined || !sameEntry(was, seenOf(now))) {
      throw new WorkspaceError(
        'host_changed',
        `${p} changed on the host while the patch was being applied`,
        { path: p },
      );
    }
  };
  // Contents first: each replacement is one rename, the old file kept as a hard link.
  for (const c of changes.filter((x) => x.kind === 'modified')) {
    const target = path.join(root, c.path);
    await still(c.path);
    const old = backup();
    await fs.link(target, old);
    await fs.rename(staged.get(c.path) ?? '', target);
    undo.push({ what: `restore ${c.path}`, run: () => fs.rename(old, target) });
  }
  for (const c of changes.filter((x) => x.kind === 'mode')) {
    const target = path.join(root, c.path);
    await still(c.path);
    const copy = staged.get(c.path);
    if (copy !== undefined) {
      // Hard-linked: the copy with the new mode takes this name; the other links keep theirs.
      const old = backup();
      await fs.link(target, old);
      await fs.rename(copy, target);
      undo.push({ what: `restore ${c.path}`, run: () => fs.rename(old, target) });
      continue;
    }
    const was = seen.get(c.path)?.mode ?? 0o644;
    await fs.chmod(target, appliedMode(was, isExecutable(c.after?.mode ?? 0)));
    undo.push({ what: `mode of ${c.path}`, run: () => fs.chmod(target, was) });
  }
  // Removals: files, then directories deepest first (each empty by then).
  const removals = changes.filter((x) => x.kind === 'removed');
  for (const c of removals.filter((x) => x.before?.type === 'file')) {
    const target = path.join(root, c.path);
    await still(c.path);
    const old = backup();
    await fs.rename(target, old);
    undo.push({ what: `restore ${c.path}`, run: () => fs.rename(old, target) });
  }
  const dirs = removals.filter((x) => x.before?.type === 'directory').reverse();
  for (const c of dirs) {
    const target = path.join(root, c.path);
    const mode = seen.get(c.path)?.mode ?? 0o755;
    await fs.rmdir(target);
    undo.push({ what: `directory ${c.path}`, run: () => fs.mkdir(target, mode & 0o777) });
  }
  // Additions: directories shallowest first, then files, never over an existing entry.
  const additions = changes.filter((x) => x.kind === 'added');
  for (const c of additions.filter((x) => x.after?.type === 'directory')) {
    const target = path.join(root, c.path);
    await fs.mkdir(target, 0o755);
    undo.push({ what: `remove ${c.path}/`, run: () => fs.rmdir(target) });
    if (owner !== undefined) await fsp.chown(target, owner.uid, owner.gid);
  }
  for (const c of additions.filter((x) => x.after?.type === 'file')) {
    const target = path.join(root, c.path);
    await fs.link(staged.get(c.path) ?? '', target);
    undo.push({ what: `remove ${c.path}`, run: () => fs.unlink(target) });
  }
}

/** Undoes the done steps newest first; returns what could not be undone. */
async function rollback(undo: readonly Undo[]): Promise<string[]> {
  const failed: string[] = [];
  for (const step of [...undo].reverse()) {
    try {
      await step.run();
    } catch (error) {
      failed.push(`${step.what}: ${errorMessage(error)}`);
    }
  }
  return failed;
}
