// `cfh runs apply RUN_ID`: the commit of a draft run (governance extension, "Draft vs
// commit policy": the draft ran automatically in its sandbox; the commit that changes the
// host requires an approval, recorded with who gave it and how). Under the run's lock:
// the evidence must verify, the run must be a finished draft run with a recorded patch
// not applied before, the host must be as the run found it where the patch touches it;
// then the approver is asked, the patch is applied all at once or not at all, and the
// `applied` event extends the run's hash chain while the apply can still be undone.
import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { WorkspaceError, errorMessage } from '../../errors.js';
import { withLockedRun } from '../../evidence/run-amend.js';
import { RUN_FILES } from '../../evidence/run-directory.js';
import { READ_CAPS, withRunReader } from '../../evidence/run-reader.js';
import type { TrustedKey } from '../../evidence/signing.js';
import type { RunDetail } from '../../evidence/runs-index.js';
import { applyPatch, type CommitFs } from '../../workspace/apply-patch.js';
import { OWN_AUTHORITY } from '../../workspace/authority.js';
import { authorityFor } from '../run/write-authority.js';
import { checkHost, hostChangedError } from '../../workspace/host-check.js';
import { hostRoot } from '../../workspace/host-root.js';
import { mergeable, planMerge, type MergedFile, type MergePlan } from './apply-merge.js';

const MERGE_HINT =
  'cfh runs apply --3way merges the host changes to a file where they do not overlap the run';
import { PatchDocument, neededBlobs, type PatchChange } from '../../workspace/patch.js';
import {
  gateHostObeyed,
  readHostHeld,
  type GatedChange,
} from '../../workspace/host-obeyed-gate.js';

export interface Approver {
  /** The OS user who approved, as the system names them, and their uid. */
  readonly user: string;
  readonly uid: number;
  readonly host: string;
  /** How: answered the prompt on a terminal, or gave `--yes`. */
  readonly surface: 'cli-terminal-prompt' | 'cli-flag-yes';
}

export interface ApplyPlan {
  readonly runId: string;
  readonly status: string;
  readonly terminalReason: string;
  readonly hostWorkspace: string;
  readonly patch: PatchDocument;
  readonly applicable: readonly PatchChange[];
  readonly notApplied: readonly PatchChange[];
  /** Changes at paths a host tool obeys, not named on this apply: not written (class 9). */
  readonly heldBack: readonly GatedChange[];
  /** `--3way`: the files written as the merge of the host's changes and the run's. */
  readonly merged: readonly MergedFile[];
}

export interface ApplyRequest {
  readonly artifactRoot: string;
  readonly runId: string;
  /** Shown the plan once the host checks out; returns the approver, or undefined (declined). */
  readonly approve: (plan: ApplyPlan) => Promise<Approver | undefined>;
  readonly signal: AbortSignal;
  /** The operator's public key, when one is configured: the run must carry its signature. */
  readonly trustedKey?: TrustedKey | undefined;
  /** `--3way`: merge the host's changes to touched files where they do not overlap. */
  readonly threeWay?: boolean | undefined;
  /** `--host-obeyed PATH`: held-back paths (and what is below them) this apply writes too. */
  readonly hostObeyed?: readonly string[] | undefined;
  /** Tests only: the commit's file-system calls. */
  readonly fs?: CommitFs;
}

export interface ApplyOutcome {
  readonly runId: string;
  readonly hostWorkspace: string;
  readonly applied: readonly { readonly path: string; readonly kind: string }[];
  readonly approver: Approver;
  readonly event: { readonly seq: number; readonly hash: string };
  readonly leftovers: readonly string[];
  readonly merged: readonly MergedFile[];
  /** Paths a host tool obeys that this apply left out, not named (class 9). */
  readonly heldBack: readonly string[];
}

const DraftWorkspaceRecord = z.object({
  hostPath: z.string(),
  mode: z.literal('draft'),
  draft: z.object({ baseline: z.object({ sha256: z.string() }) }),
});

const RebasedBaseline = z.looseObject({
  baseline: z.object({ file: z.string(), sha256: z.string() }),
});

/** What `runs diff` and `runs apply` read: the verified run's patch. */
export interface RunPatch {
  readonly detail: RunDetail;
  readonly hostWorkspace: string;
  readonly baselineSha256: string;
  readonly patch: PatchDocument;
  readonly patchSha256: string;
}

export async function readRunPatch(detail: RunDetail): Promise<RunPatch> {
  const ws = DraftWorkspaceRecord.safeParse(detail.snapshot?.workspace);
  if (!ws.success) {
    throw new WorkspaceError(
      'not_a_draft_run',
      `run ${detail.runId} did not run in workspace mode draft: it has no patch`,
    );
  }
  const recorded = recordedArtifacts(detail);
  const patchSha256 = recorded.get(RUN_FILES.patch);
  if (patchSha256 === undefined) {
    throw new WorkspaceError(
      'no_patch',
      `run ${detail.runId} wrote no patch (its work never started, or writing the patch failed)`,
    );
  }
  let patch: PatchDocument;
  try {
    // Through the bounded reader: patch.json may be a link or a FIFO by now.
    const read = await withRunReader(detail.dir, (r) =>
      r.readText(RUN_FILES.patch, READ_CAPS.document),
    );
    if (!read.ok) throw new Error(read.problem);
    patch = PatchDocument.parse(JSON.parse(read.value));
  } catch (error) {
    throw new WorkspaceError(
      'patch_invalid',
      `run ${detail.runId}: ${RUN_FILES.patch} is not a patch: ${errorMessage(error)}`,
    );
  }
  // A session that applied changes while it ran (draft-live.ts) rebased its baseline: the
  // patch is taken against the one its last `draft_applied` names, in the chain.
  const rebased = detail.events
    .filter((e) => e.type === 'draft_applied')
    .map((e) => RebasedBaseline.safeParse(e.data))
    .at(-1);
  if (rebased?.success === false) {
    throw new WorkspaceError(
      'patch_invalid',
      `run ${detail.runId}: a draft_applied event does not name its baseline`,
    );
  }
  const baselineSha256 = rebased?.data.baseline.sha256 ?? ws.data.draft.baseline.sha256;
  if (
    patch.runId !== detail.runId ||
    patch.hostWorkspace !== ws.data.hostPath ||
    patch.baseline.sha256 !== baselineSha256
  ) {
    throw new WorkspaceError(
      'patch_invalid',
      `run ${detail.runId}: the patch names another run, workspace or baseline than the snapshot`,
    );
  }
  if (patch.incomplete !== undefined) {
    throw new WorkspaceError(
      'patch_incomplete',
      `run ${detail.runId}: its patch is incomplete (${patch.incomplete}); cfh applies a patch whole or not at all, so nothing was applied; see it with cfh runs diff`,
    );
  }
  return {
    detail,
    hostWorkspace: ws.data.hostPath,
    baselineSha256,
    patch,
    patchSha256,
  };
}

export async function applyRun(request: ApplyRequest): Promise<ApplyOutcome> {
  const { runId } = request;
  // Verified as `cfh audit` verifies, signature included when a key is configured.
  const verify = { trustedKey: request.trustedKey };
  return withLockedRun(request.artifactRoot, runId, verify, async (run) => {
    const detail = run.detail;
    if (!detail.verification.ok) {
      throw new WorkspaceError(
        'evidence_broken',
        `run ${runId}: its evidence does not verify (${detail.verification.problems.join('; ')}); nothing was applied`,
      );
    }
    const finished = detail.events.find((e) => e.type === 'run_finished');
    if (finished === undefined)
      throw new WorkspaceError('run_not_finished', `run ${runId} has not finished`);
    const before = detail.events.find((e) => e.type === 'applied');
    if (before !== undefined) {
      throw new WorkspaceError(
        'already_applied',
        `run ${runId}: its patch was applied already (event ${before.seq} at ${before.ts}); a patch is applied once`,
      );
    }
    const { patch, patchSha256, hostWorkspace } = await readRunPatch(detail);
    const recorded = recordedArtifacts(detail);
    for (const sha of neededBlobs(patch.changes)) {
      if (!recorded.has(`${RUN_FILES.blobs}/${sha}`))
        throw new WorkspaceError('patch_invalid', `run ${runId}: new contents ${sha} not kept`);
    }
    // Class 9: a path a host tool obeys is written only when named here; a name that holds
    // nothing back is refused before the host is read or anyone is asked.
    const named = request.hostObeyed ?? [];
    const root = await hostRoot(hostWorkspace);
    // What the host's repository sends git to (core.hooksPath, a gitdir), read now: what the
    // host's git will obey once this apply is written.
    const host = await readHostHeld(root, request.signal);
    const gate = gateHostObeyed(runId, patch.changes, named, host);
    let applicable = gate.changes.filter((c) => c.applicable);
    const rootStats = await stat(root);
    const authority = authorityFor({ uid: rootStats.uid, gid: rootStats.gid });
    // The host is read as it will be written: with the writer's authority.
    const writer =
      authority === OWN_AUTHORITY ? 'cfh' : `the workspace owner (uid ${rootStats.uid})`;
    const check = await authority
      .asWriter(() => checkHost(root, applicable, request.signal))
      .catch((e: unknown) => {
        throw new WorkspaceError(
          'workspace_unreadable',
          `cannot check the host workspace as ${writer}, who applies it: ${errorMessage(e)}; nothing was applied`,
          {},
          e,
        );
      });
    let merge: MergePlan | undefined;
    if (check.conflicts.length > 0) {
      if (request.threeWay !== true)
        throw hostChangedError(
          check.conflicts,
          check.conflicts.some(mergeable) ? MERGE_HINT : undefined,
        );
      // All or nothing, before anyone is asked: every such file merges, or none is written.
      merge = await planMerge({
        runId,
        root,
        blobsDir: path.join(detail.dir, RUN_FILES.blobs),
        applicable,
        conflicts: check.conflicts,
        recorded: new Set(
          [...recorded.keys()]
            .filter((f) => f.startsWith(`${RUN_FILES.blobs}/`))
            .map((f) => f.slice(RUN_FILES.blobs.length + 1)),
        ),
        authority,
      });
      applicable = [...merge.changes];
    }
    const merged = merge?.merged ?? [];
    const approver = await request.approve({
      runId,
      status: String(finished.data.status),
      terminalReason: String(finished.data.terminalReason),
      hostWorkspace,
      patch,
      applicable,
      notApplied: patch.changes.filter((c) => !c.applicable),
      heldBack: gate.changes.filter((c) => c.heldBack === true),
      merged,
    });
    if (approver === undefined)
      throw new WorkspaceError('not_approved', `run ${runId}: not approved; nothing was applied`);
    let event: { seq: number; hash: string } | undefined;
    const result = await applyPatch({
      root,
      changes: applicable,
      ...(merge === undefined ? {} : { contents: merge.contents }),
      openBlob: (sha) =>
        authority.asSelf(() =>
          open(
            path.join(detail.dir, RUN_FILES.blobs, sha),
            constants.O_RDONLY | constants.O_NOFOLLOW,
          ),
        ),
      authority,
      // As the owner, what is written is the owner's; as root in a root-owned tree, new
      // entries belong to root too.
      owner:
        authority === OWN_AUTHORITY && process.geteuid?.() === 0
          ? { uid: rootStats.uid, gid: rootStats.gid }
          : undefined,
      signal: request.signal,
      ...(request.fs === undefined ? {} : { fs: request.fs }),
      record: async () => {
        const e = await run.appendApplied({
          approver: { ...approver },
          approvedAt: new Date().toISOString(),
          hostWorkspace,
          patch: { file: RUN_FILES.patch, sha256: patchSha256 },
          applied: patch.summary,
          paths: applicable.map((c) => c.path),
          ...(merged.length === 0 ? {} : { merged: merged.map((m) => ({ ...m })) }),
          ...(gate.heldBack.length === 0 ? {} : { heldBack: [...gate.heldBack] }),
          ...(named.length === 0 ? {} : { named: [...named] }),
        });
        event = { seq: e.seq, hash: e.hash };
      },
    });
    if (event === undefined) throw new Error('applied without a record');
    return {
      runId,
      hostWorkspace,
      applied: result.applied,
      approver,
      event,
      leftovers: result.leftovers,
      merged,
      heldBack: gate.heldBack,
    };
  });
}

/** The approver an OS-level surface names: the user cfh runs as. */
export function osApprover(surface: Approver['surface']): Approver {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    user = `uid ${process.getuid?.() ?? -1}`;
  }
  return { user, uid: process.getuid?.() ?? -1, host: os.hostname(), surface };
}

function recordedArtifacts(detail: RunDetail): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of detail.events) {
    if (e.type !== 'artifact_written') continue;
    if (typeof e.data.file === 'string' && typeof e.data.sha256 === 'string')
      out.set(e.data.file, e.data.sha256);
  }
  return out;
}
