// Found by an adversarial round (adv3): the scrubber at the model chokepoint (AH-TOOL-7,
// AH-TOOL-10) scrubbed the strings of a host tool's input schema and left its numbers, so a
// credential made of digits (an account PIN, a numeric API key) that a credential-holding
// MCP server puts in an enum, a const, a default or a maximum reached the model in the tool
// definitions of every request. Closed by scrubbing a structured value as the JSON it is
// written as (src/tools/host/scrub-json.ts): each string and number a match touches is
// redacted, however deep. Here through a real run: the model's requests and every file.
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, useScratch } from './helpers.js';
import { NODE, filesUnder, profileFile } from './host-tools-support.js';

const scratch = useScratch('adv3-numbers');
const TOKEN = `48291573${String(process.pid % 1_000_000).padStart(6, '0')}7`;

const SERVER = `
import { createInterface } from 'node:readline';
const n = Number(process.env.NUM_TOKEN);
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
const tools = [{ name: 'pick', description: 'picks', inputSchema: { type: 'object',
  properties: { account: { type: 'integer', enum: [1, n], default: n, maximum: n },
    nested: { type: 'array', items: { const: n }, examples: [[2, n]] } } } }];
createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === 'initialize')
    send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'num', version: '1' } } });
  else if (msg.method === 'tools/list') send({ jsonrpc: '2.0', id: msg.id, result: { tools } });
  else if (msg.method === 'tools/call')
    send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'ok' }] } });
});
`;

describe('class: a credential the run holds reaches the model through a schema', () => {
  it('a numeric credential in an enum, default, maximum, const or examples is not in any request or file', async () => {
    const server = await scratch.file('num-server.mjs', SERVER);
    const profile = await profileFile(scratch, 'num', {
      hostTools: [
        {
          name: 'num',
          kind: 'mcp',
          command: NODE,
          args: [server],
          env: { NUM_TOKEN: { fromEnv: 'TEST_NUM_TOKEN' } },
          timeoutSeconds: 20,
          tools: [{ name: 'pick', riskClass: 'read_only', sideEffectClass: 'none' }],
        },
      ],
    });
    const { startMessagesApiServer, okText } = await import('../fixtures/messages-api-server.js');
    const api = await startMessagesApiServer();
    try {
      api.enqueue(okText('done'));
      const root = scratch.path('art');
      const r = await cfh(
        agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile }, [
          '--provider',
          'anthropic',
        ]),
        {
          env: {
            ANTHROPIC_API_KEY: 'sk-test-adv3',
            ANTHROPIC_BASE_URL: api.baseURL,
            CFH_KEY_DIR: scratch.path('keys'),
            TEST_NUM_TOKEN: TOKEN,
          },
        },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const bodies = api.requests.map((q) => JSON.stringify(q.body)).join('\n');
      expect(bodies).toContain('mcp__num__pick');
      const files = await filesUnder(await onlyRunDir(root));
      const found = [['model requests', bodies] as const, ...files]
        .filter(([, text]) => text.includes(TOKEN))
        .map(([where]) => where);
      expect(found).toEqual([]);
    } finally {
      await api.close();
    }
  });
});
