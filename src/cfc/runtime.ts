// One run's CFC state (AH-CFC-7/8/16): the plan (label-map.ts), the capture record of the
// direct command, the model context's label as observations are exposed to the model (from
// its prompt slots and any context carried in: carried.ts), the label accumulated by the
// per-run workload container, and the run's value handles. The engine makes one per agent
// run and hands it to the tool calls and the loop; the mediator judges each call's flow with
// it (flow.ts).
import { isEnforcing, PROMPT_DIRECT, type CfcMode } from '../config/cfc-schema.js';
import type { InputCaptureRecord } from '../evidence/schema/events-cfc.js';
import { withCarried, type CarriedContext } from './carried.js';
import { ValueHandles, type HeldValue } from './handles.js';
import { join, label, type Label } from './label.js';
import type { CfcPlan } from './label-map.js';

export interface PromptSlotLabels {
  /** The capture record of `--prompt`, or null: a surface that cannot capture mints none. */
  readonly capture: InputCaptureRecord | null;
  /** How many `--context` and `--quote` slots, and whether an approved plan is included. */
  readonly context: number;
  readonly quoted: number;
  readonly fromPlan: boolean;
}

export interface CfcRuntimeOptions {
  readonly runId: string;
  /** Keeps a held value in the run's evidence before its handle is handed out. */
  readonly keep: (held: HeldValue, inherited: boolean) => Promise<void>;
  /** Model contexts this run continues or was handed (carried.ts). */
  readonly carried: readonly CarriedContext[];
}

export class CfcRuntime {
  readonly plan: CfcPlan;
  readonly workspaceTarget: string;
  readonly capture: InputCaptureRecord | null;
  readonly handles: ValueHandles;
  readonly carried: readonly CarriedContext[];
  #context: Label;
  #joined = 0;
  #container: Label | undefined;

  constructor(
    plan: CfcPlan,
    workspaceTarget: string,
    slots: PromptSlotLabels,
    options: CfcRuntimeOptions,
  ) {
    this.plan = plan;
    this.workspaceTarget = workspaceTarget;
    this.capture = slots.capture;
    this.handles = new ValueHandles(options.runId, options.keep);
    this.carried = options.carried;
    // The direct command carries `prompt:direct` only with its capture record (AH-CFC-3);
    // context, quoted material and an approved plan never do (AH-CFC-4): each joins as a
    // slot of no integrity. A context carried in joins with its own label: never lost.
    let context = label({ integrity: slots.capture === null ? [] : [PROMPT_DIRECT] });
    const others = slots.context + slots.quoted + (slots.fromPlan ? 1 : 0);
    if (others > 0) context = join(context, label());
    this.#context = withCarried(context, options.carried);
  }

  get mode(): CfcMode {
    return this.plan.mode;
  }

  get enforcing(): boolean {
    return isEnforcing(this.plan.mode);
  }

  /** The model context's label now: what a call proposed now carries as its influence. */
  context(): Label {
    return this.#context;
  }

  /** Observations joined into the context so far. */
  get joined(): number {
    return this.#joined;
  }

  /** An observation the model was shown (exposed): its label joins the context (AH-CFC-7). */
  expose(observationLabel: Label): void {
    this.#context = join(this.#context, observationLabel);
    this.#joined += 1;
  }

  /** The capture record whose authority the context still carries (AH-CFC-9), or null. */
  authority(): string | null {
    return this.capture !== null && this.#context.integrity.includes(PROMPT_DIRECT)
      ? this.capture.captureId
      : null;
  }

  /** What has entered the per-run workload container so far (exec's args and reads). */
  containerLabel(): Label | undefined {
    return this.#container;
  }

  noteContainer(entered: Label): void {
    this.#container = this.#container === undefined ? entered : join(this.#container, entered);
  }
}
