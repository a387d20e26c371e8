// The CFC core (src/cfc): the label algebra, the label map built at planning, the flow
// decision and value handles. Pure logic; the engine-side behaviour is proved in
// test/integration/cfc-*.test.ts and the injection suite.
import { describe, expect, it } from 'vitest';
import { LabelSpec, parseLabelFlag } from '../../src/config/cfc-schema.js';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { ValueHandles } from '../../src/cfc/handles.js';
import { join, label, missingIntegrity, uncleared } from '../../src/cfc/label.js';
import { CfcPlanError, mountOf, mountsUnder, planCfc } from '../../src/cfc/label-map.js';
import { judgeFlow, type FlowTool } from '../../src/cfc/flow.js';
import { CfcRuntime } from '../../src/cfc/runtime.js';
import type { SourceTrees } from '../../src/host-trees.js';
import { thrownBy } from './helpers.js';

const WS = '/workspace';

function profileWith(patch: Record<string, unknown>): Profile {
  const base = loadProfile('default').profile;
  return Profile.parse({ ...base, ...patch });
}

const secretsMount = {
  source: '/tmp/secrets',
  target: '/secrets',
  mode: 'ro',
  label: { confidentiality: ['secret'] },
};

describe('labels (AH-CFC-7)', () => {
  it('a join is more secret and less trusted than either part', () => {
    const a = label({ confidentiality: ['pii'], integrity: ['prompt:direct', 'user'] });
    const b = label({ confidentiality: ['secret'], integrity: ['user'] });
    expect(join(a, b)).toEqual({ confidentiality: ['pii', 'secret'], integrity: ['user'] });
    expect(join(b, a)).toEqual(join(a, b));
    expect(Object.isFrozen(join(a, b).confidentiality)).toBe(true);
  });

  it('says what a label lacks against a clearance and a requirement', () => {
    const l = label({ confidentiality: ['secret', 'pii'], integrity: ['user'] });
    expect(uncleared(l, ['pii'])).toEqual(['secret']);
    expect(missingIntegrity(l, ['prompt:direct', 'user'])).toEqual(['prompt:direct']);
  });

  it("refuses cfh's own atoms in an operator's label (AH-CFC-3)", () => {
    expect(LabelSpec.safeParse({ integrity: ['prompt:direct'] }).success).toBe(false);
    expect(LabelSpec.safeParse({ confidentiality: ['unlabelled'] }).success).toBe(false);
    expect(LabelSpec.safeParse({ integrity: ['Repo'] }).success).toBe(false);
    expect(LabelSpec.safeParse({ integrity: ['repo:untrusted'] }).success).toBe(true);
  });

  it('reads --label TARGET=ATOM,... with i: for integrity', () => {
    expect(parseLabelFlag('/secrets=secret,i:ops')).toEqual({
      target: '/secrets',
      label: { confidentiality: ['secret'], integrity: ['ops'] },
    });
    expect(parseLabelFlag('secret')).toMatch(/TARGET=ATOM/);
    expect(parseLabelFlag('/w=i:prompt:direct')).toMatch(/cfh's own atom/);
  });
});

describe('the label map (AH-CFC-2)', () => {
  it('withholds a secret mount from the workload when exec could send it on', () => {
    const p = profileWith({
      mounts: [secretsMount],
      workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: [], sinks: {} },
    });
    const plan = planCfc(p, { workspaceTarget: WS });
    const secrets = plan.mounts.find((m) => m.target === '/secrets');
    expect(secrets?.inWorkload).toBe(false);
    expect(secrets?.withheldBecause).toMatch(/\/workspace \(rw\)/);
    expect(plan.mounts[0]?.inWorkload).toBe(true);
    // Not enforcing: nothing is withheld (observe changes nothing the sandbox does).
    const observe = planCfc(p, { workspaceTarget: WS, mode: 'observe' });
    expect(observe.mounts.every((m) => m.inWorkload)).toBe(true);
  });

  it('keeps it in when every sink exec reaches is cleared for it', () => {
    const p = profileWith({
      mounts: [secretsMount],
      workspace: { mode: 'ro', label: {} },
      cfc: { mode: 'enforce-strict', modelClearance: [], sinks: {} },
    });
    const plan = planCfc(p, { workspaceTarget: WS });
    expect(plan.mounts.every((m) => m.inWorkload)).toBe(true);
    expect(plan.unlabelled).toEqual([]);
  });

  it('names unlabelled sources, and refuses a --label for no mount', () => {
    const p = profileWith({
      workspace: { mode: 'ro' },
      mounts: [{ source: '/tmp/d', target: '/data', mode: 'ro' }],
    });
    expect(planCfc(p, { workspaceTarget: WS }).unlabelled).toEqual([
      'mount /workspace',
      'mount /data',
    ]);
    const relabelled = planCfc(p, {
      workspaceTarget: WS,
      labels: [
        { target: '/data/', label: { confidentiality: ['pii'], integrity: [] } },
        { target: '/workspace', label: { confidentiality: [], integrity: [] } },
      ],
    });
    expect(relabelled.unlabelled).toEqual([]);
    expect(() =>
      planCfc(p, {
        workspaceTarget: WS,
        labels: [{ target: '/nope', label: LabelSpec.parse({}) }],
      }),
    ).toThrow(CfcPlanError);
  });

  it('resolves a path to the innermost mount, lexically', () => {
    const p = profileWith({
      workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] } },
      mounts: [{ ...secretsMount, target: '/workspace/.secrets' }],
    });
    const plan = planCfc(p, { workspaceTarget: WS });
    expect(mountOf(plan, '.secrets/key', WS)?.target).toBe('/workspace/.secrets');
    expect(mountOf(plan, '/workspace/x/../.secrets/key', WS)?.target).toBe('/workspace/.secrets');
    expect(mountOf(plan, '/workspace/.secretsX', WS)?.target).toBe('/workspace');
    expect(mountOf(plan, '/etc/passwd', WS)).toBeUndefined();
  });

  it('refuses a network label for a destination the posture does not allow', () => {
    const p = profileWith({
      network: {
        mode: 'allowlist',
        allow: ['api.example.test:443'],
        deny: [],
        labels: {},
        clearance: { 'evil.example.test:443': ['secret'] },
        requires: {},
      },
    });
    expect(() => planCfc(p, { workspaceTarget: WS })).toThrow(/not in network.allow/);
  });
});

describe('the flow decision (AH-CFC-9/10)', () => {
  const plan = planCfc(
    profileWith({
      mounts: [{ ...secretsMount, mode: 'rw' }],
      workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] } },
      cfc: { mode: 'enforce-strict', modelClearance: [], sinks: {} },
    }),
    { workspaceTarget: WS },
  );
  const write: FlowTool = { name: 'write_file', riskClass: 'write_local', executor: 'sandbox' };
  const secret = label({ confidentiality: ['secret'], integrity: ['prompt:direct'] });
  const direct = label({ integrity: ['prompt:direct'] });

  it('refuses a secret into a mount not cleared for it, and allows it into its own', () => {
    const out = judgeFlow({
      plan,
      workspaceTarget: WS,
      tool: write,
      args: { path: 'notes.txt', content: 'x' },
      influence: direct,
      explicit: [secret],
    });
    expect(out.verdict).toBe('deny');
    expect(out.rule).toBe('cfc:clearance');
    expect(out.reason).toMatch(/mount \/workspace is not cleared for \[secret\]/);
    const own = judgeFlow({
      plan,
      workspaceTarget: WS,
      tool: write,
      args: { path: '/secrets/copy', content: 'x' },
      influence: direct,
      explicit: [secret],
    });
    expect(own.verdict).toBe('allow');
  });

  it('requires prompt:direct influence for a communication sink under strict', () => {
    const send: FlowTool = {
      name: 'host__notify',
      riskClass: 'communication',
      executor: 'host',
      cfc: {
        result: label(),
        clearance: [],
        requires: [],
        readsBeforeWrite: false,
        declassifies: false,
      },
    };
    const clean = judgeFlow({ plan, workspaceTarget: WS, tool: send, args: {}, influence: direct });
    expect(clean.verdict).toBe('allow');
    const tainted = judgeFlow({
      plan,
      workspaceTarget: WS,
      tool: send,
      args: {},
      influence: join(direct, label({ integrity: ['repo:untrusted'] })),
    });
    expect(tainted.verdict).toBe('deny');
    expect(tainted.rule).toBe('cfc:integrity');
    const observed = judgeFlow({
      plan: { ...plan, mode: 'observe' },
      workspaceTarget: WS,
      tool: send,
      args: {},
      influence: label(),
    });
    expect(observed.verdict).toBe('would_deny');
  });

  it('judges exec by everything its container can read and reach', () => {
    const exec: FlowTool = { name: 'exec', riskClass: 'process_execution', executor: 'sandbox' };
    // The secret mount is rw and cleared for itself, the workspace is not: exec, which can
    // read both, may write the secret into the workspace, so it is withheld from exec.
    expect(plan.mounts.find((m) => m.target === '/secrets')?.inWorkload).toBe(false);
    const out = judgeFlow({
      plan,
      workspaceTarget: WS,
      tool: exec,
      args: { argv: ['true'] },
      influence: direct,
    });
    expect(out.verdict).toBe('allow');
    expect(out.label.integrity).toEqual([]);
    const withHandle = judgeFlow({
      plan,
      workspaceTarget: WS,
      tool: exec,
      args: { argv: ['true'] },
      influence: direct,
      explicit: [secret],
    });
    expect(withHandle.verdict).toBe('deny');
    expect(withHandle.violations.map((v) => v.sink)).toContain('mount /workspace');
  });

  it('judges nothing when CFC is disabled', () => {
    const out = judgeFlow({
      plan: { ...plan, mode: 'disabled' },
      workspaceTarget: WS,
      tool: write,
      args: { path: 'x', content: '' },
      influence: label(),
      explicit: [secret],
    });
    expect(out.verdict).toBe('allow');
  });
});

describe('value handles (AH-CFC-18)', () => {
  const kept: string[] = [];
  const table = (runId = 'run-a') =>
    new ValueHandles(runId, (held) => {
      kept.push(held.handle);
      return Promise.resolve();
    });

  it('resolves handles inside any string, keys included, and refuses unknown ones', async () => {
    const h = table();
    const a = await h.mint('call-0001', 's3cr3t', label({ confidentiality: ['secret'] }), true);
    expect(a.handle).toMatch(/^cfh-val:[a-z2-7]{20}$/);
    expect(kept).toContain(a.handle);
    const r = h.resolve({ argv: ['echo', `Bearer ${a.handle}`], [a.handle]: 1 });
    expect(r).toMatchObject({
      kind: 'resolved',
      value: { argv: ['echo', 'Bearer s3cr3t'], s3cr3t: 1 },
    });
    expect(r.kind === 'resolved' && r.used.map((u) => u.handle)).toEqual([a.handle]);
    expect(h.resolve({ x: 'cfh-val:2' })).toEqual({ kind: 'unknown', handles: ['cfh-val:2'] });
    expect(h.resolve({ x: 'no handle' })).toEqual({
      kind: 'resolved',
      value: { x: 'no handle' },
      used: [],
      collisions: [],
    });
  });

  it('names are run-salted, stable for one referent, and inert in another run (AH-REF-2/3)', async () => {
    const a = table('run-a');
    const b = table('run-a');
    const one = await a.mint('call-0001', 'v', label(), true);
    expect(await a.mint('call-0001', 'v', label(), true)).toBe(one);
    expect(a.nameOf('call-0001')).toBe(one.handle);
    // Another table of the same run id draws its own salt: the name does not carry over.
    expect(b.nameOf('call-0001')).not.toBe(one.handle);
    expect(b.resolve(one.handle).kind).toBe('unknown');
    // Continued explicitly (resume, restore): the same name resolves to the same referent.
    await b.inherit(a.values());
    expect(b.resolve(one.handle)).toMatchObject({ kind: 'resolved', value: 'v' });
    const c = await a.mint('call-0002', 'w', label(), true);
    expect(c.handle).not.toBe(one.handle);
  });
});

describe("the run's context label (AH-CFC-3/4)", () => {
  const plan = planCfc(
    profileWith({ cfc: { mode: 'enforce-strict', modelClearance: [], sinks: {} } }),
    {
      workspaceTarget: WS,
    },
  );
  const opts = { runId: 'run-a', keep: () => Promise.resolve(), carried: [] };
  const capture = {
    captureId: 'capture-1',
    kernel: 'cfh' as const,
    subject: { uid: 1000, user: 'dev', vouched: false },
    surface: 'cli' as const,
    slot: 'prompt' as const,
    sha256: 'a'.repeat(64),
    chars: 4,
  };

  it('carries prompt:direct only with a capture record, and loses it on reading data', () => {
    const rt = new CfcRuntime(plan, WS, { capture, context: 0, quoted: 0, fromPlan: false }, opts);
    expect(rt.context().integrity).toEqual(['prompt:direct']);
    expect(rt.authority()).toBe('capture-1');
    rt.expose(label({ integrity: ['repo:untrusted'] }));
    expect(rt.context().integrity).toEqual([]);
    expect(rt.authority()).toBeNull();
    const none = new CfcRuntime(
      plan,
      WS,
      { capture: null, context: 0, quoted: 0, fromPlan: false },
      opts,
    );
    expect(none.context().integrity).toEqual([]);
  });

  it('context and quoted slots never mint authority', () => {
    const rt = new CfcRuntime(plan, WS, { capture, context: 1, quoted: 0, fromPlan: false }, opts);
    expect(rt.context().integrity).toEqual([]);
  });

  it('class: a context carried in keeps its label (resume, restore, a delegation, a plan)', () => {
    for (const kind of ['resume', 'restore', 'delegation', 'plan'] as const) {
      const carried = [
        {
          kind,
          fromRunId: 'run-old',
          label: label({ confidentiality: ['secret'], integrity: ['repo:untrusted'] }),
          basis: 'recorded' as const,
        },
      ];
      const rt = new CfcRuntime(
        plan,
        WS,
        { capture, context: 0, quoted: 0, fromPlan: false },
        { ...opts, carried },
      );
      expect(rt.context().confidentiality).toEqual(['secret']);
      // A fresh capture does not restore what the carried context lost.
      expect(rt.context().integrity).toEqual([]);
      expect(rt.authority()).toBeNull();
    }
  });
});

describe('what the review found (AH-CFC-10)', () => {
  it("a mount's clearance is in what is read from it: a value written in comes out labelled", () => {
    const p = profileWith({
      workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] }, clearance: ['secret'] },
      cfc: { mode: 'enforce-explicit', modelClearance: [], sinks: {} },
    });
    const plan = planCfc(p, { workspaceTarget: WS });
    expect(plan.mounts[0]?.label?.confidentiality).toEqual(['secret']);
  });

  it('a destination exec can reach requires the direct command under strict', () => {
    const p = profileWith({
      network: {
        mode: 'allowlist',
        allow: ['127.0.0.1:8080'],
        deny: [],
        labels: {},
        clearance: {},
        requires: {},
      },
      workspace: { mode: 'ro', label: {} },
      cfc: { mode: 'enforce-strict', modelClearance: [], sinks: {} },
    });
    const plan = planCfc(p, { workspaceTarget: WS });
    const exec: FlowTool = { name: 'exec', riskClass: 'process_execution', executor: 'sandbox' };
    const out = judgeFlow({
      plan,
      workspaceTarget: WS,
      tool: exec,
      args: {},
      influence: label({ integrity: ['prompt:direct', 'network'] }),
    });
    // What came in from the network joins exec's label: it no longer carries prompt:direct.
    expect(out.label.integrity).toEqual([]);
    expect(out.verdict).toBe('deny');
    expect(out.rule).toBe('cfc:integrity');
  });

  it('a recursive read of a parent reaches every mount nested below it', () => {
    const p = profileWith({
      workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] } },
      mounts: [{ ...secretsMount, target: '/workspace/keys' }, secretsMount],
    });
    const plan = planCfc(p, { workspaceTarget: WS });
    expect(mountsUnder(plan, '.', WS).map((m) => m.target)).toEqual([
      '/workspace',
      '/workspace/keys',
    ]);
    expect(mountsUnder(plan, '/', WS).map((m) => m.target)).toEqual([
      '/workspace',
      '/workspace/keys',
      '/secrets',
    ]);
    expect(mountsUnder(plan, '/etc', WS)).toEqual([]);
  });

  it('an unlabelled mount is withheld from exec under enforcement', () => {
    const p = profileWith({
      workspace: { mode: 'rw', label: {} },
      mounts: [{ source: '/tmp/d', target: '/data', mode: 'ro' }],
      cfc: { mode: 'enforce-explicit', modelClearance: [], sinks: {} },
    });
    expect(planCfc(p, { workspaceTarget: WS }).mounts[1]?.inWorkload).toBe(false);
  });

  it('reads a handle to its last character, and refuses keys that collide once resolved', async () => {
    const h = new ValueHandles('run-a', () => Promise.resolve());
    const { handle } = await h.mint('call-0001', 'a', label(), true);
    expect(h.resolve(`${handle}2`)).toEqual({ kind: 'unknown', handles: [`${handle}2`] });
    // Whether keys collide is a fact of the value: reported apart, answered opaquely.
    const r = h.resolve({ a: 1, [handle]: 2 });
    expect(r).toMatchObject({ kind: 'resolved', collisions: [handle] });
  });

  it("a tool's own clearance narrows a mount's, never widens it", () => {
    const p = profileWith({
      workspace: { mode: 'rw', label: {} },
      cfc: {
        mode: 'enforce-explicit',
        modelClearance: [],
        sinks: { write_file: { clearance: ['secret'] } },
      },
    });
    const out = judgeFlow({
      plan: planCfc(p, { workspaceTarget: WS }),
      workspaceTarget: WS,
      tool: { name: 'write_file', riskClass: 'write_local', executor: 'sandbox' },
      args: { path: 'x', content: '' },
      influence: label({ confidentiality: ['secret'] }),
    });
    expect(out.verdict).toBe('deny');
  });
});

/** A directory source by identity: `place` on the root disk, trees mounted beneath it. */
function tree(
  target: string,
  place: string,
  beneath: readonly { at: string; place: string }[] = [],
): SourceTrees {
  return {
    target,
    source: place,
    identity: { dev: '65024', ino: String(place.length) },
    kind: 'directory',
    names: 2,
    place: { device: '254:0', path: place },
    beneath: beneath.map((b) => ({ at: b.at, place: { device: '254:0', path: b.place } })),
  };
}

describe('mounts of one host tree (AH-CFC-2)', () => {
  const p = profileWith({
    workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] } },
    mounts: [secretsMount],
    cfc: { mode: 'enforce-explicit', modelClearance: [], sinks: {} },
  });

  it('refuses a secret mount whose source is inside the workspace source', () => {
    const hostSources = [
      tree('/workspace', '/home/dev/repo'),
      tree('/secrets', '/home/dev/repo/secrets'),
    ];
    expect(() => planCfc(p, { workspaceTarget: WS, hostSources })).toThrow(
      /one host tree under two labels: .*readable as \/workspace under its label/,
    );
    expect(() => planCfc(p, { workspaceTarget: WS, hostSources, mode: 'disabled' })).not.toThrow();
  });

  it('refuses an alias of the secrets bound beneath the workspace: by identity, not by path', () => {
    const hostSources = [
      tree('/workspace', '/home/dev/repo', [{ at: '/home/dev/repo/alias', place: '/srv/secrets' }]),
      tree('/secrets', '/srv/secrets'),
    ];
    const error = thrownBy(() => planCfc(p, { workspaceTarget: WS, hostSources }));
    expect(error).toBeInstanceOf(CfcPlanError);
    expect((error as CfcPlanError).reason).toBe('shared-tree');
    expect((error as CfcPlanError).message).toMatch(
      /^mount \/secrets: one host tree under two labels: '\/srv\/secrets' is reachable through '\/home\/dev\/repo': the tree mounted at '\/home\/dev\/repo\/alias'/,
    );
    // Under one label the alias reads nothing under a weaker one; an unrelated bind is no alias.
    const same = profileWith({
      workspace: { mode: 'rw', label: { confidentiality: ['secret'] } },
      mounts: [secretsMount],
      cfc: { mode: 'enforce-explicit', modelClearance: [], sinks: {} },
    });
    expect(() => planCfc(same, { workspaceTarget: WS, hostSources })).not.toThrow();
    const unrelated = [
      tree('/workspace', '/home/dev/repo', [{ at: '/home/dev/repo/alias', place: '/srv/other' }]),
      tree('/secrets', '/srv/secrets'),
    ];
    expect(() => planCfc(p, { workspaceTarget: WS, hostSources: unrelated })).not.toThrow();
  });
});
