// A draft run's workspace (governance extension, "Draft vs commit policy"): the copy the
// sandbox works on, made before the snapshot, and the patch it leaves, written after every
// container is gone. The host tree is only read. Everything kept enters the hash chain
// through the run directory: the baseline (workspace-baseline.json), the patch
// (patch/patch.json, patch/patch.diff) and the new contents it needs (patch/blobs/<sha256>),
// with the baseline contents of the files it modifies or removes (draft-baseline.ts).
// The copy itself is discarded with the run, on every path.
import { chmod, chown, mkdir, mkdtemp, readFile, statfs, writeFile } from 'node:fs/promises';
import { lstat } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import path from 'node:path';
import { CfhError, WorkspaceError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { RUN_FILES, type RunDirectory } from '../evidence/run-directory.js';
import { WORKSPACE_TARGET, identityOf } from '../sandbox/mount-policy.js';
import { checkSwappable } from '../sandbox/mount-trust.js';
import { copyTree } from '../workspace/copy-tree.js';
import {
  BASELINE_SCHEMA,
  PATCH_SCHEMA,
  diffTrees,
  neededBlobs,
  summarize,
  type BaselineDocument,
  type PatchChange,
  type PatchDocument,
} from '../workspace/patch.js';
import {
  MAX_DIFF_BYTES,
  MAX_TEXT_BYTES,
  quote,
  renderPatch,
  type ContentReader,
} from '../workspace/patch-text.js';
import { hashHandle, inodeKey, listTree, openSeenFile } from '../workspace/walk.js';
import type { RunPlan } from './run-plan.js';
import { OWN_AUTHORITY, type Authority } from '../workspace/authority.js';
import { authorityFor } from './write-authority.js';
import { DRAFT_OWNER_FILE } from './draft-owner.js';
import { BASELINE_MAX_BYTES, keepBaselines } from './draft-baseline.js';
import { removeTree } from '../remove-tree.js';
import { WATCH_COST_FACTOR, WATCH_MIN_INTERVAL_MS } from './draft-watch.js';

/** New contents larger than this (a file the sandbox grew or made) are never read. */
export const MAX_READ_BYTES = 256 * 1024 * 1024;

/** What the snapshot records of the draft (AH-INV-2). */
export interface DraftRecord {
  readonly dir: string;
  readonly source: string;
  readonly baseline: {
    readonly file: string;
    readonly sha256: string;
    readonly entries: number;
    readonly files: number;
    readonly bytes: number;
    readonly skipped: number;
  };
}

export interface PatchSummary {
  readonly file: string;
  readonly diff: string;
  readonly sha256: string;
  readonly summary: PatchDocument['summary'];
  readonly blobs: number;
  /** Each change's path and kind, in the patch's order (names the sandbox chose). */
  readonly files: readonly {
    readonly path: string;
    readonly kind: string;
    readonly applicable: boolean;
  }[];
}

export class DraftWorkspace implements AsyncDisposable {
  /** The plan with the copy mounted at /workspace in place of the host workspace. */
  readonly plan: RunPlan;
  readonly record: DraftRecord;
  /** The copy's bound, held while the run goes on too (draft-watch.ts). */
  readonly maxBytes: number;
  readonly #baseline: BaselineDocument;
  readonly #log: Logger;
  /** With whose authority the host tree and the copy are read and written. */
  readonly #as: Authority;
  /** The run's cancellation (Ctrl-C): it also ends the end walk's reading early. */
  readonly #signal: AbortSignal;
  #discarded = false;

  private constructor(
    plan: RunPlan,
    record: DraftRecord,
    baseline: BaselineDocument,
    log: Logger,
    as: Authority,
    maxBytes: number,
    signal: AbortSignal,
  ) {
    this.#signal = signal;
    this.plan = plan;
    this.record = record;
    this.maxBytes = maxBytes;
    this.#baseline = baseline;
    this.#log = log;
    this.#as = as;
  }

  /** Copies the host workspace into a fresh private directory and records the baseline. */
  static async open(
    plan: RunPlan,
    dir: RunDirectory,
    log: Logger,
    signal: AbortSignal,
  ): Promise<DraftWorkspace> {
    const draft = plan.draft;
    if (draft === undefined) throw new Error('not a draft plan');
    const t0 = performance.now();
    // mkdtemp: mode 0700, a name no one can guess; only cfh's user can reach what is inside.
    const parent = await mkdtemp(path.join(draft.root, `cfh-draft-${plan.runId}-`));
    const as = draft.writer === undefined ? OWN_AUTHORITY : authorityFor(draft.writer);
    try {
      // Who made it, as the run's containers are labelled: `cfh reap` removes a copy whose
      // cfh is gone (draft-reap.ts). Beside the copy, never in it: the sandbox cannot reach it.
      await writeFile(path.join(parent, DRAFT_OWNER_FILE), JSON.stringify(plan.spec.labels), {
        mode: 0o600,
        flag: 'wx',
      });
      const source = path.join(parent, 'workspace');
      await mkdir(source, { mode: 0o700 });
      if (draft.writer !== undefined) {
        // The copy is made and read as the sandbox user: they may pass through the parent
        // (root's, their group's, 0710) but not rename or list what is in it.
        await chown(parent, 0, draft.writer.gid);
        await chmod(parent, 0o710);
        await chown(source, draft.writer.uid, draft.writer.gid);
      }
      const placeholder = plan.spec.mounts.find((m) => m.target === WORKSPACE_TARGET);
      const host = identityOf(plan.workspace);
      if (host.dev !== placeholder?.identity?.dev || host.ino !== placeholder.identity.ino) {
        throw new WorkspaceError(
          'workspace_changed',
          `the workspace '${plan.workspace}' is no longer the directory cfh checked; refusing to copy it`,
        );
      }
      const maxBytes = await copyBudget(draft.root, draft.maxBytes);
      const copy = await as.asWriter(() =>
        copyTree(plan.workspace, source, {
          signal,
          owner: draft.writer === undefined ? draft.owner : undefined,
          maxBytes,
        }),
      );
      const baseline: BaselineDocument = {
        schema: BASELINE_SCHEMA,
        hostWorkspace: plan.workspace,
        rootMode: copy.rootMode,
        entries: [...copy.entries],
        skipped: [...copy.skipped],
      };
      const sha256 = await dir.writeFile(RUN_FILES.baseline, `${JSON.stringify(baseline)}\n`);
      const mount = { source, target: WORKSPACE_TARGET, mode: 'rw' as const };
      const identified = { ...mount, identity: identityOf(source) };
      // Under runsc a copy another user could replace is refused, as any mount source is.
      const swappable = checkSwappable([identified], plan.spec.runtime, process.getuid?.() ?? 0);
      const rebound: RunPlan = {
        ...plan,
        spec: {
          ...plan.spec,
          mounts: plan.spec.mounts.map((m) => (m.target === WORKSPACE_TARGET ? identified : m)),
        },
        mountChecks: {
          ...plan.mountChecks,
          swappable: [...plan.mountChecks.swappable, ...swappable],
        },
      };
      const record: DraftRecord = {
        dir: parent,
        source,
        baseline: {
          file: RUN_FILES.baseline,
          sha256,
          entries: copy.entries.length,
          files: copy.entries.filter((e) => e.type === 'file').length,
          bytes: copy.bytes,
          skipped: copy.skipped.length,
        },
      };
      await dir.events.append(
        'draft_prepared',
        {
          hostWorkspace: plan.workspace,
          ...record,
          bounds: {
            copyMaxBytes: maxBytes,
            patchMaxBytes: draft.patchMaxBytes,
            live: { maxBytes, minIntervalMs: WATCH_MIN_INTERVAL_MS, costFactor: WATCH_COST_FACTOR },
          },
          ms: Math.round(performance.now() - t0),
        },
        true,
      );
      return new DraftWorkspace(rebound, record, baseline, log, as, maxBytes, signal);
    } catch (error) {
      await removeTree(parent);
      if (error instanceof CfhError || signal.aborted) throw error;
      throw new WorkspaceError(
        'draft_copy_failed',
        `cannot copy the workspace '${plan.workspace}' into a draft: ${errorMessage(error)}`,
        {},
        error,
      );
    }
  }

  /**
   * After every container of the run is gone: the draft's end state against the baseline,
   * kept as patch/patch.json and patch/patch.diff, with every new file's contents.
   *
   * What the sandbox can make cfh do here it does not pay for (hard links, sparse files,
   * many names), so the walk has one budget (endWalkBudget), in bytes read and in time,
   * and the run's cancellation ends it too: each inode is read once, a file with holes
   * (allocated < size) is listed by size and never read, and once the budget is spent or
   * the run is cancelled nothing more is read: the rest is listed by size and the patch is
   * marked incomplete, which `cfh runs apply` refuses whole.
   */
  async writePatch(dir: RunDirectory): Promise<PatchSummary> {
    const t0 = performance.now();
    const budget = endWalkBudget(this.record.baseline.bytes);
    const sizes = new Map(this.#baseline.entries.map((e) => [e.path, e.size]));
    let read = 0;
    let incomplete: string | undefined;
    const byInode = new Map<string, Promise<{ sha256: string; size: number }>>();
    const mayHash = (p: string, size: number, stats: BigIntStats): boolean => {
      if (byInode.has(inodeKey(stats))) return true;
      // Holes cost the sandbox no disk: such a file is never read (a copy is made dense).
      if (Number(stats.blocks) * 512 < size) return false;
      if (size > MAX_READ_BYTES && sizes.get(p) !== size) return false;
      if (incomplete === undefined) {
        if (this.#signal.aborted) incomplete = 'the run was cancelled while its patch was read';
        else if (performance.now() - t0 > budget.ms)
          incomplete = `reading the draft took more than ${String(budget.ms)} ms`;
        else if (read + size > budget.bytes)
          incomplete = `the draft's files hold more than ${String(budget.bytes)} bytes to read`;
      }
      if (incomplete !== undefined) return false;
      read += size;
      return true;
    };
    // The walk itself (names, lstat) is bounded by MAX_TREE_ENTRIES; it is not cut short,
    // so the patch still lists every path the sandbox touched.
    const end = await this.#as.asWriter(() =>
      listTree(this.record.source, {
        signal: new AbortController().signal,
        repairPermissions: true,
        mayHash,
        byInode,
      }),
    );
    const changes = diffTrees(this.#baseline.entries, end.entries);
    // The whole patch or none: past its bound nothing is kept, so no part of a run's
    // changes is ever offered for apply as if it were all of them.
    const limit = this.plan.draft?.patchMaxBytes ?? 0;
    const needed = new Map<string, number>();
    for (const c of changes)
      for (const sha of neededBlobs([c])) needed.set(sha, c.after?.size ?? 0);
    const total = [...needed.values()].reduce((a, b) => a + b, 0);
    if (total > limit) {
      throw new WorkspaceError(
        'patch_too_large',
        `workspace mode draft: the patch's new contents are ${String(total)} bytes, more than ${String(limit)}; no patch is kept (CFH_DRAFT_PATCH_MAX_BYTES bounds it)`,
        { bytes: total, maxBytes: limit },
      );
    }
    const stored = new Set<string>();
    for (const c of changes) {
      const sha = c.after?.sha256;
      if (sha === undefined || stored.has(sha) || !needed.has(sha)) continue;
      await this.#storeBlob(dir, c);
      stored.add(sha);
    }
    // What --3way merges against and --binary names as the preimage: within what is left.
    const baselines = await keepBaselines({
      dir,
      hostWorkspace: this.#baseline.hostWorkspace,
      changes,
      stored,
      maxBytes: Math.max(0, Math.min(limit - total, BASELINE_MAX_BYTES)),
      as: this.#as,
      signal: this.#signal,
    });
    const rendered = await renderPatch(changes, this.#reader(dir), Math.min(MAX_DIFF_BYTES, limit));
    const doc: PatchDocument = {
      schema: PATCH_SCHEMA,
      runId: dir.runId,
      hostWorkspace: this.#baseline.hostWorkspace,
      baseline: { file: this.record.baseline.file, sha256: this.record.baseline.sha256 },
      blobs: RUN_FILES.blobs,
      changes: [...rendered.changes],
      ...(incomplete === undefined ? {} : { incomplete }),
      unsupported: [...end.skipped],
      summary: summarize(rendered.changes),
    };
    const sha256 = await dir.writeFile(RUN_FILES.patch, `${JSON.stringify(doc, null, 2)}\n`);
    await dir.writeFile(RUN_FILES.patchDiff, rendered.text);
    await dir.events.append(
      'patch_written',
      {
        file: RUN_FILES.patch,
        sha256,
        summary: doc.summary,
        unsupported: doc.unsupported.length,
        blobs: stored.size,
        baselines,
        bounds: {
          readMaxBytes: budget.bytes,
          readMaxMs: budget.ms,
          readBytes: read,
          diffMaxBytes: rendered.inline.maxBytes,
          diffInlinedBytes: rendered.inline.bytes,
        },
        reached: { read: incomplete !== undefined, diff: rendered.inline.reached },
        ...(incomplete === undefined ? {} : { incomplete }),
        ms: Math.round(performance.now() - t0),
      },
      true,
    );
    return {
      file: RUN_FILES.patch,
      diff: RUN_FILES.patchDiff,
      sha256,
      summary: doc.summary,
      blobs: stored.size,
      files: doc.changes.map((c) => ({ path: c.path, kind: c.kind, applicable: c.applicable })),
    };
  }

  async #storeBlob(dir: RunDirectory, c: PatchChange): Promise<void> {
    const abs = path.join(this.record.source, c.path);
    // Opened as the copy's writer, kept in the run directory as cfh.
    const handle = await this.#as.asWriter(async () =>
      openSeenFile(abs, await lstat(abs, { bigint: true }), { repairPermissions: true }),
    );
    try {
      const blob = await dir.storeBlob(handle);
      if (blob.sha256 !== c.after?.sha256) {
        throw new WorkspaceError(
          'draft_changed',
          `${c.path} changed in the draft while its patch was written`,
          { path: c.path },
        );
      }
    } finally {
      await handle.close();
    }
  }

  /** Old contents from the host (only if still what the baseline recorded), new from the run. */
  #reader(dir: RunDirectory): ContentReader {
    const host = this.#baseline.hostWorkspace;
    return async (c, side) => {
      const s = side === 'before' ? c.before : c.after;
      if (s === null) return Buffer.alloc(0);
      if (s.sha256 === undefined)
        return { unavailable: `${quote(c.path)}: ${c.note ?? 'not read'}` };
      if ((s.size ?? 0) > MAX_TEXT_BYTES) return { binary: true };
      if (side === 'after') {
        return readFile(dir.path(`${RUN_FILES.blobs}/${s.sha256}`)).catch(() => ({
          unavailable: `${quote(c.path)}: ${c.note ?? 'new contents not kept'}`,
        }));
      }
      const abs = path.join(host, c.path);
      try {
        const handle = await this.#as.asWriter(async () =>
          openSeenFile(abs, await lstat(abs, { bigint: true })),
        );
        try {
          const { sha256 } = await hashHandle(handle);
          if (sha256 === s.sha256) return await handle.readFile();
        } finally {
          await handle.close();
        }
      } catch {
        // gone or unreadable: said below
      }
      return {
        unavailable: `${quote(c.path)} changed on the host during the run; its old text is not shown`,
      };
    };
  }

  /**
   * Removes the copy and says so; the run's last word on its workspace. By descriptor, and
   * the copy (which its user could change) with that user's authority (remove-tree.ts).
   */
  async discard(dir: RunDirectory): Promise<void> {
    if (this.#discarded) return;
    const t0 = performance.now();
    await removeTree(this.record.dir);
    this.#discarded = true;
    await dir.events.append(
      'draft_discarded',
      { dir: this.record.dir, ms: Math.round(performance.now() - t0) },
      true,
    );
  }

  /** The backstop on every other path (an error before the terminal record). */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#discarded) return;
    this.#discarded = true;
    await removeTree(this.record.dir).catch((e: unknown) => {
      this.#log.error({ err: errorMessage(e), dir: this.record.dir }, 'draft not removed');
    });
  }
}

/**
 * The end walk's budget: what the host tree already cost to copy, plus one file at the
 * per-file bound, and a time that grows with it (at a slow 32 MiB/s, never under a minute).
 */
export function endWalkBudget(baselineBytes: number): { bytes: number; ms: number } {
  const bytes = baselineBytes + MAX_READ_BYTES;
  return { bytes, ms: Math.max(60_000, Math.ceil(bytes / (32 * 1024))) };
}

/** Free space the draft root keeps whatever a copy needs: the host goes on working. */
const DRAFT_RESERVE_BYTES = 1024 ** 3;

/** The draft's bound: the configured one, within the draft root's free space less a reserve. */
async function copyBudget(root: string, configured: number): Promise<number> {
  const fsInfo = await statfs(root);
  const free = fsInfo.bavail * fsInfo.bsize;
  return Math.max(0, Math.min(configured, free - DRAFT_RESERVE_BYTES));
}
