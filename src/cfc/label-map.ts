// Where labels come from and where they may go, for one run (CFC integration profile,
// AH-CFC-2/6/9/10): built once at planning from the profile (and `--cfc`, `--label`), never
// from anything a sandbox, a tool or the model says. Sources: the workspace and each mount
// (by the container path a file tool resolves into), each network destination, each host
// tool's result. Sinks: each writable mount, each destination, each host tool, the model.
//
// exec can read every mount of its container and reach every destination and writable mount
// of it, so under an enforcing mode a mount whose confidentiality some other sink of the
// workload container is not cleared for is kept out of that container ("withheld"): it stays
// readable through the file tools, whose every result is labelled, and a value read from it
// can only reach a sink cleared for it.
import path from 'node:path/posix';
import {
  isEnforcing,
  NETWORK_ATOM,
  PROMPT_DIRECT,
  UNLABELLED_ATOM,
  type CfcMode,
  type LabelSpec,
  type SinkRequirement,
} from '../config/cfc-schema.js';
import type { Profile } from '../config/profile-schema.js';
import { label, sameLabel, type Label } from './label.js';
import { sharedTree, type SourceTrees } from '../host-trees.js';
import { imageLabel } from './image-label.js';
import {
  cappedByParents,
  parentLabels,
  raisedBy,
  type InheritedLabels,
} from './inherited-labels.js';
import { targetOf } from './mount-target.js';
import { heldBack, hostToolResultUnlabelled } from './host-tool-labels.js';
import { writtenAt, type WrittenRecord } from './written-labels.js';
import type { NetworkMode } from '../config/postures.js';

export interface MountLabel {
  /** The path inside the containers (`/workspace` for the workspace). */
  readonly target: string;
  readonly writable: boolean;
  /** Undefined: the operator gave it none (`unlabelled`). */
  readonly label: Label | undefined;
  /** Confidentiality atoms a write into it may carry: its label's and its `clearance`. */
  readonly clearance: readonly string[];
  /**
   * `flag`: `--label` replaced the profile's; `parent`: the delegating run's label of the
   * same host tree raised it (cfc/inherited-labels.ts); `written`: what earlier runs wrote
   * into the tree raised it (cfc/written-labels.ts). Recorded in the snapshot.
   */
  readonly labelSource: 'profile' | 'flag' | 'parent' | 'written';
  /** `written`: the runs whose writes raised it. */
  readonly writtenBy?: readonly string[] | undefined;
  /**
   * Raised by what earlier runs wrote: the label and clearance the configuration alone gives
   * (what a resume or a restore compares: a raise only narrows, it changes no authority).
   */
  readonly configured?:
    { readonly label: Label | undefined; readonly clearance: readonly string[] } | undefined;
  /**
   * Whether a value read from it keeps its integrity when a call uses it through a handle:
   * false for an operator's mount (not the workspace) whose label names no integrity, which
   * is data the model never saw (docs/operators.md, "Handles").
   */
  readonly integrityCounts: boolean;
  /** False: kept out of the workload container (exec cannot read or write it). */
  readonly inWorkload: boolean;
  readonly withheldBecause?: string;
}

/**
 * An environment value of exec's container that is a source (cfc/env-labels.ts): what
 * snapshot.cfc records of it is its name and label, never its value.
 */
export interface EnvLabel {
  readonly name: string;
  /** Undefined: the operator gave it none (`unlabelled`). */
  readonly label: Label | undefined;
  /** `flag`: `--label env:NAME=...`; `profile`: the profile's `cfc.envLabels`. */
  readonly labelSource: 'profile' | 'flag';
  /** False: kept out of the workload container's environment (exec never sees it). */
  readonly inWorkload: boolean;
  readonly withheldBecause?: string;
}

export interface DestinationLabel {
  /** As the profile's `network.allow` spells it. */
  readonly destination: string;
  /** What data from it carries (default integrity `network`). */
  readonly label: Label;
  readonly clearance: readonly string[];
  readonly requires: readonly string[];
}

export interface CfcPlan {
  readonly mode: CfcMode;
  /** Where the mode came from: the profile, `--cfc`, or cfh's default. */
  readonly modeSource: 'profile' | 'flag' | 'default';
  readonly modelClearance: readonly string[];
  /** The workspace first, then the profile's mounts in order. */
  readonly mounts: readonly MountLabel[];
  /** `disabled`: nothing comes in or goes out; `open`: anywhere (no destination cleared). */
  readonly network: NetworkMode;
  readonly destinations: readonly DestinationLabel[];
  /** Per built-in tool, the profile's requirement (over the risk-class defaults). */
  readonly sinks: Readonly<Record<string, SinkRequirement>>;
  /** Sources the configuration leaves without a label (`mount /data`, `host tool x`). */
  readonly unlabelled: readonly string[];
  /** The image's own files (cfc/image-label.ts); undefined: cfh's own recipe, not joined. */
  readonly image?: Label | undefined;
  /** The workload's environment values that are sources (cfc/env-labels.ts); absent: none. */
  readonly env?: readonly EnvLabel[] | undefined;
}

export interface CfcPlanOptions {
  readonly workspaceTarget: string;
  /** `--cfc MODE`. */
  readonly mode?: CfcMode | undefined;
  /** `--label TARGET=...`: replaces the label of the mount at TARGET. */
  readonly labels?: readonly { readonly target: string; readonly label: LabelSpec }[];
  /**
   * Each mount's host source by identity (host-trees.ts): two sources sharing a tree, under
   * any names, make its files readable through both targets, so under enforcement the two
   * must carry the same label.
   */
  readonly hostSources?: readonly SourceTrees[];
  /** A child run's: the labels its parent holds the host trees it hands on under. */
  readonly inherited?: InheritedLabels | undefined;
  /** What earlier runs wrote into host trees (cfc/written-store.ts): joined by identity. */
  readonly written?: readonly WrittenRecord[] | undefined;
  /**
   * Mounts a host tool cleared for atoms names a path in (engine/cfc/host-tool-stores.ts): a
   * sink is a source of what it may receive, so a read there carries them too.
   */
  readonly stores?: readonly { readonly target: string; readonly atoms: readonly string[] }[];
}

/**
 * Whether a value read from the mount at `index` (0: the workspace) keeps its integrity in
 * a handle (MountLabel.integrityCounts): always for the workspace and an unlabelled mount,
 * and for a mount whose label names an integrity atom.
 */
export function integrityCounts(index: number, l: Label | undefined): boolean {
  return index === 0 || l === undefined || l.integrity.length > 0;
}

/**
 * Thrown for a `--label` or `network.labels` key that names nothing the run has
 * (`unknown-name`), or for two mounts of one host tree under two labels (`shared-tree`).
 */
export class CfcPlanError extends Error {
  constructor(
    message: string,
    readonly reason: 'unknown-name' | 'shared-tree' = 'unknown-name',
  ) {
    super(message);
  }
}

export function planCfc(profile: Profile, options: CfcPlanOptions): CfcPlan {
  const mode = options.mode ?? profile.cfc.mode;
  const modeSource =
    options.mode !== undefined ? 'flag' : profile.cfc.mode !== 'disabled' ? 'profile' : 'default';
  const given = new Map<string, LabelSpec>();
  for (const l of options.labels ?? []) given.set(targetOf(l.target), l.label);
  const raw = [
    {
      target: targetOf(options.workspaceTarget),
      writable: profile.workspace.mode !== 'ro',
      spec: profile.workspace.label,
      extra: profile.workspace.clearance ?? [],
    },
    ...profile.mounts.map((m) => ({
      target: targetOf(m.target),
      writable: m.mode === 'rw',
      spec: m.label,
      extra: m.clearance ?? [],
    })),
  ];
  for (const target of given.keys())
    if (!raw.some((m) => m.target === target))
      throw new CfcPlanError(
        `--label ${target}: no mount has that target (the run mounts ${raw.map((m) => m.target).join(', ')})`,
      );
  const network = profile.network.mode;
  const allowed = new Set(profile.network.allow);
  for (const [field, map] of [
    ['labels', profile.network.labels],
    ['clearance', profile.network.clearance],
    ['requires', profile.network.requires],
  ] as const)
    for (const dest of Object.keys(map))
      if (!allowed.has(dest))
        throw new CfcPlanError(
          `network.${field}: '${dest}' is not in network.allow (a label names an allowed destination exactly as allow spells it)`,
        );
  const destinations: DestinationLabel[] =
    network === 'disabled'
      ? []
      : profile.network.allow.map((destination) => ({
          destination,
          label: heldBack(
            label(profile.network.labels[destination] ?? { integrity: [NETWORK_ATOM] }),
            profile.network.clearance[destination] ?? [],
          ),
          clearance: profile.network.clearance[destination] ?? [],
          // Under strict, sending to the network is communication: only from the bound
          // direct command, unless the operator says what this destination requires.
          requires:
            profile.network.requires[destination] ??
            (mode === 'enforce-strict' || mode === 'observe' ? [PROMPT_DIRECT] : []),
        }));
  const labelled = raw.map((m, i) => {
    const flagged = given.get(m.target);
    const spec = flagged ?? m.spec;
    // What a mount may be written with, it may hold: a read from it carries its clearance's
    // confidentiality too, or a value written into it would come back out unlabelled.
    const stored = (options.stores ?? []).filter((x) => targetOf(x.target) === m.target);
    const own =
      spec === undefined
        ? undefined
        : label({
            confidentiality: [
              ...spec.confidentiality,
              ...m.extra,
              ...stored.flatMap((x) => x.atoms),
            ],
            integrity: spec.integrity,
          });
    const parents = parentLabels(m.target, i === 0, options.inherited, options.hostSources);
    const { label: byParents, raised } = raisedBy(
      own,
      parents.map((p) => p.label),
    );
    const written = writtenAt(m.target, options.hostSources, options.written);
    const byWritten = raisedBy(byParents, written === undefined ? [] : [written.label]);
    const l = byWritten.label;
    return {
      target: m.target,
      writable: m.writable,
      label: l,
      clearance: cappedByParents([...(l?.confidentiality ?? []), ...m.extra], parents),
      labelSource: raised
        ? ('parent' as const)
        : byWritten.raised
          ? ('written' as const)
          : flagged === undefined
            ? ('profile' as const)
            : ('flag' as const),
      ...(byWritten.raised
        ? {
            writtenBy: written?.runs,
            configured: {
              label: byParents,
              clearance: cappedByParents(
                [...(byParents?.confidentiality ?? []), ...m.extra],
                parents,
              ),
            },
          }
        : {}),
      integrityCounts: integrityCounts(i, l),
    };
  });
  const mounts = labelled.map((m, i): MountLabel => {
    const why =
      i === 0 || !isEnforcing(mode)
        ? undefined
        : withholdReason(m, labelled, destinations, network);
    return why === undefined
      ? { ...m, inWorkload: true }
      : { ...m, inWorkload: false, withheldBecause: why };
  });
  if (isEnforcing(mode)) overlapping(mounts, options.hostSources ?? []);
  const unlabelled = [
    ...mounts.filter((m) => m.label === undefined).map((m) => `mount ${m.target}`),
    ...profile.hostTools
      .filter((t) => hostToolResultUnlabelled(t))
      .map((t) => `host tool ${t.name} (no resultLabel)`),
  ];
  return {
    mode,
    modeSource,
    image: imageLabel(profile.image),
    modelClearance: [...new Set(profile.cfc.modelClearance)].sort(),
    mounts,
    network,
    destinations,
    sinks: profile.cfc.sinks,
    unlabelled,
  };
}

/**
 * Why a mount stays out of the workload container, or undefined: some other sink exec can
 * reach (a writable mount, a destination, anywhere under `open`) is not cleared for its
 * confidentiality.
 */
export function withholdReason(
  m: { target: string; label: Label | undefined },
  all: readonly { target: string; writable: boolean; clearance: readonly string[] }[],
  destinations: readonly DestinationLabel[],
  network: CfcPlan['network'],
): string | undefined {
  // A mount without a label may hold anything: it is kept from exec like a secret one.
  const secret = m.label === undefined ? [UNLABELLED_ATOM] : m.label.confidentiality;
  if (secret.length === 0) return undefined;
  const covers = (clearance: readonly string[]): boolean =>
    secret.every((a) => clearance.includes(a));
  const blockers = [
    ...all
      .filter((o) => o.target !== m.target && o.writable && !covers(o.clearance))
      .map((o) => `${o.target} (rw)`),
    ...(network === 'open' ? ['the open network'] : []),
    ...destinations.filter((d) => !covers(d.clearance)).map((d) => d.destination),
  ];
  return blockers.length === 0
    ? undefined
    : `its confidentiality [${secret.join(', ')}] is not cleared for ${blockers.join(', ')}, which exec can reach`;
}

/**
 * Refuses two mounts of one host tree under different labels (one is a way round the
 * other): compared by identity, so a bind mount of a labelled directory inside another
 * source, or a second path bound to it, is the same tree as under its first name.
 */
function overlapping(mounts: readonly MountLabel[], sources: readonly SourceTrees[]): void {
  const byTarget = new Map(mounts.map((m) => [m.target, m]));
  for (const [i, a] of sources.entries())
    for (const b of sources.slice(i + 1)) {
      const shared = sharedTree(a, b);
      if (shared === undefined) continue;
      const { inner, outer, how } = shared;
      const li = byTarget.get(targetOf(inner.target))?.label;
      const lo = byTarget.get(targetOf(outer.target))?.label;
      if (li !== undefined && lo !== undefined && sameLabel(li, lo)) continue;
      throw new CfcPlanError(
        `mount ${inner.target}: one host tree under two labels: ${how}, so its files are readable as ${outer.target} under its label`,
        'shared-tree',
      );
    }
}

/**
 * The mount a container path resolves into, lexically (the longest target that is the path
 * or a parent of it); relative paths are against the workspace. Undefined: the image's own
 * files (neither a source an operator labels nor one a tool can write on the host). The
 * file tools refuse a path whose links lead out of the mount it names, so the lexical
 * answer is the file's.
 */
export function mountOf(
  plan: CfcPlan,
  containerPath: string,
  workspaceTarget: string,
): MountLabel | undefined {
  const abs = path.normalize(
    containerPath.startsWith('/') ? containerPath : path.join(workspaceTarget, containerPath),
  );
  let best: MountLabel | undefined;
  for (const m of plan.mounts) {
    const inside =
      abs === m.target || abs.startsWith(m.target.endsWith('/') ? m.target : `${m.target}/`);
    if (inside && (best === undefined || m.target.length > best.target.length)) best = m;
  }
  return best;
}

/**
 * Every mount a recursive reader of `containerPath` can reach: the one the path is in, and
 * each mount nested at or below it (grep -r, list_dir of a parent of a mount target). A
 * path in no mount reads the image's own files: labelled with no atoms (public, untrusted).
 */
export function mountsUnder(
  plan: CfcPlan,
  containerPath: string,
  workspaceTarget: string,
): MountLabel[] {
  const abs = targetOf(
    containerPath.startsWith('/') ? containerPath : path.join(workspaceTarget, containerPath),
  );
  const within = mountOf(plan, abs, workspaceTarget);
  const prefix = abs === '/' ? '/' : `${abs}/`;
  const nested = plan.mounts.filter((m) => m !== within && m.target.startsWith(prefix));
  return within === undefined ? nested : [within, ...nested];
}

/**
 * What exec's container can read: its mounts, its environment values that are sources
 * (`printf $TOKEN` reads an `--env` token as `cat` reads a file), and the network when
 * data can come in.
 */
export function workloadReadable(plan: CfcPlan): { labels: Label[]; unlabelled: string[] } {
  const labels: Label[] = [];
  const unlabelled: string[] = [];
  for (const m of plan.mounts) {
    if (!m.inWorkload) continue;
    if (m.label === undefined) unlabelled.push(`mount ${m.target}`);
    else labels.push(m.label);
  }
  for (const e of plan.env ?? []) {
    if (!e.inWorkload) continue;
    if (e.label === undefined) unlabelled.push(`env ${e.name}`);
    else labels.push(e.label);
  }
  if (plan.network === 'open') labels.push(label({ integrity: [NETWORK_ATOM] }));
  for (const d of plan.destinations) labels.push(d.label);
  if (plan.image !== undefined) labels.push(plan.image);
  return { labels, unlabelled };
}

/**
 * What a command run's container can read: as exec's, less nothing: its command is the
 * operator's own and gets every mount and every env value, withheld from exec or not
 * (cfc/env-labels.ts).
 */
export function commandReadable(plan: CfcPlan): { labels: Label[]; unlabelled: string[] } {
  return workloadReadable({
    ...plan,
    mounts: plan.mounts.map((m) => ({ ...m, inWorkload: true })),
    env: plan.env?.map((e) => ({ ...e, inWorkload: true })),
  });
}

/** Every sink exec's container can reach, with the confidentiality each may receive. */
export function workloadSinks(
  plan: CfcPlan,
): { sink: string; clearance: readonly string[]; requires: readonly string[] }[] {
  return [
    ...plan.mounts
      .filter((m) => m.inWorkload && m.writable)
      .map((m) => ({ sink: `mount ${m.target}`, clearance: m.clearance, requires: [] })),
    ...(plan.network === 'open'
      ? [
          {
            sink: 'the open network',
            clearance: [],
            requires:
              plan.mode === 'enforce-strict' || plan.mode === 'observe' ? [PROMPT_DIRECT] : [],
          },
        ]
      : []),
    ...plan.destinations.map((d) => ({
      sink: `destination ${d.destination}`,
      clearance: d.clearance,
      requires: d.requires,
    })),
  ];
}
