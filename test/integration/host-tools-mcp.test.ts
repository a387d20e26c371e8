// Host MCP servers nobody here wrote (AH-TOOL-7..10, AH-LIFE-3): the reference
// `server-memory` and `server-everything` from the npm registry, run on the host by a real
// cfh. Reads are allowed, writes ask and are denied without an approval (nothing written);
// a profile rule that allows the write gets it, with the created ids kept for the operator
// and shown to the model as opaque references (handed back: host-tools-refs.test.ts); the environment-printing
// tool never leaks the canary credential into any file of the run; progress is recorded,
// errors and binary results are typed and bounded, a timeout kills the call.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  agentRunArgs,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  toolResults,
  useScratch,
} from './helpers.js';
import {
  EVERYTHING_SERVER,
  MEMORY_SERVER,
  NODE,
  filesUnder,
  leaksIn,
  processesWithEnv,
  profileFile,
  scriptFile,
} from './host-tools-support.js';

const scratch = useScratch('host-mcp');

function memoryTool(graph: string, tag: string): Record<string, unknown> {
  return {
    name: 'memory',
    kind: 'mcp',
    command: NODE,
    args: [MEMORY_SERVER],
    env: { MEMORY_FILE_PATH: { value: graph }, CFH_TEST_TAG: { value: tag } },
    tools: [
      { name: 'read_graph', riskClass: 'read_only', sideEffectClass: 'none' },
      { name: 'open_nodes', riskClass: 'read_only', sideEffectClass: 'none' },
      {
        name: 'create_entities',
        riskClass: 'write_internal',
        sideEffectClass: 'internal_state_change',
        resourceScope: 'project',
        resources: {
          kind: 'entity',
          idField: '/entities/*/name',
          enumerate: 'read_graph lists every entity',
          cancel: 'not cancellable once created',
          cleanup: 'delete_entities with the names',
          retention: 'until deleted from the graph file',
        },
      },
    ],
  };
}

const entities = (name: string) => ({
  entities: [{ name, entityType: 'person', observations: ['met at the test'] }],
});

describe('host MCP server: server-memory', () => {
  it('allows its reads; its writes need approval, are denied non-interactively and write nothing', async () => {
    const graph = scratch.path('denied-graph.jsonl');
    const tag = 'memory-denied';
    const profile = await profileFile(scratch, 'mem-denied', {
      hostTools: [memoryTool(graph, tag)],
    });
    const script = await scriptFile(scratch, 'mem-denied', [
      [{ name: 'mcp__memory__create_entities', input: entities('alice') }],
      [{ name: 'mcp__memory__read_graph', input: {} }],
    ]);
    const root = scratch.path('art-denied');
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const decisions = (await readEvents(dir)).filter((e) => e.type === 'permission_decision');
    expect(decisions.map((e) => [e.data.tool_name, e.data.decision, e.data.policy_rule])).toEqual([
      ['mcp__memory__create_entities', 'approval_required', 'default:write_internal'],
      ['mcp__memory__read_graph', 'allow', 'default:read_only'],
    ]);
    const [write, read] = await toolResults(dir);
    expect(write?.observation.status).toBe('approval_required');
    expect(read?.observation.status).toBe('success');
    // Nothing was sent: the graph holds no entity (the server may not even have made the file).
    const body = existsSync(graph) ? await readFile(graph, 'utf8') : '';
    expect(body).not.toContain('alice');
    const governance = (await readFile(path.join(dir, 'governance.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, any>);
    expect(governance[0]).toMatchObject({
      tool: {
        name: 'mcp__memory__create_entities',
        executor: 'host',
        risk_class: 'write_internal',
      },
      side_effect_committed: false,
    });
    expect(await processesWithEnv('CFH_TEST_TAG', tag)).toEqual([]);
  });

  it('a write the profile allows lands in the graph; ids are kept for the operator, references for the model', async () => {
    const graph = scratch.path('allowed-graph.jsonl');
    const profile = await profileFile(scratch, 'mem-allowed', {
      hostTools: [memoryTool(graph, 'memory-allowed')],
      policy: [
        {
          id: 'test-memory-writes',
          match: { tool: 'mcp__memory__create_entities' },
          decision: 'allow',
          reason: 'the test writes its own scratch graph',
        },
      ],
    });
    // Handing the reference back, to this tool and to others: host-tools-refs.test.ts.
    const script = await scriptFile(scratch, 'mem-allowed', [
      [{ name: 'mcp__memory__create_entities', input: entities('bob-the-operator-only-name') }],
    ]);
    const root = scratch.path('art-allowed');
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await readFile(graph, 'utf8')).toContain('bob-the-operator-only-name');
    const dir = await onlyRunDir(root);
    const [created] = await toolResults(dir);
    expect(created?.observation.status).toBe('success');
    const refs = JSON.stringify(created?.observation).match(/cfh-ref:memory:[a-z2-7]{16}/g) ?? [];
    expect(new Set(refs).size).toBe(1);
    // The model was shown the identifier only as its own words: its call, and the text
    // block echoing that call's strings as written (AH-REF-4; the structured field is the
    // reference); the operator's evidence has it.
    const transcript = await readFile(path.join(dir, 'transcript.jsonl'), 'utf8');
    expect(transcript.split('bob-the-operator-only-name').length - 1).toBe(2);
    expect(JSON.stringify(created?.observation.items)).toContain(refs[0]);
    const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
    expect(report.hostTools.resources).toEqual([
      expect.objectContaining({
        callId: 'call-0001',
        tool: 'mcp__memory__create_entities',
        kind: 'entity',
        ids: ['bob-the-operator-only-name'],
        references: [refs[0]],
        cleanup: 'delete_entities with the names',
      }),
    ]);
  });
});

describe('host MCP server: server-everything', () => {
  const CANARY = `canary-${process.pid}-Zq8/+wL9xK`;

  it('never lets the environment-printing tool leak the canary credential to the model or the evidence', async () => {
    const tag = 'everything-canary';
    const profile = await profileFile(scratch, 'everything', {
      hostTools: [
        {
          name: 'everything',
          kind: 'mcp',
          command: NODE,
          args: [EVERYTHING_SERVER],
          env: {
            API_TOKEN: { fromEnv: 'TEST_CANARY' },
            CFH_TEST_TAG: { value: tag },
            // Belt and braces: nothing of this server may reach past this machine.
            GZIP_ALLOWED_DOMAINS: { value: 'example.test' },
          },
          tools: [
            { name: 'get-env', riskClass: 'read_only', sideEffectClass: 'none' },
            { name: 'echo', riskClass: 'read_only', sideEffectClass: 'none' },
            {
              name: 'trigger-long-running-operation',
              riskClass: 'read_only',
              sideEffectClass: 'none',
            },
            {
              name: 'gzip-file-as-resource',
              riskClass: 'write_local',
              sideEffectClass: 'local_artifact',
            },
            { name: 'get-tiny-image', riskClass: 'read_only', sideEffectClass: 'none' },
            { name: 'get-resource-reference', riskClass: 'read_only', sideEffectClass: 'none' },
            { name: '*' },
          ],
        },
      ],
      policy: [
        {
          id: 'test-gzip',
          match: { tool: 'mcp__everything__gzip-file-as-resource' },
          decision: 'allow',
          reason: 'its error path only (a URL it refuses)',
        },
      ],
    });
    const script = await scriptFile(scratch, 'everything', [
      [{ name: 'mcp__everything__get-env', input: {} }],
      [{ name: 'mcp__everything__echo', input: { message: 'echo of nothing secret' } }],
      [
        {
          name: 'mcp__everything__trigger-long-running-operation',
          input: { duration: 1, steps: 4 },
        },
      ],
      [
        {
          name: 'mcp__everything__gzip-file-as-resource',
          input: { name: 'x.gz', data: 'ftp://files.example.test/x' },
        },
      ],
      [{ name: 'mcp__everything__get-tiny-image', input: {} }],
      [
        {
          name: 'mcp__everything__get-resource-reference',
          input: { resourceType: 'Blob', resourceId: 2 },
        },
      ],
      // Exposed by '*', unclassified: asks, whatever its annotations say (readOnlyHint).
      [{ name: 'mcp__everything__get-sum', input: { a: 1, b: 2 } }],
    ]);
    const root = scratch.path('art-everything');
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
      { env: { TEST_CANARY: CANARY, CFH_KEY_DIR: scratch.path('keys') } },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const [env, echo, long, gzip, image, resource, sum] = await toolResults(dir);

    // The tool did print its environment: the variable is there, its value is not.
    expect(env?.observation.status).toBe('success');
    expect(env?.observation.items.join('')).toContain('"API_TOKEN": "[redacted:API_TOKEN]"');
    expect(leaksIn(await filesUnder(dir), CANARY)).toEqual([]);
    expect(r.stdout + r.stderr).not.toContain(CANARY);

    expect(echo?.observation.items).toEqual(['Echo: echo of nothing secret']);
    expect(long?.observation.status).toBe('success');
    const events = await readEvents(dir);
    const progress = events.filter((e) => e.type === 'host_tool_progress');
    // The SDK handles a notification a tick after a response that came with it, so the last
    // one can be lost when the result follows it at once (docs/conformance.md, deviations).
    expect(progress.length).toBeGreaterThanOrEqual(3);
    for (const [i, p] of progress.entries())
      expect(p.data).toMatchObject({ callId: 'call-0003', progress: i + 1, total: 4 });

    // The tool's error is a typed observation the model can act on, not a failed run.
    expect(gzip?.observation.status).toBe('error');
    expect(gzip?.is_error).toBe(true);
    expect(gzip?.observation.items.join(' ')).toMatch(/Unsupported URL protocol/);

    // Binary content is described and bounded; the raw bytes stay in the evidence.
    expect(image?.observation.items.some((i) => /^\[image image\/png, \d+ bytes/.test(i))).toBe(
      true,
    );
    expect(Math.max(...(image?.observation.items ?? []).map((i) => i.length))).toBeLessThan(200);
    const raw = await readFile(path.join(dir, 'outputs', 'call-0005.stdout'), 'utf8');
    const rawResult = JSON.parse(raw) as { content: { type: string; data?: string }[] };
    expect(rawResult.content.some((b) => b.type === 'image' && (b.data?.length ?? 0) > 100)).toBe(
      true,
    );
    expect(resource?.observation.items.join(' ')).toMatch(
      /\[resource demo:\/\/resource\/.+ bytes of binary content/,
    );

    expect(sum?.observation.status).toBe('approval_required');
    const listed = events.find((e) => e.type === 'host_tools_listed')?.data as {
      exposed: { name: string }[];
    };
    expect(listed.exposed.find((t) => t.name === 'mcp__everything__get-sum')).toMatchObject({
      classified: false,
      permissionPolicy: 'approval_required',
      annotations: { readOnlyHint: true },
    });
    expect(await processesWithEnv('CFH_TEST_TAG', tag)).toEqual([]);
  });

  it('a call past its timeout is killed, typed `timeout`; the next call gets a fresh server', async () => {
    const profile = await profileFile(scratch, 'everything-timeout', {
      hostTools: [
        {
          name: 'slow',
          kind: 'mcp',
          command: NODE,
          args: [EVERYTHING_SERVER],
          env: { CFH_TEST_TAG: { value: 'everything-timeout' } },
          tools: [
            {
              name: 'trigger-long-running-operation',
              riskClass: 'read_only',
              sideEffectClass: 'none',
              timeoutSeconds: 1.5,
            },
            { name: 'echo', riskClass: 'read_only', sideEffectClass: 'none' },
          ],
        },
      ],
    });
    const script = await scriptFile(scratch, 'everything-timeout', [
      [{ name: 'mcp__slow__trigger-long-running-operation', input: { duration: 60, steps: 60 } }],
      [{ name: 'mcp__slow__echo', input: { message: 'still here' } }],
    ]);
    const root = scratch.path('art-timeout');
    const started = Date.now();
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(50_000);
    const dir = await onlyRunDir(root);
    const [slow, echo] = await toolResults(dir);
    expect(slow?.observation.status).toBe('timeout');
    expect(echo?.observation.items).toEqual(['Echo: still here']);
    const events = await readEvents(dir);
    expect(events.find((e) => e.type === 'host_tool_retired')?.data).toMatchObject({
      reason: 'timeout',
    });
    const sessions = events.filter(
      (e) => e.type === 'host_tool_started' && e.data.purpose === 'session',
    );
    expect(sessions).toHaveLength(2);
    expect(await processesWithEnv('CFH_TEST_TAG', 'everything-timeout')).toEqual([]);
  });
});
