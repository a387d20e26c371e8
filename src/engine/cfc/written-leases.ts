// Two runs going at once on one host tree (AH-CFC-2/7): a run reads the records of what
// earlier runs wrote when it is planned (cfc/written-labels.ts), so a run already going
// when another writes a secret into its tree would read it under its own, lower label. So
// every run under CFC holds a lease in the state directory for as long as it lives: the
// trees it mounts and the label it reads each under. A write that would change that label
// (more confidential, or less trusted, than some other live run holds the tree under) is
// refused before it happens. A run's delegators (its parent, theirs) refuse only what they
// would read as less confidential than it is: what a child writes into a tree it was handed
// comes back to them under their own rules (cfc/inherited-labels.ts caps it by their
// clearance, and its trust is theirs to weigh), but a tree a child reaches that they did not
// hand it (a host tool's store under a parent's mount) has no such rule, so a secret the
// child writes there is refused like any other run's (AH-CFC-12). Its siblings and every
// other run refuse both directions: nothing comes back to them under anyone's rules.
//
// The order makes it whole without a common lock: a run writes its lease, then reads the
// records again (recheckWritten); a writer raises the record, then reads the leases. Either
// the lease is there when the writer looks (refused), or the record was raised before the
// run read it (the run fails: it would read the tree under a label that is already wrong).
import { hostname } from 'node:os';
import { readdir, readFile, unlink, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { describeLabel, label, type Label } from '../../cfc/label.js';
import { holdsWritten, placedTree, writtenAt } from '../../cfc/written-labels.js';
import { readWrittenRecords, type WrittenTree } from '../../cfc/written-store.js';
import { writeFileAtomic } from '../../evidence/atomic-file.js';
import { ConfigError } from '../../errors.js';
import { sharedTree, type SourceTrees } from '../../host-trees.js';
import { WORKSPACE_TARGET } from '../../sandbox/mount-policy.js';
import { currentOwner, processStart } from '../../sandbox/owner.js';
import type { CfcPlan } from '../../cfc/label-map.js';

/** What a lease needs of a run's plan (RunPlan). */
export interface LeasePlan {
  readonly profile: { readonly workspace: { readonly mode: string } };
  readonly runId: string;
  /** The runs that delegated to it, the nearest last: their leases do not refuse its writes. */
  readonly ancestry: readonly string[];
  readonly cfc: CfcPlan;
  readonly hostTrees: readonly SourceTrees[];
}

const LEASES = 'leases';
const LEASE = /^[A-Za-z0-9._-]{1,128}\.json$/;

export const WrittenLease = z.strictObject({
  version: z.literal(1),
  runId: z.string().min(1),
  owner: z.strictObject({
    pid: z.number().int().positive(),
    start: z.string(),
    host: z.string(),
  }),
  trees: z.array(
    z.strictObject({
      place: z.strictObject({ device: z.string().min(1), path: z.string().startsWith('/') }),
      host: z.string().startsWith('/'),
      kind: z.enum(['directory', 'file']),
      /** As in a written record: a file's other names, the trees mounted beneath. */
      names: z.number().int().positive(),
      beneath: z.array(
        z.strictObject({
          at: z.string(),
          place: z.strictObject({ device: z.string().min(1), path: z.string() }),
        }),
      ),
      /** What the run reads the tree's content as: its mount's label. */
      label: z.strictObject({
        confidentiality: z.array(z.string()),
        integrity: z.array(z.string()),
      }),
    }),
  ),
});
export type WrittenLease = z.infer<typeof WrittenLease>;

/** A mount without a label vouches for nothing and holds nothing confidential. */
function heldAs(plan: LeasePlan, tree: SourceTrees): Label {
  const m = plan.cfc.mounts.find((x) => x.target === tree.target);
  return m?.label ?? label({});
}

/**
 * The trees the run reads while it lives. A draft run reads its copy, made before the lease
 * is taken and the records read again, never the host workspace afterwards: what another
 * run writes there later does not reach it.
 */
function readTrees(plan: LeasePlan): readonly SourceTrees[] {
  if (plan.profile.workspace.mode !== 'draft') return plan.hostTrees;
  return plan.hostTrees.filter((t) => t.target !== WORKSPACE_TARGET);
}

function leaseOf(plan: LeasePlan): WrittenLease {
  const owner = currentOwner();
  return {
    version: 1,
    runId: plan.runId,
    owner: { pid: owner.pid, start: owner.start, host: owner.host },
    trees: readTrees(plan).map((t) => ({
      place: { device: t.place.device, path: t.place.path },
      host: t.source,
      kind: t.kind,
      names: t.names,
      beneath: t.beneath.map((b) => ({ at: b.at, place: { ...b.place } })),
      label: {
        confidentiality: [...heldAs(plan, t).confidentiality],
        integrity: [...heldAs(plan, t).integrity],
      },
    })),
  };
}

/**
 * Holds the lease of `plan`'s run until disposed, after checking no record was raised past
 * the plan's labels since it was read (then the run fails: `written_labels_changed`).
 */
export async function holdLease(
  plan: LeasePlan,
  dir: string,
  signal: AbortSignal,
): Promise<AsyncDisposable> {
  signal.throwIfAborted();
  const leases = path.join(dir, LEASES);
  await mkdir(leases, { recursive: true, mode: 0o700 });
  const file = path.join(leases, `${plan.runId}.json`);
  await writeFileAtomic(file, `${JSON.stringify(leaseOf(plan))}\n`, 0o600);
  const lease = {
    async [Symbol.asyncDispose]() {
      await unlink(file).catch((e: unknown) => {
        if (!(e instanceof Error && 'code' in e && e.code === 'ENOENT')) throw e;
      });
    },
  };
  try {
    recheckWritten(plan, dir);
  } catch (error) {
    await lease[Symbol.asyncDispose]();
    throw error;
  }
  return lease;
}

/** Fails when a record now raises a mount past the label the plan holds it under. */
function recheckWritten(plan: LeasePlan, dir: string): void {
  const records = readWrittenRecords(dir);
  for (const t of plan.hostTrees) {
    const now = writtenAt(t.target, [t], records);
    if (now === undefined) continue;
    if (holdsWritten(heldAs(plan, t), now.label)) continue;
    throw new ConfigError(
      'written_labels_changed',
      `run ${now.runs.at(-1) ?? '?'} wrote ${describeLabel(now.label)} into '${t.source}' while this run was being planned`,
      { field: 'workspace', value: t.source },
      'run it again: it is then planned with what was written',
    );
  }
}

function alive(lease: WrittenLease): boolean {
  if (lease.owner.host !== hostname()) return true;
  return processStart(lease.owner.pid) === lease.owner.start;
}

/** A lease cfh cannot read: what it holds is unknown, so it refuses every write. */
interface Unreadable {
  readonly file: string;
  readonly unreadable: true;
}

async function readLeases(
  dir: string,
): Promise<({ file: string; lease: WrittenLease } | Unreadable)[]> {
  const leases = path.join(dir, LEASES);
  let names: string[];
  try {
    names = await readdir(leases);
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return [];
    throw error;
  }
  const out: ({ file: string; lease: WrittenLease } | Unreadable)[] = [];
  for (const name of names.filter((n) => LEASE.test(n))) {
    const file = path.join(leases, name);
    const text = await readFile(file, 'utf8').catch(() => undefined);
    // Ended since the listing: not a lease any more. Written atomically, so a lease that
    // does not parse is not one half-written: fail closed.
    if (text === undefined) continue;
    const parsed = WrittenLease.safeParse(safeJson(text));
    out.push(parsed.success ? { file, lease: parsed.data } : { file, unreadable: true });
  }
  return out;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * What refuses a write of `written` into `tree` (undefined: nothing): the leases of the runs
 * in `exempt` aside (the writer), those of its `delegators` for confidentiality only (above).
 */
export async function leaseAgainst(
  dir: string,
  tree: WrittenTree,
  written: Label,
  exempt: readonly string[],
  delegators: readonly string[] = [],
): Promise<string | undefined> {
  const into = placedTree({ ...tree, host: tree.source });
  for (const entry of await readLeases(dir)) {
    if ('unreadable' in entry)
      return `the lease '${entry.file}' cannot be read, so what its run holds is unknown; remove it if no cfh run is going`;
    const { file, lease } = entry;
    if (exempt.includes(lease.runId)) continue;
    const delegator = delegators.includes(lease.runId);
    if (!alive(lease)) {
      // Its run is gone (a SIGKILLed cfh): it reads nothing any more.
      await unlink(file).catch(() => undefined);
      continue;
    }
    for (const t of lease.trees) {
      if (sharedTree(into, placedTree(t)) === undefined) continue;
      const held = label(t.label);
      const holds = delegator
        ? written.confidentiality.every((a) => held.confidentiality.includes(a))
        : holdsWritten(held, written);
      if (!holds)
        return delegator
          ? `run ${lease.runId}, which delegated to this one, has '${t.host}' mounted and reads it as ${describeLabel(held)}: writing ${describeLabel(written)} into '${tree.source}' would reach it under that label`
          : `run ${lease.runId} (pid ${String(lease.owner.pid)}) has '${t.host}' mounted and reads it as ${describeLabel(held)}: writing ${describeLabel(written)} into '${tree.source}' would reach it under that label; let that run end first`;
    }
  }
  return undefined;
}
