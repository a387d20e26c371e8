// `cfh policy explain` and a run decide alike (AH-CFC-1, AH-TOOL-8): one table of calls
// (built-in tools, host__ exec tools, mcp__ tools, unknown tools, invalid arguments) is
// explained, then proposed by a scripted model in a real run; every decision and rule id
// the run recorded is the one explain gave. Class: the explanation built a narrower surface
// than the run (host tools unknown to it), so it answered `deny (unknown_tool)` for calls a
// run allows.
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, readEvents, useScratch } from './helpers.js';
import { MEMORY_SERVER, NODE, profileFile, scriptFile } from './host-tools-support.js';

const scratch = useScratch('policy-parity');

const CASES: readonly { name: string; input: Record<string, unknown> }[] = [
  { name: 'read_file', input: { path: 'README.md' } },
  { name: 'read_file', input: {} },
  { name: 'host__notify', input: { msg: 'hello' } },
  { name: 'host__notify', input: { msg: 'NOT ALLOWED!' } },
  { name: 'host__peek', input: {} },
  { name: 'mcp__memory__read_graph', input: {} },
  { name: 'mcp__memory__create_entities', input: { entities: [] } },
  { name: 'mcp__memory__delete_entities', input: { entityNames: [] } },
  { name: 'host__nope', input: {} },
  { name: 'nope', input: {} },
];

describe('class: policy explain and a run decide over different surfaces', () => {
  it('explain gives every call of the table the decision and rule id a real run records', async () => {
    const profile = await profileFile(scratch, 'parity', {
      hostTools: [
        {
          name: 'notify',
          kind: 'exec',
          argv: ['/bin/echo', '{msg}'],
          input: { msg: { type: 'string', pattern: '[a-z]+' } },
          riskClass: 'communication',
          sideEffectClass: 'internal_state_change',
        },
        {
          name: 'peek',
          kind: 'exec',
          argv: ['/bin/true'],
          riskClass: 'read_only',
          sideEffectClass: 'none',
        },
        {
          name: 'memory',
          kind: 'mcp',
          command: NODE,
          args: [MEMORY_SERVER],
          env: { MEMORY_FILE_PATH: { value: scratch.path('parity-graph.jsonl') } },
          // create_entities named without classes: unclassified, it asks (as in a run).
          tools: [
            { name: 'read_graph', riskClass: 'read_only', sideEffectClass: 'none' },
            { name: 'create_entities' },
          ],
        },
      ],
      policy: [
        {
          id: 'allow-notify',
          match: { tool: 'host__notify' },
          decision: 'allow',
          reason: 'the ops channel',
        },
      ],
    });
    const explained: { decision: string; rule: string }[] = [];
    for (const c of CASES) {
      const r = await cfh([
        'policy',
        'explain',
        '--profile',
        profile,
        '--json',
        c.name,
        JSON.stringify(c.input),
      ]);
      expect(r.exitCode, r.stderr).toBe(0);
      const e = JSON.parse(r.stdout) as { verdict: { decision: string; rule: string } };
      explained.push({ decision: e.verdict.decision, rule: e.verdict.rule });
    }
    // The table is not trivial: host tools are known to explain, decided by their rules.
    expect(explained[2]).toEqual({ decision: 'allow', rule: 'allow-notify' });
    expect(explained[5]).toEqual({ decision: 'allow', rule: 'default:read_only' });
    expect(explained[6]?.decision).toBe('approval_required');

    const script = await scriptFile(
      scratch,
      'parity',
      CASES.map((c) => [c]),
    );
    const root = scratch.path('art-parity');
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const decided = (await readEvents(await onlyRunDir(root)))
      .filter((e) => e.type === 'permission_decision')
      .map((e) => ({ decision: String(e.data.decision), rule: String(e.data.policy_rule) }));
    expect(decided).toEqual(explained);
  });
});
