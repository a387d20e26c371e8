// What a run writes into the host trees it mounts writable, recorded before the write can
// happen (cfc/written-labels.ts): a call the mediator let run carries what its flow decision
// judged it to carry (AH-CFC-8/10) and the sinks it reaches; each writable mount among them
// is raised in the state directory's record of its tree and the `cfc_written` event says so,
// both durable before the call runs. A draft run's writes count for the host workspace its
// copy was made from. A command run writes whatever its container reads:
// its writable mounts are raised with its container's label before the container starts.
import { UNLABELLED_ATOM } from '../../config/cfc-schema.js';
import { commandReadable, type CfcPlan } from '../../cfc/label-map.js';
import { join, joinAll, label, type Label } from '../../cfc/label.js';
import { targetOf } from '../../cfc/mount-target.js';
import { holdsWritten } from '../../cfc/written-labels.js';
import { noteWritten, type WrittenTree } from '../../cfc/written-store.js';
import type { EventInput } from '../../evidence/schema/registry.js';
import type { SourceTrees } from '../../host-trees.js';
import { storeOf, type StoreTree } from './host-tool-stores.js';

/** How a judged call names a host tool it reaches (cfc/flow.ts sinksOf). */
const HOST_TOOL = 'host tool ';

/** What writing needs of a run's plan (RunPlan). */
export interface WrittenPlan {
  readonly runId: string;
  readonly cfc: CfcPlan;
  readonly hostTrees: readonly SourceTrees[];
  readonly storeTrees: readonly StoreTree[];
}

export interface WrittenRecorder {
  event(type: 'cfc_written', data: EventInput<'cfc_written'>, durable: boolean): Promise<unknown>;
}

export class WrittenNotes {
  readonly #plan: WrittenPlan;
  readonly #dir: string;
  readonly #recorder: WrittenRecorder;
  /** What this run already recorded per target: a write it holds is not recorded again. */
  readonly #held = new Map<string, Label>();

  constructor(plan: WrittenPlan, dir: string, recorder: WrittenRecorder) {
    this.#plan = plan;
    this.#dir = dir;
    this.#recorder = recorder;
  }

  /** Before a call runs: the writable mounts among `sinks` hold `written`. */
  async call(
    callId: string,
    judged: { readonly label: Label; readonly sinks: readonly string[] },
    signal: AbortSignal,
  ): Promise<void> {
    const targets = judged.sinks
      .filter((s) => s.startsWith('mount '))
      .map((s) => targetOf(s.slice('mount '.length)));
    for (const target of targets) await this.#note(callId, target, judged.label, signal);
    // A host tool keeps what it is given where its configuration says, on the host, whatever
    // this run mounts: those trees hold it too (host-tool-stores.ts storeTrees).
    for (const sink of judged.sinks.filter((s) => s.startsWith(HOST_TOOL)))
      for (const store of this.#plan.storeTrees.filter((t) =>
        storeOf(t, sink.slice(HOST_TOOL.length)),
      ))
        await this.#noteStore(callId, sink, store.tree, judged.label, signal);
  }

  async #noteStore(
    callId: string,
    sink: string,
    tree: WrittenTree,
    written: Label,
    signal: AbortSignal,
  ): Promise<void> {
    const key = `${sink}\0${tree.source}`;
    const held = this.#held.get(key);
    if (held !== undefined && holdsWritten(held, written)) return;
    await noteWritten(this.#dir, tree, written, this.#plan.runId, signal);
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
    for (const m of this.#plan.cfc.mounts)
      if (m.writable) await this.#note(null, m.target, written, signal);
  }

  async #note(
    callId: string | null,
    target: string,
    written: Label,
    signal: AbortSignal,
  ): Promise<void> {
    const mount = this.#plan.cfc.mounts.find((m) => m.target === target);
    if (mount?.writable !== true) return;
    const held = this.#held.get(target);
    if (held !== undefined && holdsWritten(held, written)) return;
    // A draft's copy is a copy of the host workspace, which the plan holds at /workspace:
    // what is written into the copy counts for the host tree, applied or not (cfh cannot
    // tell at the write which change an apply will take).
    const tree = this.#plan.hostTrees.find((t) => targetOf(t.target) === target);
    if (tree !== undefined) await noteWritten(this.#dir, tree, written, this.#plan.runId, signal);
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
  }
}

/** A source without a label: of unknown confidentiality, cleared for nobody. */
function unknown(): Label {
  return label({ confidentiality: [UNLABELLED_ATOM] });
}
