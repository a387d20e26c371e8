// A tree a delegating run hands its child keeps at least the parent's label there
// (cfc/inherited-labels.ts, AH-CFC-12): joined with the child's own, the tree found
// by identity as the mount-alias check finds it, never by how its path is spelled.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { label } from '../../src/cfc/label.js';
import { planCfc, type CfcPlan } from '../../src/cfc/label-map.js';
import { atLeast, cappedByParents, inheritedFrom } from '../../src/cfc/inherited-labels.js';
import type { SourceTrees } from '../../src/host-trees.js';
import { checkHandedWithinCeiling } from '../../src/engine/children/child-trees.js';
import { ConfigError } from '../../src/errors.js';

const WS = '/workspace';

function profileWith(patch: Record<string, unknown>): Profile {
  return Profile.parse({ ...loadProfile('default').profile, ...patch });
}

/** A directory source by identity: `place` on one disk, trees mounted beneath it. */
function tree(
  target: string,
  place: string,
  beneath: readonly { at: string; place: string }[] = [],
): SourceTrees {
  return {
    target,
    source: place,
    identity: { dev: '65024', ino: createHash('sha256').update(place).digest('hex').slice(0, 12) },
    kind: 'directory',
    names: 2,
    place: { device: '254:0', path: place },
    beneath: beneath.map((b) => ({ at: b.at, place: { device: '254:0', path: b.place } })),
  };
}

const parentProfile = profileWith({
  workspace: { mode: 'ro', label: { confidentiality: ['internal'], integrity: ['repo'] } },
  mounts: [
    { source: '/srv/keys', target: '/keys', mode: 'ro', label: { confidentiality: ['keys'] } },
  ],
  cfc: { mode: 'enforce-explicit', modelClearance: ['internal'], sinks: {} },
});
const parentTrees = [tree(WS, '/home/dev/repo'), tree('/keys', '/srv/keys')];
const parent: CfcPlan = planCfc(parentProfile, { workspaceTarget: WS, hostSources: parentTrees });
const inherited = inheritedFrom(parent.mounts, parentTrees);

/** The child's default workspace label (`repo:untrusted`), and one mount of its own. */
const childProfile = (mountLabel: Record<string, unknown> | undefined): Profile =>
  profileWith({
    mounts: [
      {
        source: '/elsewhere',
        target: '/mine',
        mode: 'ro',
        ...(mountLabel === undefined ? {} : { label: mountLabel }),
      },
    ],
    cfc: { mode: 'enforce-explicit', modelClearance: [], sinks: {} },
  });

describe("a child's mounts of its parent's trees", () => {
  it("the child's workspace keeps the parent's workspace label, joined with its own", () => {
    const plan = planCfc(childProfile({ integrity: ['mine'] }), {
      workspaceTarget: WS,
      hostSources: [tree(WS, '/home/dev/repo'), tree('/mine', '/opt/mine')],
      inherited,
    });
    const ws = plan.mounts[0];
    expect(ws?.label).toEqual(label({ confidentiality: ['internal'] }));
    expect(ws?.labelSource).toBe('parent');
    // Not the parent's tree: the child's own label, as its profile says.
    expect(plan.mounts[1]?.label).toEqual(label({ integrity: ['mine'] }));
    expect(plan.mounts[1]?.labelSource).toBe('profile');
  });

  it("a child mount of the parent's labelled tree under another path keeps the parent's label", () => {
    // Inside the parent's /keys tree, spelled another way.
    const inside = planCfc(childProfile({ integrity: ['mine'] }), {
      workspaceTarget: WS,
      hostSources: [tree(WS, '/home/dev/repo'), tree('/mine', '/srv/keys/team')],
      inherited,
    });
    expect(inside.mounts[1]?.label?.confidentiality).toEqual(['keys']);
    expect(inside.mounts[1]?.clearance).toEqual(['keys']);
    // A tree bound beneath the child's source that is the parent's /keys: by identity.
    const aliased = planCfc(childProfile({ integrity: ['mine'] }), {
      workspaceTarget: WS,
      hostSources: [
        tree(WS, '/home/dev/repo'),
        tree('/mine', '/opt/mine', [{ at: '/opt/mine/k', place: '/srv/keys' }]),
      ],
      inherited,
    });
    expect(aliased.mounts[1]?.label?.confidentiality).toEqual(['keys']);
    expect(aliased.mounts[1]?.labelSource).toBe('parent');
  });

  it("a child is cleared to write the parent's tree with no more than the parent holds it under", () => {
    // The child's profile clears the workspace for `secret` and labels it `keys`: the
    // parent holds it `internal`, so a value the child wrote there under `secret` would come
    // back to the parent under `internal`. The child's reads keep both; its writes: only
    // what the parent holds.
    const child = profileWith({
      workspace: {
        mode: 'ro',
        label: { confidentiality: ['keys'], integrity: ['repo:untrusted'] },
        clearance: ['secret'],
      },
      cfc: { mode: 'enforce-explicit', modelClearance: [], sinks: {} },
    });
    const plan = planCfc(child, {
      workspaceTarget: WS,
      hostSources: [tree(WS, '/home/dev/repo')],
      inherited,
    });
    expect(plan.mounts[0]?.label?.confidentiality).toEqual(['internal', 'keys', 'secret']);
    expect(plan.mounts[0]?.clearance).toEqual(['internal']);
    // Not a child: its own clearance, as its profile says.
    const alone = planCfc(child, {
      workspaceTarget: WS,
      hostSources: [tree(WS, '/home/dev/repo')],
    });
    expect(alone.mounts[0]?.clearance).toEqual(['keys', 'secret']);
    expect(cappedByParents(['a', 'b'], [{ label: undefined }])).toEqual(['a', 'b']);
  });

  it('class 5: a grandchild is held to what every ancestor reads the tree under, not to a middle label', () => {
    // The middle child's profile clears the workspace for `secret`: its label there holds
    // `secret`, its clearance does not (the parent reads it `internal`). Its own child,
    // cleared the same way, may write no more than the middle child may.
    const cleared = profileWith({
      workspace: { mode: 'rw', label: { integrity: ['repo'] }, clearance: ['secret'] },
      cfc: { mode: 'enforce-explicit', modelClearance: [], sinks: {} },
    });
    const trees = [tree(WS, '/home/dev/repo')];
    const mid = planCfc(cleared, { workspaceTarget: WS, hostSources: trees, inherited });
    expect(mid.mounts[0]?.label?.confidentiality).toContain('secret');
    expect(mid.mounts[0]?.clearance).toEqual(['internal']);
    const leaf = planCfc(cleared, {
      workspaceTarget: WS,
      hostSources: trees,
      inherited: inheritedFrom(mid.mounts, trees),
    });
    expect(leaf.mounts[0]?.clearance).toEqual(['internal']);
  });

  it('a tree either side leaves unlabelled stays unlabelled', () => {
    const plan = planCfc(childProfile(undefined), {
      workspaceTarget: WS,
      hostSources: [tree(WS, '/home/dev/repo'), tree('/mine', '/srv/keys')],
      inherited,
    });
    expect(plan.mounts[1]?.label).toBeUndefined();
    expect(atLeast(label({ confidentiality: ['a'] }), [undefined])).toBeUndefined();
    expect(
      atLeast(label({ confidentiality: ['a'], integrity: ['x', 'y'] }), [
        label({ confidentiality: ['b'], integrity: ['y'] }),
      ]),
    ).toEqual(label({ confidentiality: ['a', 'b'], integrity: ['y'] }));
  });

  it('a run that is no child plans as before', () => {
    const plan = planCfc(childProfile({ integrity: ['mine'] }), {
      workspaceTarget: WS,
      hostSources: [tree(WS, '/home/dev/repo'), tree('/mine', '/srv/keys')],
    });
    expect(plan.mounts[0]?.label).toEqual(label({ integrity: ['repo:untrusted'] }));
    expect(plan.mounts[1]?.label).toEqual(label({ integrity: ['mine'] }));
  });
});

describe('a tree handed to a child under a ceiling (AH-CFC-12a)', () => {
  const handed = planCfc(childProfile({ integrity: ['mine'] }), {
    workspaceTarget: WS,
    hostSources: [tree(WS, '/home/dev/repo'), tree('/mine', '/opt/mine')],
    inherited,
  });

  it("is refused when the parent's label of it lies above the ceiling", () => {
    let error: unknown;
    try {
      checkHandedWithinCeiling({ name: 'reader', ceiling: [] }, handed.mounts);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('child_ceiling_exceeded');
    expect((error as ConfigError).message).toMatch(/mount \/workspace .*\[internal\]/);
  });

  it('runs within the ceiling, or without one', () => {
    expect(() => {
      checkHandedWithinCeiling({ name: 'reader', ceiling: ['internal'] }, handed.mounts);
    }).not.toThrow();
    expect(() => {
      checkHandedWithinCeiling({ name: 'reader', ceiling: undefined }, handed.mounts);
    }).not.toThrow();
  });
});
