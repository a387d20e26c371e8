// A sink is a source of what it was cleared to receive (cfc/host-tool-labels.ts heldBack,
// AH-CFC-2/10): a destination's data and a host tool's result carry the confidentiality
// their clearance lets into them, per destination and per host tool entry (an MCP server
// as one: any of its tools can read back what another was sent); a declassifier's result
// its resultLabel alone. Pure logic; the read-back through a real store is
// test/integration/adv-round3-launder.test.ts and cfc-held-back.test.ts.
import { describe, expect, it } from 'vitest';
import { HostToolEntry } from '../../src/config/host-tools-schema.js';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { planCfc, workloadReadable } from '../../src/cfc/label-map.js';
import { heldBack, hostToolLabels } from '../../src/cfc/host-tool-labels.js';
import { label } from '../../src/cfc/label.js';

const WS = '/workspace';

function profileWith(patch: Record<string, unknown>): Profile {
  const base = loadProfile('default').profile;
  return Profile.parse({ ...base, ...patch });
}

function mcp(patch: Record<string, unknown>): HostToolEntry {
  return HostToolEntry.parse({
    name: 'memory',
    kind: 'mcp',
    command: '/usr/bin/node',
    args: ['server.js'],
    resultLabel: { integrity: ['memory'] },
    tools: [
      { name: 'read_graph', riskClass: 'read_only', sideEffectClass: 'none' },
      {
        name: 'create_entities',
        riskClass: 'write_internal',
        sideEffectClass: 'internal_state_change',
        clearance: ['pii'],
      },
    ],
    ...patch,
  });
}

describe('a sink cleared for a label hands it back', () => {
  it('heldBack adds the clearance to confidentiality and keeps integrity', () => {
    const own = label({ confidentiality: ['pii'], integrity: ['vendor'] });
    expect(heldBack(own, ['secret'])).toEqual({
      confidentiality: ['pii', 'secret'],
      integrity: ['vendor'],
    });
    expect(heldBack(own, [])).toBe(own);
  });

  it("a destination's data carries its clearance, and so does exec's read of it", () => {
    const p = profileWith({
      network: {
        mode: 'allowlist',
        allow: ['store.test:80', 'other.test:80'],
        deny: [],
        labels: { 'store.test:80': { integrity: ['vendor'] } },
        clearance: { 'store.test:80': ['secret'] },
        requires: {},
      },
      cfc: { mode: 'enforce-explicit', modelClearance: [], sinks: {} },
    });
    const plan = planCfc(p, { workspaceTarget: WS });
    const byName = new Map(plan.destinations.map((d) => [d.destination, d.label]));
    expect(byName.get('store.test:80')).toEqual({
      confidentiality: ['secret'],
      integrity: ['vendor'],
    });
    // Per destination: one not cleared for anything hands back only its own label.
    expect(byName.get('other.test:80')).toEqual({ confidentiality: [], integrity: ['network'] });
    expect(workloadReadable(plan).labels.flatMap((l) => l.confidentiality)).toContain('secret');
  });

  it('every tool of an MCP server carries what any of its tools may receive', () => {
    const entry = mcp({ clearance: ['secret'] });
    for (const name of ['read_graph', 'create_entities', 'listed_later'])
      expect(hostToolLabels(entry, name).result).toEqual({
        confidentiality: ['pii', 'secret'],
        integrity: ['memory'],
      });
    // Its clearance as a sink is still its own (the tool's over the server's).
    expect(hostToolLabels(entry, 'create_entities').clearance).toEqual(['pii']);
    expect(hostToolLabels(entry, 'read_graph').clearance).toEqual(['secret']);
  });

  it('an exec host tool carries its own clearance; a declassifier its resultLabel alone', () => {
    const exec = HostToolEntry.parse({
      name: 'stash',
      kind: 'exec',
      argv: ['/bin/true'],
      resultLabel: { integrity: ['ops'] },
      clearance: ['secret'],
    });
    expect(hostToolLabels(exec).result).toEqual({
      confidentiality: ['secret'],
      integrity: ['ops'],
    });
    expect(hostToolLabels({ ...exec, declassifies: true }).result).toEqual({
      confidentiality: [],
      integrity: ['ops'],
    });
    // No resultLabel stays unlabelled (a label of its own would claim to know it).
    expect(hostToolLabels({ ...exec, resultLabel: undefined }).result).toBeUndefined();
  });
});
