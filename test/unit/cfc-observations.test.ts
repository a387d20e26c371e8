// Observation labels by provenance and the model as a sink (engine/cfc/cfc-observations.ts;
// AH-CFC-2/6/7/18, design 3/4): file tools by the mount the path names (the image's own
// files recorded, not joined), exec by all its container can read, host tools by their
// resultLabel joined with their inputs' (a declassifier's alone), every one joined with the
// call's influence and handles, whatever its status; an observation the model is not cleared
// for becomes a handle built from the handle and label alone, an unlabelled one too under
// enforce-explicit, and observe only records the gap.
import { describe, expect, it } from 'vitest';
import type { CfcMode } from '../../src/config/cfc-schema.js';
import { label, type Label } from '../../src/cfc/label.js';
import type { CfcPlan, MountLabel } from '../../src/cfc/label-map.js';
import { CfcRuntime } from '../../src/cfc/runtime.js';
import {
  dispose,
  labelExecuted,
  labelRefused,
  observationLabel,
} from '../../src/engine/cfc/cfc-observations.js';
import type { ToolCallDeps } from '../../src/engine/agent/tool-call-deps.js';
import { BUILTIN_TOOLS } from '../../src/tools/builtins.js';
import type { ToolDefinition } from '../../src/tools/contract.js';
import { ObservationSchema, type Observation } from '../../src/tools/observation.js';

const WS = '/workspace';
const SECRET = label({ confidentiality: ['secret'] });
const REPO = label({ integrity: ['repo:untrusted'] });
const DIRECT = label({ integrity: ['prompt:direct'] });

function mount(target: string, l: Label | undefined, extra: Partial<MountLabel> = {}): MountLabel {
  return {
    target,
    writable: false,
    label: l,
    clearance: [],
    labelSource: 'profile',
    inWorkload: true,
    integrityCounts: true,
    ...extra,
  };
}

function planOf(mode: CfcMode, over: Partial<CfcPlan> = {}): CfcPlan {
  return {
    mode,
    modeSource: 'profile',
    modelClearance: [],
    mounts: [mount(WS, REPO, { writable: true }), mount('/secrets', SECRET)],
    network: 'disabled',
    destinations: [],
    sinks: {},
    unlabelled: [],
    ...over,
  };
}

function runtime(plan: CfcPlan): CfcRuntime {
  return new CfcRuntime(
    plan,
    WS,
    {
      capture: {
        captureId: 'capture-1',
        kernel: 'cfh',
        subject: { uid: 1000, user: 'u', vouched: false },
        surface: 'cli',
        slot: 'prompt',
        sha256: 'a'.repeat(64),
        chars: 1,
      },
      context: 0,
      quoted: 0,
      fromPlan: false,
    },
    { runId: 'run-test', keep: () => Promise.resolve(), carried: [] },
  );
}

const HANDLE = /^cfh-val:[a-z2-7]{20}$/;

function tool(name: string): ToolDefinition {
  const t = BUILTIN_TOOLS.find((b) => b.name === name);
  if (t === undefined) throw new Error(name);
  return t;
}

const hostTool = (result?: Label, declassifies = false): ToolDefinition => ({
  ...tool('read_file'),
  name: 'host__lookup',
  executor: 'host',
  cfc: { result, clearance: [], requires: [], readsBeforeWrite: false, declassifies },
});

const ok = (items: string[]): Observation => ({
  status: 'success',
  summary: 'file content',
  items,
  evidence_refs: ['outputs/call-0001.stdout'],
  next_valid_actions: [],
});

const facts = (plan: CfcPlan, influence: Label = DIRECT, container?: Label) => ({
  plan,
  workspaceTarget: WS,
  influence,
  container,
});

describe('observationLabel: by provenance only', () => {
  const plan = planOf('enforce-explicit');
  it('read_file carries the label of the mount its path names, relative paths in /workspace', () => {
    expect(observationLabel(tool('read_file'), { path: '/secrets/x' }, facts(plan))).toMatchObject({
      source: 'mount /secrets',
      label: SECRET,
      joins: true,
      unlabelled: [],
    });
    expect(observationLabel(tool('read_file'), { path: 'calc.py' }, facts(plan)).label).toEqual(
      REPO,
    );
    // `..` is resolved lexically, as the helper's boundary check does.
    expect(observationLabel(tool('list_dir'), { path: '../secrets' }, facts(plan)).source).toBe(
      'mount /secrets',
    );
  });

  it("the image's own files: source image, not joined", () => {
    expect(observationLabel(tool('read_file'), { path: '/etc/passwd' }, facts(plan))).toMatchObject(
      { source: 'image', joins: false },
    );
  });

  it('grep joins every mount below its start path (-r walks into them)', () => {
    const l = observationLabel(tool('grep'), { pattern: 'x', path: '/' }, facts(plan));
    expect(l.source).toBe('mount /workspace, mount /secrets');
    expect(l.label).toEqual(label({ confidentiality: ['secret'] }));
  });

  it('exec: the influence, every mount in its container, destinations, the container', () => {
    const p = planOf('enforce-explicit', {
      mounts: [
        mount(WS, label({ confidentiality: ['internal'], integrity: ['repo:untrusted'] })),
        mount('/secrets', SECRET, { inWorkload: false }),
      ],
      network: 'allowlist',
      destinations: [
        {
          destination: 'api.test:443',
          label: label({ integrity: ['network'] }),
          clearance: [],
          requires: [],
        },
      ],
    });
    const before = label({ confidentiality: ['pii'] });
    const l = observationLabel(tool('exec'), { command: ['true'] }, facts(p, DIRECT, before));
    // A withheld mount is not readable by exec: no `secret`.
    expect(l).toMatchObject({
      source: 'exec',
      label: label({ confidentiality: ['internal', 'pii'] }),
      joins: true,
    });
  });

  it('a host tool: its resultLabel joined with its inputs; none is unlabelled', () => {
    const ops = label({ integrity: ['ops'] });
    const opsDirect = label({ integrity: ['ops', 'prompt:direct'] });
    expect(observationLabel(hostTool(opsDirect), {}, facts(plan)).label).toEqual(DIRECT);
    expect(observationLabel(hostTool(), {}, facts(plan))).toMatchObject({
      label: label({ confidentiality: ['unlabelled'] }),
      unlabelled: ['host tool host__lookup'],
    });
    // class: a host tool cleared for a secret echoes its input: the input's label stays on it.
    const used = observationLabel(
      hostTool(ops),
      { token: 'cfh-val:x' },
      {
        ...facts(plan),
        explicit: [SECRET],
      },
    );
    expect(used.label.confidentiality).toEqual(['secret']);
    expect(used.declassified).toBeUndefined();
  });

  it('a declassifier the operator declared: its resultLabel alone, what its inputs carried recorded', () => {
    const ops = label({ integrity: ['ops'] });
    const l = observationLabel(hostTool(ops, true), {}, { ...facts(plan), explicit: [SECRET] });
    expect(l.label).toEqual(ops);
    expect(l.declassified?.confidentiality).toEqual(['secret']);
  });

  it('class: a handle used as a file tool argument labels the result, errors included', () => {
    for (const name of ['read_file', 'grep', 'list_dir', 'write_file']) {
      const l = observationLabel(
        tool(name),
        { path: 'cfh-val:x', pattern: 'cfh-val:y' },
        {
          ...facts(plan),
          explicit: [SECRET],
        },
      );
      expect(l.label.confidentiality).toContain('secret');
    }
  });

  it("write_file carries its mount's label (whether it worked says something of the file)", () => {
    const w = observationLabel(tool('write_file'), { path: '/secrets/y' }, facts(plan));
    expect(w).toMatchObject({ source: 'mount /secrets', label: { confidentiality: ['secret'] } });
    const image = observationLabel(tool('write_file'), { path: '/tmp/y' }, facts(plan));
    expect(image).toMatchObject({ source: 'cfh', label: DIRECT });
  });
});

describe('dispose: the model is a sink (AH-CFC-6/18)', () => {
  it('enforce-explicit, modelClearance []: a secret becomes a handle holding the content', async () => {
    const cfc = runtime(planOf('enforce-explicit'));
    const obs = ok(['the secret\n']);
    const l = observationLabel(tool('read_file'), { path: '/secrets/x' }, facts(cfc.plan));
    const d = await dispose(cfc, 'call-0001', obs, l);
    expect(d.kind).toBe('opaque');
    expect(d.expose).toBeUndefined();
    const handle = d.observation.items[0] ?? '';
    expect(handle).toMatch(HANDLE);
    expect(d.observation.summary).toContain(`held as ${handle}`);
    expect(JSON.stringify(d.observation)).not.toContain('the secret');
    expect(ObservationSchema.safeParse(d.observation).success).toBe(true);
    const r = cfc.handles.resolve({ path: handle });
    expect(r).toMatchObject({ kind: 'resolved', value: { path: 'the secret\n' } });
  });

  it('class: an opaque observation answers no question: one shape whatever the call did', async () => {
    const shapes: Observation[] = [
      ok(['the secret\n']),
      { ...ok([]), summary: 'no match', evidence_refs: [] },
      { status: 'error', summary: 'ENOENT', items: [], evidence_refs: [], next_valid_actions: [] },
      { ...ok([]), status: 'timeout', summary: 'the tool ran out of time' },
      { ...ok(['x']), status: 'error', summary: 'exit 1', next_valid_actions: ['retry'] },
    ];
    const seen = new Set<string>();
    for (const [i, obs] of shapes.entries()) {
      const cfc = runtime(planOf('enforce-explicit'));
      const l = observationLabel(tool('grep'), { path: '/secrets', pattern: 'a' }, facts(cfc.plan));
      const d = await dispose(cfc, `call-000${String(i + 1)}`, obs, l);
      const handle = d.observation.items[0] ?? '';
      seen.add(JSON.stringify(d.observation).split(handle).join('H'));
    }
    expect(seen.size).toBe(1);
  });

  it('modelClearance [secret]: exposed, and its label is what joins', async () => {
    const cfc = runtime(planOf('enforce-explicit', { modelClearance: ['secret'] }));
    const obs = ok(['the secret\n']);
    const l = observationLabel(tool('read_file'), { path: '/secrets/x' }, facts(cfc.plan));
    const d = await dispose(cfc, 'call-0001', obs, l);
    expect(d).toMatchObject({ kind: 'exposed', observation: obs, expose: SECRET });
  });

  it('observe: exposed, with what enforcement would do recorded', async () => {
    const cfc = runtime(planOf('observe'));
    const obs = ok(['the secret\n']);
    const l = observationLabel(tool('read_file'), { path: '/secrets/x' }, facts(cfc.plan));
    const d = await dispose(cfc, 'call-0001', obs, l);
    expect(d.kind).toBe('exposed');
    expect(d.reason).toMatch(/enforcement would hold it as a handle/);
    expect(cfc.handles.size).toBe(0);
  });

  it('an unlabelled host tool result: opaque under enforce-explicit, a gap under observe', async () => {
    for (const [mode, kind] of [
      ['enforce-explicit', 'opaque'],
      ['observe', 'exposed'],
    ] as const) {
      const cfc = runtime(planOf(mode));
      const l = observationLabel(hostTool(), {}, facts(cfc.plan));
      const d = await dispose(cfc, 'call-0001', ok(['answer']), l);
      expect(d.kind).toBe(kind);
      if (kind === 'exposed') expect(d.reason).toMatch(/host tool host__lookup has no label/);
      else expect(d.observation.items[0]).toMatch(HANDLE);
    }
  });
});

function recordingDeps(cfc: CfcRuntime | undefined, lifetime?: 'per-run' | 'per-call') {
  const events: { type: string; data: unknown }[] = [];
  const deps = {
    cfc,
    toolLifetime: lifetime,
    recorder: {
      event: (type: string, data: unknown) => {
        events.push({ type, data });
        return Promise.resolve();
      },
    },
  } as unknown as ToolCallDeps;
  return { deps, events };
}

describe('labelExecuted and labelRefused: the events, before the model sees anything', () => {
  it('opaque: cfc_handle minted then cfc_label opaque naming the handle; never the value', async () => {
    const cfc = runtime(planOf('enforce-explicit'));
    const { deps, events } = recordingDeps(cfc);
    const out = await labelExecuted(
      deps,
      'call-0001',
      tool('read_file'),
      { path: '/secrets/x' },
      ok(['the secret\n']),
    );
    const handle = out.observation.items[0] ?? '';
    expect(handle).toMatch(HANDLE);
    expect(events.map((e) => e.type)).toEqual(['cfc_handle', 'cfc_label']);
    expect(events[0]?.data).toMatchObject({ action: 'minted', handle, integrityCounts: true });
    expect(events[1]?.data).toMatchObject({
      disposition: 'opaque',
      handle,
      source: 'mount /secrets',
    });
    // class: digests of hidden values: no digest, no length of the value in the evidence.
    expect(JSON.stringify(events)).not.toContain('the secret');
    expect(Object.keys(events[0]?.data as object).sort()).toEqual(
      ['action', 'callId', 'handle', 'integrityCounts', 'label'].sort(),
    );
  });

  it("the content never matters: a file claiming a label gets its mount's", async () => {
    const cfc = runtime(planOf('enforce-explicit', { modelClearance: ['secret'] }));
    const { deps, events } = recordingDeps(cfc);
    const claim = ok(['{"label":{"confidentiality":[],"integrity":["prompt:direct"]}}']);
    await labelExecuted(deps, 'call-0001', tool('read_file'), { path: '/secrets/x' }, claim);
    expect(events[0]?.data).toMatchObject({ label: SECRET, disposition: 'exposed' });
  });

  it('disabled (no runtime): the observation as it was, no event', async () => {
    const { deps, events } = recordingDeps(undefined);
    const obs = ok(['x']);
    expect(
      (await labelExecuted(deps, 'call-0001', tool('read_file'), { path: 'a' }, obs)).observation,
    ).toBe(obs);
    await labelRefused(deps, 'call-0001', 'denied');
    expect(events).toEqual([]);
  });

  it('exec in a per-run container accumulates its label; per-call does not', async () => {
    for (const lifetime of ['per-run', 'per-call'] as const) {
      const cfc = runtime(planOf('enforce-explicit', { modelClearance: ['secret'] }));
      const { deps } = recordingDeps(cfc, lifetime);
      await labelExecuted(deps, 'call-0001', tool('exec'), { command: ['true'] }, ok([]));
      expect(cfc.containerLabel() === undefined).toBe(lifetime === 'per-call');
    }
  });

  it('a refused call: cfc_label denied, nothing joins', async () => {
    const cfc = runtime(planOf('enforce-explicit'));
    const { deps, events } = recordingDeps(cfc);
    await labelRefused(deps, 'call-0002', 'approval_required');
    expect(events).toEqual([
      expect.objectContaining({
        type: 'cfc_label',
        data: expect.objectContaining({ disposition: 'denied' }),
      }),
    ]);
    expect(cfc.joined).toBe(0);
  });
});
