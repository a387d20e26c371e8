// A draft run's workspace (governance extension, "Draft vs commit policy"): the copy the
// sandbox works on, made before the snapshot, and the patch it leaves, written after every
// container is gone. The host tree is only read. Everything kept enters the hash chain
// through the run directory: the baseline (workspace-baseline.json), the patch
// (patch/patch.json, patch/patch.diff) and the new contents it needs (patch/blobs/<sha256>),
// with the baseline contents of the files it modifies or removes (draft-baseline.ts).
// The copy itself is discarded with the run, on every path.
import { chmod, chown, mkdir, mkdtemp, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CfhError, WorkspaceError, errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import { RUN_FILES, type RunDirectory } from '../../evidence/run-directory.js';
import { WORKSPACE_TARGET, identityOf } from '../../sandbox/mount-policy.js';
import { checkSwappable } from '../../sandbox/mount-trust.js';
import { copyTree } from '../../workspace/copy-tree.js';
import { hostRoot } from '../../workspace/host-root.js';
import { gateHostObeyed, readHostHeld } from '../../workspace/host-obeyed-gate.js';
import {
  BASELINE_SCHEMA,
  PATCH_SCHEMA,
  summarize,
  type BaselineDocument,
  type PatchDocument,
} from '../../workspace/patch.js';
import { walkDraft, type DraftWalk } from './draft-walk.js';
import type { RunPlan } from '../run/run-plan.js';
import { OWN_AUTHORITY, type Authority } from '../../workspace/authority.js';
import { authorityFor } from '../run/write-authority.js';
import { DRAFT_OWNER_FILE } from './draft-owner.js';
import { BASELINE_MAX_BYTES, keepBaselines } from './draft-baseline.js';
import { removeTree } from '../../remove-tree.js';
import { WATCH_COST_FACTOR, WATCH_MIN_INTERVAL_MS } from './draft-watch.js';

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
  /** Class 9: the paths an apply writes only when named (workspace/host-obeyed-gate.ts). */
  readonly heldBack: readonly string[];
}

export class DraftWorkspace implements AsyncDisposable {
  /** The plan with the copy mounted at /workspace in place of the host workspace. */
  readonly plan: RunPlan;
  readonly record: DraftRecord;
  /** The copy's bound, held while the run goes on too (draft-watch.ts). */
  readonly maxBytes: number;
  #baseline: BaselineDocument;
  /** Where the current baseline is kept in the run directory (the first: RUN_FILES.baseline). */
  #current: { file: string; sha256: string };
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
    this.#current = { file: record.baseline.file, sha256: record.baseline.sha256 };
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
   * After every container of the run is gone: the draft's end state against the baseline
   * (the last one a session applied against, draft-live.ts), kept as patch/patch.json and
   * patch/patch.diff, with every new file's contents (draft-walk.ts says how the reading is
   * bounded; an incomplete patch is listed and `cfh runs apply` refuses it whole).
   */
  async writePatch(dir: RunDirectory): Promise<PatchSummary> {
    const t0 = performance.now();
    const limit = this.plan.draft?.patchMaxBytes ?? 0;
    const walk = await this.walk(dir, this.#signal);
    // What --3way merges against and --binary names as the preimage: within what is left.
    const baselines = await keepBaselines({
      dir,
      hostWorkspace: this.#baseline.hostWorkspace,
      changes: walk.changes,
      stored: walk.stored,
      maxBytes: Math.max(0, Math.min(limit - walk.needed, BASELINE_MAX_BYTES)),
      as: this.#as,
      signal: this.#signal,
    });
    const { incomplete } = walk;
    const doc: PatchDocument = {
      schema: PATCH_SCHEMA,
      runId: dir.runId,
      hostWorkspace: this.#baseline.hostWorkspace,
      baseline: { ...this.#current },
      blobs: RUN_FILES.blobs,
      changes: [...walk.changes],
      ...(incomplete === undefined ? {} : { incomplete }),
      unsupported: [...walk.unsupported],
      summary: summarize(walk.changes),
    };
    // Class 9: what an apply writes only when named (workspace/host-obeyed-gate.ts).
    const host = await hostRoot(this.#baseline.hostWorkspace)
      .then((root) => readHostHeld(root, this.#signal))
      .catch(() => ({}));
    const { heldBack } = gateHostObeyed(dir.runId, doc.changes, [], host);
    const sha256 = await dir.writeFile(RUN_FILES.patch, `${JSON.stringify(doc, null, 2)}\n`);
    await dir.writeFile(RUN_FILES.patchDiff, walk.text);
    await dir.events.append(
      'patch_written',
      {
        file: RUN_FILES.patch,
        sha256,
        summary: doc.summary,
        heldBack: [...heldBack],
        unsupported: doc.unsupported.length,
        blobs: walk.stored.size,
        baselines,
        bounds: {
          readMaxBytes: walk.budget.bytes,
          readMaxMs: walk.budget.ms,
          readBytes: walk.readBytes,
          diffMaxBytes: walk.inline.maxBytes,
          diffInlinedBytes: walk.inline.bytes,
        },
        reached: { read: incomplete !== undefined, diff: walk.inline.reached },
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
      blobs: walk.stored.size,
      files: doc.changes.map((c) => ({ path: c.path, kind: c.kind, applicable: c.applicable })),
      heldBack,
    };
  }

  /** The copy against the current baseline, new contents kept (draft-walk.ts). */
  async walk(dir: RunDirectory, signal: AbortSignal): Promise<DraftWalk> {
    return walkDraft({
      source: this.record.source,
      baseline: this.#baseline,
      baselineBytes: this.record.baseline.bytes,
      as: this.#as,
      patchMaxBytes: this.plan.draft?.patchMaxBytes ?? 0,
      dir,
      signal,
    });
  }

  /** The baseline the copy is compared with now, and where the run directory keeps it. */
  get baseline(): {
    readonly document: BaselineDocument;
    readonly file: string;
    readonly sha256: string;
  } {
    return { document: this.#baseline, ...this.#current };
  }

  /** With whose authority the host tree is read and written (the workspace's owner). */
  get authority(): Authority {
    return this.#as;
  }

  /**
   * After a session applied changes to the host (draft-live.ts): those changes are the
   * host's now, so later diffs, applies and the run's patch are taken against this
   * baseline, already written to the run directory as `file`.
   */
  rebase(document: BaselineDocument, file: string, sha256: string): void {
    this.#baseline = document;
    this.#current = { file, sha256 };
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

/** Free space the draft root keeps whatever a copy needs: the host goes on working. */
const DRAFT_RESERVE_BYTES = 1024 ** 3;

/** The draft's bound: the configured one, within the draft root's free space less a reserve. */
async function copyBudget(root: string, configured: number): Promise<number> {
  const fsInfo = await statfs(root);
  const free = fsInfo.bavail * fsInfo.bsize;
  return Math.max(0, Math.min(configured, free - DRAFT_RESERVE_BYTES));
}
