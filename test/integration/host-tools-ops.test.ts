// The host-tool channel from the operator's side (AH-CAP-2/4, AH-TOOL-6/7, AH-CONT-3,
// AH-DIAG-1): `capabilities --profile` lists host tools apart from the sandbox tools;
// `doctor --profile` starts and asks each one; a run that needs an unhealthy one fails
// before the first model request; a server that breaks the protocol mid-run fails the run
// with boundary `tool` and the model hears nothing of it, while a JSON-RPC error it answers
// a call with is a typed observation.
import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  REPO_ROOT,
  agentRunArgs,
  cfh,
  onlyRunDir,
  readJson,
  toolResults,
  useScratch,
} from './helpers.js';
import {
  MEMORY_SERVER,
  NODE,
  filesUnder,
  leaksIn,
  processesWithEnv,
  profileFile,
  scriptFile,
} from './host-tools-support.js';

const scratch = useScratch('host-ops');
const EXAMPLE = path.join(REPO_ROOT, 'examples', 'host-tools', 'profile.yaml');

/** An MCP server of the test's own that misbehaves as told (argv[2]). */
const BROKEN_SERVER = `
import { createInterface } from 'node:readline';
const mode = process.argv[2];
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  // 'leaky' puts its credential in everything it says of itself.
  const t = mode === 'leaky' ? process.env.LEAKY_TOKEN : '';
  if (msg.method === 'initialize') {
    if (mode === 'exit-at-initialize') process.exit(3);
    send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'broken', version: '0' + t } } });
  } else if (msg.method === 'tools/list') {
    const tools = [{ name: 'poke', description: 'pokes with ' + t, annotations: { title: t },
      inputSchema: { type: 'object', properties: { x: { type: 'string', description: t } } } }];
    if (mode === 'leaky') tools.push({ name: 'steal-' + t, inputSchema: { type: 'object' } });
    send({ jsonrpc: '2.0', id: msg.id, result: { tools } });
  } else if (msg.method === 'tools/call') {
    if (mode === 'garbage') process.stdout.write('OPERATOR-ONLY-DIAGNOSTIC not json\\n');
    if (mode === 'exit') process.exit(7);
    if (mode === 'rpc-error')
      send({ jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'poke needs a target' } });
  }
});
`;

async function brokenProfile(
  mode: string,
  tools: unknown[] = [{ name: 'poke', riskClass: 'read_only', sideEffectClass: 'none' }],
): Promise<string> {
  const server = await scratch.file('broken-server.mjs', BROKEN_SERVER);
  return profileFile(scratch, `broken-${mode}`, {
    hostTools: [
      {
        name: 'broken',
        kind: 'mcp',
        command: NODE,
        args: [server, mode],
        env: { CFH_TEST_TAG: { value: `broken-${mode}` } },
        timeoutSeconds: 10,
        tools,
      },
    ],
  });
}

describe('capabilities --profile', () => {
  it('lists host tools apart from the sandbox tools, with their authority and no value', async () => {
    const bare = JSON.parse((await cfh(['capabilities', '--json'])).stdout) as Record<string, any>;
    expect(bare.hostTools).toEqual([]);
    expect(bare.hostToolChannel.kinds).toEqual(['mcp', 'exec']);
    const r = await cfh(['capabilities', '--json', '--profile', EXAMPLE]);
    expect(r.exitCode, r.stderr).toBe(0);
    const caps = JSON.parse(r.stdout) as Record<string, any>;
    expect(caps.profile).toBe('host-tools-demo');
    const declared = caps.hostTools as { name: string; kind: string }[];
    expect(declared.map((t) => [t.name, t.kind])).toEqual([
      ['memory', 'mcp'],
      ['notify', 'exec'],
    ]);
    const notify = caps.hostTools[1];
    expect(notify).toMatchObject({
      tool: 'host__notify',
      executor: 'host',
      riskClass: 'communication',
      env: { NOTIFY_TOKEN: { fromEnv: 'DEMO_NOTIFY_TOKEN' }, NOTIFY_LOG: { value: 'literal' } },
      input: { message: { type: 'string', maxLength: 200 } },
    });
    expect(caps.hostTools[0].tools[2]).toMatchObject({
      name: 'mcp__memory__create_entities',
      riskClass: 'write_internal',
      resources: { kind: 'entity', cleanup: expect.any(String) },
    });
    // Never among the parent (sandbox) tools (AH-CONT-3).
    const parent = (caps.parentTools as { name: string }[]).map((t) => t.name);
    expect(parent.some((n) => n.startsWith('mcp__') || n.startsWith('host__'))).toBe(false);
  });
});

describe('doctor --profile', () => {
  it('starts each MCP server, checks initialize and the declared tools; stops it again', async () => {
    const r = await cfh(['doctor', '--json', '--profile', EXAMPLE], {
      env: {
        DEMO_NOTIFY_TOKEN: 'doctor-token-1234',
        CFH_KEY_DIR: scratch.path('keys'),
        CFH_STATE_DIR: scratch.path('state-doctor'),
      },
    });
    const out = JSON.parse(r.stdout) as {
      healthy: boolean;
      checks: { name: string; ok: boolean; detail: string }[];
    };
    expect(out.checks.find((c) => c.name === 'host-tool:memory')).toMatchObject({
      ok: true,
      detail: expect.stringContaining('initialize ok, 9 listed'),
    });
    expect(out.checks.find((c) => c.name === 'host-tool:notify')?.ok).toBe(true);
    expect(r.exitCode).toBe(0);
    expect(JSON.stringify(out)).not.toContain('doctor-token-1234');
  });

  it('reports an unhealthy host tool: a server that dies at initialize, a declared tool missing, a missing credential', async () => {
    const dies = await cfh([
      'doctor',
      '--json',
      '--profile',
      await brokenProfile('exit-at-initialize'),
    ]);
    expect(dies.exitCode).toBe(1);
    const c1 = (
      JSON.parse(dies.stdout) as { checks: { name: string; ok: boolean; detail: string }[] }
    ).checks.at(-1);
    expect(c1).toMatchObject({ name: 'host-tool:broken', ok: false });
    expect(c1?.detail).toMatch(/did not complete initialize: the server exited \(status 3\)/);
    const missing = await cfh([
      'doctor',
      '--json',
      '--profile',
      await brokenProfile('fine', [
        { name: 'absent', riskClass: 'read_only', sideEffectClass: 'none' },
      ]),
    ]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stdout).toContain('absent not listed');
    const noToken = await cfh(['doctor', '--json', '--profile', EXAMPLE]);
    expect(noToken.exitCode).toBe(1);
    expect(noToken.stdout).toContain('fromEnv DEMO_NOTIFY_TOKEN is not set');
    expect(await processesWithEnv('CFH_TEST_TAG', 'broken-exit-at-initialize')).toEqual([]);
  });
});

describe('a run and an unhealthy or broken host tool', () => {
  it('a declared tool the server does not list fails the run before the first model request', async () => {
    const { startMessagesApiServer, okText } = await import('../fixtures/messages-api-server.js');
    const api = await startMessagesApiServer();
    try {
      api.enqueue(okText('never asked'));
      const profile = await profileFile(scratch, 'unhealthy', {
        hostTools: [
          {
            name: 'memory',
            kind: 'mcp',
            command: NODE,
            args: [MEMORY_SERVER],
            env: {
              MEMORY_FILE_PATH: { value: scratch.path('unhealthy.jsonl') },
              CFH_TEST_TAG: { value: 'unhealthy' },
            },
            tools: [{ name: 'no_such_tool', riskClass: 'read_only', sideEffectClass: 'none' }],
          },
        ],
      });
      const root = scratch.path('art-unhealthy');
      const r = await cfh(
        agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile }, [
          '--provider',
          'anthropic',
          '--json',
        ]),
        { env: { ANTHROPIC_API_KEY: 'sk-test-unhealthy', ANTHROPIC_BASE_URL: api.baseURL } },
      );
      expect(r.exitCode).toBe(125);
      expect(api.requests).toHaveLength(0);
      const report = await readJson<Record<string, any>>(
        path.join(await onlyRunDir(root), 'report.json'),
      );
      expect(report.error).toMatchObject({ code: 'host_tool_unhealthy', boundary: 'tool' });
      expect(report.error.message).toContain('no_such_tool is not listed by the server');
      expect(await processesWithEnv('CFH_TEST_TAG', 'unhealthy')).toEqual([]);
    } finally {
      await api.close();
    }
  });

  for (const mode of ['garbage', 'exit'] as const) {
    it(`a server that ${mode === 'garbage' ? 'writes garbage on stdout' : 'exits'} mid-call fails the run (boundary tool); the model hears nothing`, async () => {
      const profile = await brokenProfile(mode);
      const script = await scriptFile(scratch, `broken-${mode}`, [
        [{ name: 'mcp__broken__poke', input: {} }],
      ]);
      const root = scratch.path(`art-broken-${mode}`);
      const r = await cfh(
        agentRunArgs({
          workspace: await scratch.sampleRepo(),
          artifactRoot: root,
          profile,
          script,
        }),
      );
      expect(r.exitCode).toBe(1);
      const dir = await onlyRunDir(root);
      const report = await readJson<Record<string, any>>(path.join(dir, 'report.json'));
      expect(report.error).toMatchObject({ code: 'mcp_call_failed', boundary: 'tool' });
      expect(report.error.message).toMatch(
        mode === 'garbage' ? /broke the protocol/ : /the server exited \(status 7\)/,
      );
      const [poke] = await toolResults(dir);
      expect(poke?.observation.status).toBe('aborted');
      const transcript = await readFile(path.join(dir, 'transcript.jsonl'), 'utf8');
      expect(transcript).not.toMatch(/OPERATOR-ONLY-DIAGNOSTIC|protocol|exited/);
      expect(await processesWithEnv('CFH_TEST_TAG', `broken-${mode}`)).toEqual([]);
    });
  }

  it("a server's own metadata (version, descriptions, schema, a tool name) never carries its credential to the model or the evidence", async () => {
    const token = `leakytoken${process.pid}x9`;
    const { startMessagesApiServer, okText } = await import('../fixtures/messages-api-server.js');
    const api = await startMessagesApiServer();
    try {
      api.enqueue(okText('nothing to do'));
      const server = await scratch.file('broken-server.mjs', BROKEN_SERVER);
      const profile = await profileFile(scratch, 'leaky', {
        hostTools: [
          {
            name: 'broken',
            kind: 'mcp',
            command: NODE,
            args: [server, 'leaky'],
            env: { LEAKY_TOKEN: { fromEnv: 'TEST_LEAKY' } },
            tools: [
              { name: 'poke', riskClass: 'read_only', sideEffectClass: 'none' },
              { name: '*' },
            ],
          },
        ],
      });
      const root = scratch.path('art-leaky');
      const r = await cfh(
        agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile }, [
          '--provider',
          'anthropic',
        ]),
        {
          env: {
            TEST_LEAKY: token,
            CFH_KEY_DIR: scratch.path('keys'),
            ANTHROPIC_API_KEY: 'sk-test-leaky',
            ANTHROPIC_BASE_URL: api.baseURL,
          },
        },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const body = JSON.stringify(api.requests[0]?.body);
      // The leak was there to be had: the tool is shown, its description redacted.
      expect(body).toContain('pokes with [redacted:LEAKY_TOKEN]');
      expect(body).not.toContain('steal-');
      expect(leaksIn(new Map([['model request', body]]), token)).toEqual([]);
      expect(leaksIn(await filesUnder(await onlyRunDir(root)), token)).toEqual([]);
    } finally {
      await api.close();
    }
  });

  it('a JSON-RPC error answering a call is a typed observation the model can correct', async () => {
    const profile = await brokenProfile('rpc-error');
    const script = await scriptFile(scratch, 'rpc-error', [
      [{ name: 'mcp__broken__poke', input: {} }],
    ]);
    const root = scratch.path('art-rpc-error');
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const [poke] = await toolResults(await onlyRunDir(root));
    expect(poke?.observation).toMatchObject({
      status: 'error',
      summary: 'the server answered with MCP error -32602: poke needs a target',
    });
  });
});
