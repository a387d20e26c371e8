// A model context carried over a boundary keeps its label (AH-CFC-5/7, AH-CFC-12, AH-ART-4,
// AH-INT-4). Whatever continues or hands on a model context (a resumed run, a restored
// session, a child's task and inputs, an approved plan, a compaction summary) starts the new
// context at the label the old one had, never below it: its confidentiality stays, and its
// integrity can only lower the new one's. Every such path builds its CarriedContext here and
// gives it to the new run's CfcRuntime, which joins it before the first model request and
// records it (`cfc_carried`).
import { UNLABELLED_ATOM } from '../config/cfc-schema.js';
import type { EventRecord } from '../evidence/event-log.js';
import { EVENT_SCHEMAS } from '../evidence/schema/registry.js';
import type { SnapshotCfc, SnapshotMediation } from '../evidence/schema/snapshot.js';
import { join, label, type Label } from './label.js';
import type { HeldValue } from './handles.js';

export type CarriedKind = 'resume' | 'restore' | 'delegation' | 'plan' | 'slot';

export interface CarriedContext {
  readonly kind: CarriedKind;
  /** The run (and call, for a delegation) the context comes from. */
  readonly fromRunId: string;
  readonly fromCallId?: string | undefined;
  readonly label: Label;
  /** How the label was found: the old run's record, or its sources (it recorded none). */
  readonly basis: 'recorded' | 'sources' | 'call';
  /** The values the context's handles name (resume, restore): same names, same referents. */
  readonly values?: readonly HeldValue[] | undefined;
  /** A prompt slot read from a file (engine/cfc/prompt-files.ts): which flag and file. */
  readonly slot?: { readonly flag: '--context' | '--quote'; readonly file: string } | undefined;
}

/**
 * What a run's snapshot says it could show its model: its CFC plan (mounts, destinations,
 * unlabelled sources) and the contract of every tool it had (`mediation`: host tools, MCP
 * tools, `delegate`, each with the label its result carries).
 */
export interface RecordedSources {
  readonly cfc: SnapshotCfc | undefined;
  readonly mediation: SnapshotMediation | undefined;
}

/**
 * The label of a run's model context at its end: its last `cfc_influence` joined with every
 * observation exposed and joined after it. A run that recorded none (CFC disabled) may have
 * shown its model anything it could read: every source of its plan counts, and nothing of
 * its integrity is vouched for.
 */
export function contextLabelAtEnd(
  events: readonly EventRecord[],
  sources: RecordedSources | undefined,
): { label: Label; basis: 'recorded' | 'sources' } {
  let last = -1;
  for (let i = events.length - 1; i >= 0; i -= 1)
    if (events[i]?.type === 'cfc_influence') {
      last = i;
      break;
    }
  const influence =
    last < 0 ? undefined : EVENT_SCHEMAS.cfc_influence.safeParse(events[last]?.data);
  if (influence === undefined || !influence.success)
    return { label: everySource(sources), basis: 'sources' };
  let context = label(influence.data.label);
  for (const e of events.slice(last + 1)) {
    if (e.type !== 'cfc_label') continue;
    const parsed = EVENT_SCHEMAS.cfc_label.safeParse(e.data);
    // An unreadable record may have been an exposure: nothing of integrity is vouched.
    if (!parsed.success) {
      context = join(context, label({ confidentiality: [UNLABELLED_ATOM] }));
      continue;
    }
    if (parsed.data.disposition !== 'exposed' || parsed.data.joined === false) continue;
    context = join(context, label(parsed.data.label));
  }
  return { label: context, basis: 'recorded' };
}

/**
 * Everything a run could have shown its model, by what its snapshot recorded, with no
 * integrity (AH-CFC-5/7): every mount and destination; every tool that runs on the host by
 * the label its result carries (a host or MCP tool's `resultLabel`, `delegate`'s children's
 * ceilings; none: `unlabelled`), since a result reaches the model whatever the tool read to
 * make it; the labels of an MCP entry's unnamed tools. A part not recorded is `unlabelled`:
 * nothing vouches for what it held.
 */
export function everySource(sources: RecordedSources | undefined): Label {
  const cfc = sources?.cfc;
  const mediation = sources?.mediation;
  if (cfc === undefined) return label({ confidentiality: [UNLABELLED_ATOM] });
  const result = (l: { readonly confidentiality: readonly string[] } | null): readonly string[] =>
    l === null ? [UNLABELLED_ATOM] : l.confidentiality;
  const atoms = [
    ...cfc.mounts.flatMap((m) => result(m.label)),
    ...cfc.destinations.flatMap((d) => d.label.confidentiality),
    ...(cfc.unlabelled.length > 0 ? [UNLABELLED_ATOM] : []),
    ...(mediation === undefined
      ? [UNLABELLED_ATOM]
      : [
          // A sandbox tool (cfc null) reads the mounts and destinations above.
          ...mediation.tools.flatMap((t) =>
            t.executor !== 'host' ? [] : t.cfc === null ? [UNLABELLED_ATOM] : result(t.cfc.result),
          ),
          ...Object.values(mediation.unnamedMcpLabels).flatMap((l) => result(l.result)),
        ]),
  ];
  return label({ confidentiality: atoms });
}

/** The label a context starts with: its prompt slots' joined with every carried one. */
export function withCarried(start: Label, carried: readonly CarriedContext[]): Label {
  return carried.reduce((acc, c) => join(acc, c.label), start);
}

/** A carried context whose confidentiality the run's model is not cleared for. */
export interface UnclearedContext {
  readonly context: CarriedContext;
  readonly atoms: readonly string[];
}

/**
 * The carried contexts the model may not receive (AH-CFC-5/7): the model provider is a sink,
 * and a context carried in reaches it whole with the first request, so under an enforce mode
 * one above `modelClearance` refuses the run before anything exists, as an observation above
 * it would be withheld. `unlabelled` is left to the rule for unlabelled sources (an opaque
 * result under enforce-explicit; enforce-strict refused the source at planning).
 */
export function unclearedContexts(
  carried: readonly CarriedContext[],
  clearance: readonly string[],
): UnclearedContext[] {
  return carried.flatMap((context) => {
    const atoms = context.label.confidentiality.filter(
      (a) => a !== UNLABELLED_ATOM && !clearance.includes(a),
    );
    return atoms.length === 0 ? [] : [{ context, atoms }];
  });
}
