// A draft session's diff and apply while the run goes on (`cfh mcp`'s `runs_diff` and
// `runs_apply`; governance extension, "Draft vs commit policy": the draft runs
// automatically, the commit that changes the host needs an approval the operator gave).
//
// The copy is the sandbox's to change, and between calls a process the sandbox left
// running may still be changing it, replacing a directory with a link to the host while
// cfh walks it. So every container of the run is frozen (the cgroup freezer) for the walk:
// nothing in the sandbox runs while cfh reads its copy, as at the end of a run nothing is
// left to. The new contents are kept in the run directory (patch/blobs, in the hash chain)
// and an apply writes the host from those, never from the copy.
//
// An apply names the changes it applies by the digest `runs_diff` showed: if the copy has
// changed since, nothing is applied (`patch_changed`), so an approval bound to the call's
// arguments is an approval of exactly those changes. Once applied, they are the host's: the
// baseline is rebased (written to the run directory, named by the `draft_applied` event),
// and later diffs, applies and the run's own patch show only what came after.
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { WorkspaceError } from '../../errors.js';
import { canonicalJson } from '../../evidence/canonical-json.js';
import { RUN_FILES, type RunDirectory } from '../../evidence/run-directory.js';
import { applyPatch } from '../../workspace/apply-patch.js';
import { checkHost, hostChangedError } from '../../workspace/host-check.js';
import { OWN_AUTHORITY } from '../../workspace/authority.js';
import {
  BASELINE_SCHEMA,
  summarize,
  type BaselineDocument,
  type PatchChange,
  type PatchDocument,
} from '../../workspace/patch.js';
import { sortEntries } from '../../workspace/walk.js';
import {
  gateHostObeyed,
  readHostHeld,
  type Gated,
  type HostHeld,
} from '../../workspace/host-obeyed-gate.js';
import { hostRoot } from '../../workspace/host-root.js';
import type { DraftWalk } from './draft-walk.js';
import type { DraftWorkspace } from './draft-workspace.js';
import { authorityFor } from '../run/write-authority.js';

/** What `runs_diff` shows: the changes since the baseline, and the digest that names them. */
export interface LivePreview {
  readonly sha256: string;
  readonly baseline: string;
  readonly summary: PatchDocument['summary'];
  readonly files: readonly {
    readonly path: string;
    readonly kind: string;
    readonly applicable: boolean;
    readonly heldBack?: true | undefined;
    readonly note?: string | undefined;
  }[];
  /** Class 9: changes at paths a host tool obeys, which runs_apply never writes. */
  readonly heldBack: readonly string[];
  readonly text: string;
  readonly unsupported: number;
  readonly incomplete: string | undefined;
  /** How many of the run's containers were held still while the copy was read. */
  readonly frozen: number;
}

export interface LiveApplied {
  readonly applied: readonly { readonly path: string; readonly kind: string }[];
  readonly summary: PatchDocument['summary'];
  readonly notApplied: number;
  readonly baseline: { readonly file: string; readonly sha256: string };
  readonly leftovers: readonly string[];
  /** Class 9: left out, for the operator to apply by name after the session. */
  readonly heldBack: readonly string[];
}

/** Holds the run's containers still; disposing lets them run again. */
export type FreezeRun = (
  signal: AbortSignal,
) => Promise<AsyncDisposable & { readonly ids: readonly string[] }>;

export class LiveDraft {
  readonly #draft: DraftWorkspace;
  readonly #dir: RunDirectory;
  readonly #freeze: FreezeRun;
  #applies = 0;

  constructor(draft: DraftWorkspace, dir: RunDirectory, freeze: FreezeRun) {
    this.#draft = draft;
    this.#dir = dir;
    this.#freeze = freeze;
  }

  async preview(signal: AbortSignal): Promise<LivePreview> {
    await using frozen = await this.#freeze(signal);
    const walk = await this.#draft.walk(this.#dir, signal);
    return {
      ...this.#previewOf(walk, await this.#hostHeld(signal)),
      frozen: frozen.ids.length,
    };
  }

  /** Applies the changes `expected` names, all or none; `callId`: the call that asked. */
  async apply(expected: string, callId: string, signal: AbortSignal): Promise<LiveApplied> {
    const t0 = performance.now();
    await using frozen = await this.#freeze(signal);
    const walk = await this.#draft.walk(this.#dir, signal);
    const host = await this.#hostHeld(signal);
    const preview = this.#previewOf(walk, host);
    if (preview.sha256 !== expected) {
      throw new WorkspaceError(
        'patch_changed',
        `the draft's changes are ${preview.sha256} now, not ${expected}; nothing was applied; see them with runs_diff and apply what it names`,
        { expected, now: preview.sha256 },
      );
    }
    if (walk.incomplete !== undefined) {
      throw new WorkspaceError(
        'patch_incomplete',
        `the draft's changes were not all read (${walk.incomplete}); cfh applies changes whole or not at all, so nothing was applied`,
      );
    }
    const current = this.#draft.baseline;
    const hostWorkspace = current.document.hostWorkspace;
    // Class 9: the client is the model side; no approval of its call names a path a host
    // tool obeys, so those are never written here (the run's patch keeps them).
    const { changes, heldBack } = this.#gate(walk, host);
    const applicable = changes.filter((c) => c.applicable);
    const summary = summarize(changes);
    const notApplied = changes.length - applicable.length;
    if (applicable.length === 0)
      return { applied: [], summary, notApplied, baseline: current, leftovers: [], heldBack };
    const root = await hostRoot(hostWorkspace);
    const rootStats = await stat(root);
    // As `cfh runs apply` does: the host is read and written with its owner's authority.
    const authority = authorityFor({ uid: rootStats.uid, gid: rootStats.gid });
    const check = await authority.asWriter(() => checkHost(root, applicable, signal));
    if (check.conflicts.length > 0) throw hostChangedError(check.conflicts);
    this.#applies += 1;
    const rebased = rebase(current.document, applicable, walk);
    const file = `workspace-baseline.${String(this.#applies)}.json`;
    const sha256 = await this.#dir.writeFile(file, `${JSON.stringify(rebased)}\n`);
    const result = await applyPatch({
      root,
      changes: applicable,
      openBlob: (sha) =>
        authority.asSelf(() =>
          open(
            path.join(this.#dir.path(RUN_FILES.blobs), sha),
            constants.O_RDONLY | constants.O_NOFOLLOW,
          ),
        ),
      authority,
      owner:
        authority === OWN_AUTHORITY && process.geteuid?.() === 0
          ? { uid: rootStats.uid, gid: rootStats.gid }
          : undefined,
      signal,
      record: async () => {
        await this.#dir.events.append(
          'draft_applied',
          {
            callId,
            hostWorkspace,
            patch: { sha256: expected },
            applied: summary,
            paths: applicable.map((c) => c.path),
            baseline: { file, sha256 },
            ...(heldBack.length === 0 ? {} : { heldBack: [...heldBack] }),
            frozen: frozen.ids.length,
            ms: Math.round(performance.now() - t0),
          },
          true,
        );
      },
    });
    this.#draft.rebase(rebased, file, sha256);
    return {
      applied: result.applied,
      summary,
      notApplied,
      baseline: { file, sha256 },
      leftovers: result.leftovers,
      heldBack,
    };
  }

  /** The walk's changes through the apply gate, with no name: what runs_apply may write. */
  #gate(walk: DraftWalk, host: HostHeld): Gated {
    const gate = gateHostObeyed(this.#dir.runId, walk.changes, [], host);
    const changes = gate.changes.map((c) =>
      c.heldBack === true
        ? {
            ...c,
            note: `held back: a path your tools obey (${gate.obeyedBy.get(c.path) ?? 'a host tool'}); runs_apply never writes it: the operator applies it after the session with cfh runs apply ${this.#dir.runId} --host-obeyed ${c.path}`,
          }
        : c,
    );
    return { changes, heldBack: gate.heldBack, obeyedBy: gate.obeyedBy };
  }

  /** What the host workspace's repository sends git to, read as it is now (class 9). */
  async #hostHeld(signal: AbortSignal): Promise<HostHeld> {
    return readHostHeld(await hostRoot(this.#draft.baseline.document.hostWorkspace), signal);
  }

  #previewOf(walk: DraftWalk, host: HostHeld): Omit<LivePreview, 'frozen'> {
    const baseline = this.#draft.baseline.sha256;
    const { changes, heldBack } = this.#gate(walk, host);
    return {
      // The changes themselves (sides, digests, whether each applies) against this baseline.
      sha256: digestOf(baseline, walk.changes),
      baseline,
      summary: summarize(changes),
      files: changes.map((c) => ({
        path: c.path,
        kind: c.kind,
        applicable: c.applicable,
        ...(c.heldBack === true ? { heldBack: true as const } : {}),
        ...(c.note === undefined ? {} : { note: c.note }),
      })),
      heldBack,
      text: walk.text,
      unsupported: walk.unsupported.length,
      incomplete: walk.incomplete,
    };
  }
}

function digestOf(baseline: string, changes: readonly PatchChange[]): string {
  const named = changes.map((c) => ({
    path: c.path,
    kind: c.kind,
    before: c.before,
    after: c.after,
    applicable: c.applicable,
  }));
  return createHash('sha256')
    .update(canonicalJson({ baseline, changes: named }))
    .digest('hex');
}

/** The baseline with the applied changes taken as the host's: their paths as the copy has them. */
function rebase(
  baseline: BaselineDocument,
  applied: readonly PatchChange[],
  walk: DraftWalk,
): BaselineDocument {
  const now = new Map(walk.entries.map((e) => [e.path, e]));
  const entries = new Map(baseline.entries.map((e) => [e.path, e]));
  for (const c of applied) {
    const e = now.get(c.path);
    if (c.after === null || e === undefined) entries.delete(c.path);
    else entries.set(c.path, e);
  }
  return {
    schema: BASELINE_SCHEMA,
    hostWorkspace: baseline.hostWorkspace,
    rootMode: baseline.rootMode,
    entries: sortEntries([...entries.values()]),
    skipped: baseline.skipped,
  };
}
