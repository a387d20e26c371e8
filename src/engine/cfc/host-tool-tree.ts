// The host tool entries a run may reach: its own, and those of every child profile it may
// delegate to, to the depth bound (AH-CFC-12, AH-DEL-1). A descendant's host tool keeps what
// it is given where its configuration says, on the host, as the run's own do: "one host tool
// state, one clearance" (host-tool-sharing.ts) and a mount's store label
// (host-tool-stores.ts hostToolStores) both count them. Every profile of the tree is known
// when the run is planned.
import { resolveChildren } from '../../config/child-profiles.js';
import type { HostToolEntry } from '../../config/host-tools-schema.js';
import type { Profile } from '../../config/profile-schema.js';

export interface TreeEntry {
  /** `this run`, or `child NAME` (the nearest child profile that declares it). */
  readonly where: string;
  readonly entry: HostToolEntry;
}

/** Every host tool entry of `profile` and of every child it may delegate to, by place. */
export function treeHostTools(profile: Profile, depth: number, where = 'this run'): TreeEntry[] {
  const own = profile.hostTools.map((entry) => ({ where, entry }));
  if (depth <= 0 || Object.keys(profile.children).length === 0) return own;
  return [
    ...own,
    ...resolveChildren(profile, depth).flatMap((c) =>
      treeHostTools(c.loaded.profile, depth - 1, `child ${c.name}`),
    ),
  ];
}
