// A profile's child profiles (AH-DEL-1/2, AH-CFC-12/12a), resolved: each entry loaded over
// its own base (never the parent's), its confidentiality ceiling checked against every
// labelled source it would read, its own children checked down to the depth bound. Pure
// apart from reading profile files: a bad child fails the parent's plan before anything
// exists (AH-INV-4).
import { ConfigError } from '../errors.js';
import { loadChildProfile, type LoadedProfile } from './profile-loader.js';
import type { ChildEntry, Profile } from './profile-schema.js';
import { UNLABELLED_ATOM } from './cfc-schema.js';

export interface ResolvedChild {
  readonly name: string;
  readonly entry: ChildEntry;
  readonly loaded: LoadedProfile;
  /** The ceiling in force (AH-CFC-12a): the entry's, or none. */
  readonly ceiling: readonly string[] | undefined;
}

/**
 * Every child of `profile`, resolved. `depth` is how many levels of delegation are still
 * allowed below `profile` (its budgets.maxDelegationDepth at the root, one less per level):
 * a profile with children at depth 0 is refused.
 */
export function resolveChildren(profile: Profile, depth: number): ResolvedChild[] {
  const names = Object.keys(profile.children);
  if (names.length === 0) return [];
  if (depth <= 0)
    throw new ConfigError(
      'child_depth_exceeded',
      `profile ${profile.name}: lists children (${names.join(', ')}) deeper than delegation may go`,
      { profile: profile.name },
      'raise budgets.maxDelegationDepth of the top profile, or drop `children` from this one',
    );
  return names.map((name) => {
    const child = resolveChild(profile, name);
    // Checked now, so a typo three levels down fails the top run's plan.
    resolveChildren(child.loaded.profile, depth - 1);
    return child;
  });
}

export function resolveChild(profile: Profile, name: string): ResolvedChild {
  const entry = profile.children[name];
  if (entry === undefined)
    throw new ConfigError('unknown_child', `profile ${profile.name} has no child ${name}`, {
      profile: profile.name,
      child: name,
    });
  const loaded = loadChildProfile(profile.name, name, entry);
  checkReturnsSchema(profile.name, name, entry.returns.schema);
  const ceiling = entry.ceiling?.confidentiality;
  const capped = ceiling === undefined ? loaded : capToCeiling(loaded, ceiling, name);
  return { name, entry, loaded: capped, ceiling };
}

/**
 * AH-CFC-12a: under a ceiling, a labelled source whose confidentiality is not within it is
 * refused outright (the child could read it whatever its CFC mode), and the model's clearance
 * is cut to the ceiling (what may enter the child's context).
 */
function capToCeiling(
  loaded: LoadedProfile,
  ceiling: readonly string[],
  name: string,
): LoadedProfile {
  const p = loaded.profile;
  const within = new Set(ceiling);
  // A source with no label is of unknown confidentiality: `unlabelled`, within a ceiling
  // only when the ceiling names that atom.
  // A sink hands back what it may receive: its clearance joins (cfc/host-tool-labels.ts heldBack).
  const conf = (
    l: { confidentiality: readonly string[] } | undefined,
    held: readonly string[] = [],
  ): readonly string[] => (l === undefined ? [UNLABELLED_ATOM] : [...l.confidentiality, ...held]);
  const net = p.network;
  const sources: [string, readonly string[]][] = [
    ['the workspace', conf(p.workspace.label, p.workspace.clearance)],
    ...p.mounts.map((m): [string, readonly string[]] => [
      `mount ${m.target}`,
      conf(m.label, m.clearance),
    ]),
    ...[...new Set([...Object.keys(net.labels), ...Object.keys(net.clearance)])].map(
      (d): [string, readonly string[]] => [
        `destination ${d}`,
        conf(net.labels[d] ?? { confidentiality: [] }, net.clearance[d]),
      ],
    ),
    ...p.hostTools.flatMap((t): [string, readonly string[]][] => {
      // An MCP tool's own label, else its server's (cfc/label-map.ts hostToolLabels); any
      // of a server's tools hands back what any of them may receive.
      const own = t.kind === 'mcp' ? t.tools.filter((x) => x.resultLabel !== undefined) : [];
      const byServer = t.kind !== 'mcp' || t.tools.some((x) => x.resultLabel === undefined);
      const held = [
        ...(t.clearance ?? []),
        ...(t.kind === 'mcp' ? t.tools.flatMap((x) => x.clearance ?? []) : []),
      ];
      return [
        ...(byServer
          ? [
              [`host tool ${t.name}`, conf(t.resultLabel, t.declassifies === true ? [] : held)] as [
                string,
                readonly string[],
              ],
            ]
          : []),
        ...own.map((x): [string, readonly string[]] => [
          `host tool ${t.name} ${x.name}`,
          conf(x.resultLabel, (x.declassifies ?? t.declassifies) === true ? [] : held),
        ]),
      ];
    }),
  ];
  for (const [what, atoms] of sources) {
    const above = atoms.filter((a) => !within.has(a));
    if (above.length > 0)
      throw new ConfigError(
        'child_ceiling_exceeded',
        `child ${name}: ${what} is labelled [${above.join(', ')}], above the child's ceiling [${ceiling.join(', ')}]`,
        { child: name, source: what },
        'remove the source from the child profile, or raise its ceiling.confidentiality',
      );
  }
  const modelClearance = p.cfc.modelClearance.filter((a) => within.has(a));
  return { ...loaded, profile: { ...p, cfc: { ...p.cfc, modelClearance } } };
}

/**
 * AH-DEL-4, AH-INV-4: a `returns.schema` may hold no regular expression (`pattern`, `patternProperties`): one that backtracks
 * catastrophically would hold cfh's event loop, and with it every deadline, while it checks
 * a child's answer.
 */
function checkReturnsSchema(
  parent: string,
  child: string,
  schema: Record<string, unknown> | undefined,
): void {
  if (schema === undefined) return;
  const refuse = (why: string): never => {
    throw new ConfigError(
      'child_return_invalid',
      `profile ${parent}, child ${child}: returns.schema ${why}`,
      { profile: parent, child },
      'use types, enums, lengths and required properties; no regular expressions',
    );
  };
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === 'object' && v !== null)
      for (const [k, x] of Object.entries(v)) {
        if (k === 'pattern' || k === 'patternProperties')
          refuse(`uses '${k}': a regular expression could hold cfh while it checks a return`);
        walk(x);
      }
  };
  walk(schema);
}
