// What a run writes into the host trees it mounts writable, recorded before the write can
// happen (cfc/written-labels.ts): a call the mediator let run carries what its flow decision
// judged it to carry (AH-CFC-8/10) and the sinks it reaches; each writable mount among them
// is raised in the state directory's record of its tree and the `cfc_written` event says so,
// both durable before the call runs. A draft run's writes count for the host workspace its
// copy was made from. A command run writes whatever its container reads:
// its writable mounts are raised with its container's label before the container starts.
import { UNLABELLED_ATOM } from '../../config/cfc-schema.js';
import { commandReadable } from '../../cfc/label-map.js';
import { join, joinAll, label, type Label } from '../../cfc/label.js';
import { targetOf } from '../../cfc/mount-target.js';
import { holdsWritten } from '../../cfc/written-labels.js';
import { noteWritten, type WrittenTree } from '../../cfc/written-store.js';
import { ConfigError } from '../../errors.js';
import type { EventInput } from '../../evidence/schema/registry.js';
import { storeOf, type StoreTree } from './host-tool-stores.js';
import { holdLease, leaseAgainst, type LeasePlan } from './written-leases.js';

/** How a judged call names a host tool it reaches (cfc/flow.ts sinksOf). */
const HOST_TOOL = 'host tool ';

/** What writing needs of a run's plan (RunPlan). */
export interface WrittenPlan extends LeasePlan {
  readonly storeTrees: readonly StoreTree[];
}

export interface WrittenRecorder {
  event(type: 'cfc_written', data: EventInput<'cfc_written'>, durable: boolean): Promise<unknown>;
}

export class WrittenNotes implements AsyncDisposable {
  readonly #plan: WrittenPlan;
  readonly #dir: string;
  readonly #recorder: WrittenRecorder;
  readonly #lease: AsyncDisposable;
  /** What this run already recorded per target: a write it holds is not recorded again. */
  readonly #held = new Map<string, Label>();

  private constructor(
    plan: WrittenPlan,
    dir: string,
    recorder: WrittenRecorder,
    lease: AsyncDisposable,
  ) {
    this.#plan = plan;
    this.#dir = dir;
    this.#recorder = recorder;
    this.#lease = lease;
  }

  /** The run's notes, holding its lease on the trees it mounts until disposed (written-leases.ts). */
  static async open(
    plan: WrittenPlan,
    dir: string,
    recorder: WrittenRecorder,
    signal: AbortSignal,
  ): Promise<WrittenNotes> {
    return new WrittenNotes(plan, dir, recorder, await holdLease(plan, dir, signal));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#lease[Symbol.asyncDispose]();
  }

  /**
   * Before a call runs: the writable mounts among `sinks` hold `written`. Returns why the
   * call may not run when another live run reads one of its trees under less (the call is
   * then answered as not run).
   */
  async call(
    callId: string,
    judged: { readonly label: Label; readonly sinks: readonly string[] },
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const targets = judged.sinks
      .filter((s) => s.startsWith('mount '))
      .map((s) => targetOf(s.slice('mount '.length)));
    for (const target of targets) {
      const refused = await this.#note(callId, target, judged.label, signal);
      if (refused !== undefined) return refused;
    }
    // A host tool keeps what it is given where its configuration says, on the host, whatever
    // this run mounts: those trees hold it too (host-tool-stores.ts storeTrees).
    for (const sink of judged.sinks.filter((s) => s.startsWith(HOST_TOOL)))
      for (const store of this.#plan.storeTrees.filter((t) =>
        storeOf(t, sink.slice(HOST_TOOL.length)),
      )) {
        const refused = await this.#noteStore(callId, sink, store.tree, judged.label, signal);
        if (refused !== undefined) return refused;
      }
    return undefined;
  }

  async #noteStore(
    callId: string,
    sink: string,
    tree: WrittenTree,
    written: Label,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const key = `${sink}\0${tree.source}`;
    const held = this.#held.get(key);
    if (held !== undefined && holdsWritten(held, written)) return undefined;
    const refused = await this.#raise(tree, written, signal);
    if (refused !== undefined) return refused;
    await this.#recorder.event(
      'cfc_written',
      {
        callId,
        target: sink,
        label: { confidentiality: [...written.confidentiality], integrity: [...written.integrity] },
        tree: tree.source,
        held: 'recorded',
      },
      true,
    );
    this.#held.set(key, held === undefined ? written : join(held, written));
    return undefined;
  }

  /**
   * Raises the record of `tree`, unless another live run reads it under less: looked at
   * before (nothing is raised for a write that will not happen) and after (a run that
   * leased it meanwhile read the records before this raise: written-leases.ts).
   */
  async #raise(
    tree: WrittenTree,
    written: Label,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    // Its own lease aside; its delegators' for confidentiality only (written-leases.ts).
    const { runId, ancestry } = this.#plan;
    const before = await leaseAgainst(this.#dir, tree, written, [runId], ancestry);
    if (before !== undefined) return before;
    await noteWritten(this.#dir, tree, written, runId, signal);
    return leaseAgainst(this.#dir, tree, written, [runId], ancestry);
  }

  /**
   * Before a command run's container starts: every writable mount holds what it reads. Its
   * container has every mount and env value, those withheld from exec's included.
   */
  async command(signal: AbortSignal): Promise<void> {
    const { labels, unlabelled } = commandReadable(this.#plan.cfc);
    const parts = [...labels, ...(unlabelled.length > 0 ? [unknown()] : [])];
    if (parts.length === 0) return;
    const written = joinAll(parts[0] as Label, parts.slice(1));
    for (const m of this.#plan.cfc.mounts) {
      if (!m.writable) continue;
      const refused = await this.#note(null, m.target, written, signal);
      if (refused !== undefined)
        throw new ConfigError(
          'written_tree_in_use',
          `the command could write what it reads into ${m.target}, but ${refused}`,
          { field: 'workspace', value: m.target },
          'run it when the other run has ended, or under a profile that reads no more than that run holds the tree under',
        );
    }
  }

  async #note(
    callId: string | null,
    target: string,
    written: Label,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const mount = this.#plan.cfc.mounts.find((m) => m.target === target);
    if (mount?.writable !== true) return undefined;
    const held = this.#held.get(target);
    if (held !== undefined && holdsWritten(held, written)) return undefined;
    // A draft's copy is a copy of the host workspace, which the plan holds at /workspace:
    // what is written into the copy counts for the host tree, applied or not (cfh cannot
    // tell at the write which change an apply will take).
    const tree = this.#plan.hostTrees.find((t) => targetOf(t.target) === target);
    if (tree !== undefined) {
      const refused = await this.#raise(tree, written, signal);
      if (refused !== undefined) return refused;
    }
    await this.#recorder.event(
      'cfc_written',
      {
        ...(callId === null ? {} : { callId }),
        target,
        label: { confidentiality: [...written.confidentiality], integrity: [...written.integrity] },
        tree: tree?.source ?? null,
        held: tree === undefined ? 'untracked' : 'recorded',
      },
      true,
    );
    this.#held.set(target, held === undefined ? written : join(held, written));
    return undefined;
  }
}

/** A source without a label: of unknown confidentiality, cleared for nobody. */
function unknown(): Label {
  return label({ confidentiality: [UNLABELLED_ATOM] });
}
