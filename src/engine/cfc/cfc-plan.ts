// A run's CFC plan from the profile and the command line (`--cfc MODE`, `--label
// TARGET=ATOM,...`), made at planning with every other refusal, before anything exists
// (AH-INV-4); the capture record of the direct command (AH-CFC-3); the run's CfcRuntime and
// what the snapshot records of it (AH-CFC-14/15).
import { createHash } from 'node:crypto';
import os from 'node:os';
import { CfcMode, isEnforcing, parseLabelFlag, type LabelSpec } from '../../config/cfc-schema.js';
import type { Profile } from '../../config/profile-schema.js';
import { ConfigError } from '../../errors.js';
import type { InputCaptureRecord } from '../../evidence/schema/events-cfc.js';
import type { SnapshotCfc } from '../../evidence/schema/snapshot.js';
import { CfcPlanError, planCfc, type CfcPlan } from '../../cfc/label-map.js';
import type { Label } from '../../cfc/label.js';
import type { InheritedLabels } from '../../cfc/inherited-labels.js';
import type { WrittenRecord } from '../../cfc/written-labels.js';
import { hostToolStores } from './host-tool-stores.js';
import { treeHostTools } from './host-tool-tree.js';
import { movedRecords } from './written-moved.js';
import { splitEnvLabels, withEnvLabels } from '../../cfc/env-labels.js';
import { CfcRuntime, type CfcRuntimeOptions, type PromptSlotLabels } from '../../cfc/runtime.js';
import type { SpecMount } from '../../substrate/container-spec.js';
import type { SourceTrees } from '../../host-trees.js';

export interface RunCfcOptions {
  /** `--cfc MODE`, as typed. */
  readonly mode?: string | undefined;
  /** `--label TARGET=ATOM,...`, as typed, in order. */
  readonly labels?: readonly string[] | undefined;
  /** `profiles show --resolved`: shown, never run, so enforce-strict does not refuse it. */
  readonly describing?: boolean | undefined;
  /** A child run's: its parent's labels of the trees it hands on (label-map.ts). */
  readonly inherited?: InheritedLabels | undefined;
  /** What earlier runs wrote into host trees (cfc/written-store.ts). */
  readonly written?: readonly WrittenRecord[] | undefined;
  /** The names `--env`/`--env-file` gave: each a source (cfc/env-labels.ts). */
  readonly commandEnv?: readonly string[] | undefined;
}

const MODES = CfcMode.options.join(', ');

export function parseCfcMode(text: string): CfcMode {
  const parsed = CfcMode.safeParse(text);
  if (!parsed.success)
    throw new ConfigError(
      'cfc_mode_invalid',
      `--cfc: '${text}' is not a CFC mode`,
      { field: '--cfc', value: text },
      `give one of ${MODES}`,
    );
  return parsed.data;
}

export function parseLabelFlags(
  values: readonly string[],
): { readonly target: string; readonly label: LabelSpec }[] {
  return values.map((value) => {
    const parsed = parseLabelFlag(value);
    if (typeof parsed === 'string')
      throw new ConfigError(
        'cfc_label_invalid',
        `--label: ${parsed}`,
        { field: '--label', value },
        'give --label TARGET=ATOM,... (i:ATOM for integrity), TARGET a mount target such as /workspace or env:NAME for an --env value',
      );
    return parsed;
  });
}

/**
 * The plan of a run whose mounts are `mounts` (the workspace and the profile's, then the
 * `--mount` flags', which the profile does not list: they are sources like any other, so
 * they are in the plan, unlabelled unless `--label` names them). `trees`: the host trees
 * each reaches (resolveMounts), so two of one tree under two labels are refused.
 */
export function planRunCfc(
  profile: Profile,
  mounts: readonly SpecMount[],
  trees: readonly SourceTrees[],
  workspaceTarget: string,
  options: RunCfcOptions,
): CfcPlan {
  const mode = options.mode === undefined ? undefined : parseCfcMode(options.mode);
  const labels = splitEnvLabels(parseLabelFlags(options.labels ?? []));
  const known = new Set(profile.mounts.map((m) => m.target));
  const extra = mounts
    .filter((m) => m.target !== workspaceTarget && !known.has(m.target))
    .map((m) => ({ source: m.source, target: m.target, mode: m.mode }));
  let plan: CfcPlan;
  try {
    plan = planCfc(
      { ...profile, mounts: [...profile.mounts, ...extra] },
      {
        workspaceTarget,
        mode,
        labels: labels.mounts,
        // By identity: a mount sharing another's tree under another label is refused.
        hostSources: trees,
        inherited: options.inherited,
        // A written tree renamed or moved since is found by its identity (cfc/written-moved.ts).
        written:
          options.written === undefined
            ? undefined
            : [...options.written, ...movedRecords(options.written, trees)],
        // A mount a cleared host tool keeps its state in hands back what it may receive: the
        // run's own host tools and every descendant child's (host-tool-tree.ts).
        stores: hostToolStores(
          treeHostTools(profile, profile.budgets.maxDelegationDepth).map((t) => t.entry),
          mounts,
        ),
      },
    );
  } catch (error) {
    if (!(error instanceof CfcPlanError)) throw error;
    const nested = error.reason === 'shared-tree';
    throw new ConfigError(
      'cfc_label_invalid',
      error.message,
      { field: nested ? 'mounts' : '--label' },
      nested
        ? 'mount each labelled tree from a host directory outside the others (bind mounts included), or give both the same label'
        : 'name a mount target exactly as the run mounts it, a destination as network.allow spells it, or env:NAME for a value the run is given',
    );
  }
  try {
    plan = withEnvLabels(plan, profile, {
      commandEnv: options.commandEnv ?? [],
      flags: labels.env,
    });
  } catch (error) {
    if (!(error instanceof CfcPlanError)) throw error;
    throw new ConfigError('cfc_label_invalid', error.message, { field: '--label' });
  }
  if (plan.mode === 'enforce-strict' && plan.unlabelled.length > 0 && options.describing !== true)
    throw strictRefusal(plan);
  return plan;
}

/** AH-CFC-14: enforce-strict runs nothing whose label cfh would have to guess. */
export function strictRefusal(plan: CfcPlan): ConfigError {
  return new ConfigError(
    'cfc_unlabelled',
    `cfc enforce-strict: no label for ${plan.unlabelled.join(', ')}`,
    { field: 'cfc.mode', value: plan.unlabelled },
    "label each in the profile (a mount's or the workspace's label:, a host tool's resultLabel:, an env value's cfc.envLabels:) or with --label TARGET=ATOM,... (--label env:NAME=ATOM,... for an env value); or run --cfc enforce-explicit, which keeps unlabelled results from the model",
  );
}

/**
 * The capture record of `--prompt` (AH-CFC-3): cfh read the value from its own caller's
 * command line, so the subject is this process's user. Anything else (a file, a plan) gets
 * none and carries no authority.
 */
export function captureOfPrompt(prompt: string): InputCaptureRecord {
  const uid = typeof process.getuid === 'function' ? process.getuid() : null;
  return {
    captureId: 'capture-1',
    kernel: 'cfh',
    subject: { uid, user: osUser(uid), vouched: false },
    surface: 'cli',
    slot: 'prompt',
    sha256: createHash('sha256').update(prompt).digest('hex'),
    chars: prompt.length,
  };
}

/** Looked up once a process: a session asks at every turn, and the answer does not change. */
let osUserName: string | undefined;

function osUser(uid: number | null): string {
  try {
    osUserName ??= os.userInfo().username;
    return osUserName;
  } catch {
    // A uid with no passwd entry (a container's): the number is who it is.
    return uid === null ? 'unknown' : String(uid);
  }
}

/** The runtime the tool calls get; undefined under `disabled`: they behave as without CFC. */
export function cfcRuntimeOf(
  plan: CfcPlan,
  workspaceTarget: string,
  slots: PromptSlotLabels,
  options: CfcRuntimeOptions,
): CfcRuntime | undefined {
  return plan.mode === 'disabled'
    ? undefined
    : new CfcRuntime(plan, workspaceTarget, slots, options);
}

const FALLBACK_OWNER = 'the operator (profile cfc.mode / --cfc)';

/** snapshot.cfc: written by every run, command runs too (AH-CFC-15). */
export function snapshotCfc(
  plan: CfcPlan,
  profileMode: CfcMode,
  capture: InputCaptureRecord | null,
): SnapshotCfc {
  // `--cfc observe|disabled` over a profile that enforces: reduced, and said who owns it.
  const fallback =
    plan.modeSource === 'flag' && isEnforcing(profileMode) && !isEnforcing(plan.mode)
      ? {
          from: profileMode,
          to: plan.mode,
          owner: FALLBACK_OWNER,
          retireWhen: 'set an enforce mode',
        }
      : null;
  return {
    mode: plan.mode,
    modeSource: plan.modeSource,
    fallback,
    modelClearance: [...plan.modelClearance],
    mounts: plan.mounts.map((m) => ({
      target: m.target,
      writable: m.writable,
      label:
        m.label === undefined
          ? null
          : { confidentiality: [...m.label.confidentiality], integrity: [...m.label.integrity] },
      clearance: [...m.clearance],
      labelSource: m.labelSource,
      ...(m.writtenBy === undefined ? {} : { writtenBy: [...m.writtenBy] }),
      ...(m.configured === undefined
        ? {}
        : {
            configured: {
              label: m.configured.label === undefined ? null : labelRecordOf(m.configured.label),
              clearance: [...m.configured.clearance],
            },
          }),
      inWorkload: m.inWorkload,
      ...(m.withheldBecause === undefined ? {} : { withheldBecause: m.withheldBecause }),
    })),
    destinations: plan.destinations.map((d) => ({
      destination: d.destination,
      label: {
        confidentiality: [...d.label.confidentiality],
        integrity: [...d.label.integrity],
      },
      clearance: [...d.clearance],
      requires: [...d.requires],
    })),
    sinks: { ...plan.sinks },
    // Names and labels only: a value never enters the evidence (AH-INV-2).
    env: (plan.env ?? []).map((e) => ({
      name: e.name,
      label: e.label === undefined ? null : labelRecordOf(e.label),
      labelSource: e.labelSource,
      inWorkload: e.inWorkload,
      ...(e.withheldBecause === undefined ? {} : { withheldBecause: e.withheldBecause }),
    })),
    unlabelled: [...plan.unlabelled],
    promptCapture: capture?.captureId ?? null,
  };
}

function labelRecordOf(l: Label): { confidentiality: string[]; integrity: string[] } {
  return { confidentiality: [...l.confidentiality], integrity: [...l.integrity] };
}

/** AH-CFC-15: observe records would-be denials and enforces nothing: reduced assurance. */
export const CFC_OBSERVE_DETAIL = 'CFC observe records would-be denials and enforces nothing';
