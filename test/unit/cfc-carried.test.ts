// The label a run that recorded none (CFC disabled) hands on (cfc/carried.ts everySource):
// every source its snapshot records, its tools' results included (AH-CFC-5/7).
import { describe, expect, it } from 'vitest';
import { contextLabelAtEnd, everySource, unclearedContexts } from '../../src/cfc/carried.js';
import { label } from '../../src/cfc/label.js';
import { UNLABELLED_ATOM } from '../../src/config/cfc-schema.js';
import type {
  HostToolLabelsRecord,
  MediationTool,
  SnapshotCfc,
  SnapshotMediation,
} from '../../src/evidence/schema/snapshot.js';

const cfc = (over: Partial<SnapshotCfc> = {}): SnapshotCfc => ({
  mode: 'disabled',
  modeSource: 'flag',
  fallback: null,
  modelClearance: [],
  mounts: [
    {
      target: '/workspace',
      writable: true,
      label: { confidentiality: [], integrity: ['repo'] },
      clearance: [],
      inWorkload: true,
    },
  ],
  destinations: [],
  sinks: {},
  unlabelled: [],
  promptCapture: null,
  ...over,
});

const labels = (result: HostToolLabelsRecord['result']): HostToolLabelsRecord => ({
  result,
  clearance: [],
  requires: [],
  readsBeforeWrite: false,
  declassifies: false,
});

const tool = (
  name: string,
  executor: 'sandbox' | 'host',
  result?: HostToolLabelsRecord['result'],
): MediationTool => ({
  name,
  executor,
  riskClass: 'read_only',
  sideEffectClass: 'none',
  resourceScope: 'project',
  permissionPolicy: 'allow',
  cfc: result === undefined ? null : labels(result),
});

const mediation = (
  tools: MediationTool[],
  unnamed: Record<string, HostToolLabelsRecord> = {},
): SnapshotMediation => ({
  facts: {
    mode: 'plan',
    workspaceMode: 'direct',
    network: 'disabled',
    rwMounts: true,
    mountChannel: null,
    fromPlan: false,
  },
  tools,
  unnamedMcpLabels: unnamed,
});

const secret = { confidentiality: ['secret'], integrity: [] };

describe('everySource: what a run without labels could have shown its model', () => {
  it("counts a host tool's result label, not only the mounts", () => {
    const l = everySource({
      cfc: cfc(),
      mediation: mediation([tool('read_file', 'sandbox'), tool('host__vault', 'host', secret)]),
    });
    expect(l.confidentiality).toEqual(['secret']);
    expect(l.integrity).toEqual([]);
  });

  it("counts delegate's result (its children's ceilings) like any host tool", () => {
    const l = everySource({
      cfc: cfc(),
      mediation: mediation([
        tool('delegate', 'host', { confidentiality: ['keys'], integrity: [] }),
      ]),
    });
    expect(l.confidentiality).toEqual(['keys']);
  });

  it('a host tool whose result has no label, or no contract, is unlabelled', () => {
    expect(
      everySource({ cfc: cfc(), mediation: mediation([tool('delegate', 'host', null)]) })
        .confidentiality,
    ).toEqual([UNLABELLED_ATOM]);
    expect(
      everySource({ cfc: cfc(), mediation: mediation([tool('runs_diff', 'host')]) })
        .confidentiality,
    ).toEqual([UNLABELLED_ATOM]);
  });

  it("counts an MCP entry's unnamed tools by the entry's label", () => {
    const l = everySource({ cfc: cfc(), mediation: mediation([], { docs: labels(secret) }) });
    expect(l.confidentiality).toEqual(['secret']);
  });

  it('a sandbox tool adds nothing beyond the mounts it reads', () => {
    const l = everySource({ cfc: cfc(), mediation: mediation([tool('read_file', 'sandbox')]) });
    expect(l.confidentiality).toEqual([]);
  });

  it('a snapshot without its tools recorded vouches for nothing: unlabelled', () => {
    expect(everySource({ cfc: cfc(), mediation: undefined }).confidentiality).toEqual([
      UNLABELLED_ATOM,
    ]);
    expect(everySource(undefined).confidentiality).toEqual([UNLABELLED_ATOM]);
  });
});

describe('contextLabelAtEnd', () => {
  it('a run with no cfc_influence is labelled by its sources, tools included', () => {
    const got = contextLabelAtEnd([], {
      cfc: cfc(),
      mediation: mediation([tool('host__vault', 'host', secret)]),
    });
    expect(got.basis).toBe('sources');
    expect(got.label.confidentiality).toEqual(['secret']);
  });
});

describe('unclearedContexts: the model is a sink of every carried context', () => {
  const ctx = (kind: 'plan' | 'slot', confidentiality: string[]) => ({
    kind,
    fromRunId: 'r',
    label: label({ confidentiality }),
    basis: 'sources' as const,
  });

  it('names each context above the clearance and the atoms it is not cleared for', () => {
    const carried = [ctx('plan', ['secret', 'internal']), ctx('slot', ['internal'])];
    expect(unclearedContexts(carried, ['internal'])).toEqual([
      { context: carried[0], atoms: ['secret'] },
    ]);
    expect(unclearedContexts(carried, ['secret', 'internal'])).toEqual([]);
  });

  it('leaves unlabelled to the rule for unlabelled sources', () => {
    expect(unclearedContexts([ctx('plan', [UNLABELLED_ATOM])], [])).toEqual([]);
  });
});
