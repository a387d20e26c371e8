// Adversarial round 3, class 5 (results that launder their inputs' labels) in a shape its
// authors fixed for mounts only: a sink cleared for a secret is also a source, and what it
// was written with comes back out of it. label-map.ts gives a mount's reads its clearance's
// confidentiality ("what a mount may be written with, it may hold"), but a network
// destination's data carries `network.labels` alone (default integrity [network]) and an
// MCP server's tools their `resultLabel` alone, whatever `clearance` let into them. So a
// secret sent to a destination cleared for it (operators.md's vocabulary:
// `clearance: { 'api.example.test:443': [secret] }`), or to a host tool cleared for it, and
// read back by the next call, reaches the model as plain text. The oracle: the model's
// context (transcript.jsonl) holds no spelling of the secret.
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import { MEMORY_SERVER, leaksIn } from './host-tools-support.js';
import { dockerBridgeAddress } from './local-servers.js';
import {
  NODE,
  printer,
  profile,
  script,
  scriptedRun,
  transcriptText,
} from './adv-round3-support.js';

const scratch = useScratch('adv3-launder');
const SECRET = 'VAULT-TOKEN-93xq7Lp';

/** An HTTP service on the docker bridge that keeps the last body POSTed and returns it. */
let store: Server;
let port = 0;
let bridge = '';
beforeAll(async () => {
  bridge = dockerBridgeAddress();
  let kept = Buffer.from('nothing yet');
  store = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST') kept = Buffer.concat(chunks);
      res.end(req.method === 'POST' ? 'stored' : Buffer.concat([Buffer.from('kept='), kept]));
    });
  });
  await new Promise<void>((resolve) => store.listen(0, bridge, resolve));
  const a = store.address();
  port = typeof a === 'object' && a !== null ? a.port : 0;
});
afterAll(async () => {
  await new Promise<void>((resolve) =>
    store.close(() => {
      resolve();
    }),
  );
});

/** A read-only host tool whose answer is the secret, labelled `secret`. */
async function vault(): Promise<Record<string, unknown>> {
  return {
    name: 'vault',
    kind: 'exec',
    argv: [NODE, await printer(scratch, SECRET)],
    input: {},
    riskClass: 'read_only',
    sideEffectClass: 'none',
    resourceScope: 'project',
    resultLabel: { confidentiality: ['secret'] },
  };
}

describe.each(['enforce-explicit', 'enforce-strict'])('%s: a cleared sink read back', (mode) => {
  it('a destination cleared for the secret does not hand it back to the model', async () => {
    const dest = `${bridge}:${port}`;
    const url = `http://${dest}/`;
    const p = await profile(scratch, {
      tools: ['read_file', 'list_dir', 'exec'],
      toolLifetime: 'per-call',
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      cfc: { mode, modelClearance: [] },
      network: {
        mode: 'allowlist',
        allow: [dest],
        labels: { [dest]: { integrity: ['vendor'] } },
        clearance: { [dest]: ['secret'] },
        // What this destination requires of a call's influence, said by the operator (under
        // enforce-strict the default is prompt:direct, which a call using a host tool's
        // handle has lost: the handle's integrity counts).
        requires: { [dest]: [] },
      },
      hostTools: [await vault()],
    });
    const s = await script(scratch, [
      [{ name: 'host__vault', input: {} }],
      [{ name: 'exec', input: { command: ['curl', '-s', '--data-binary', '{{handle:1}}', url] } }],
      [{ name: 'exec', input: { command: ['curl', '-s', url] } }],
    ]);
    const { r, dir } = await scriptedRun(scratch, { profile: p, script: s });
    expect(r.exitCode, r.stderr).toBe(0);
    const seen = new Map([['transcript.jsonl', await transcriptText(dir)]]);
    expect(leaksIn(seen, SECRET)).toEqual([]);
  });
});

describe('enforce-explicit: a cleared host tool read back', () => {
  // (Under enforce-strict the write needs prompt:direct, which a call using a host tool's
  // handle has lost: strict holds here by its risk-class default.)
  const mode = 'enforce-explicit';
  it('an MCP server cleared for the secret does not hand it back through another of its tools', async () => {
    const p = await profile(scratch, {
      tools: ['read_file', 'list_dir'],
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      cfc: { mode, modelClearance: [] },
      hostTools: [
        await vault(),
        {
          name: 'memory',
          kind: 'mcp',
          command: NODE,
          args: [MEMORY_SERVER],
          env: {
            MEMORY_FILE_PATH: { value: scratch.path(`graph-${mode}.jsonl`) },
          },
          cwd: path.dirname(MEMORY_SERVER),
          resultLabel: { integrity: ['memory'] },
          clearance: ['secret'],
          tools: [
            { name: 'read_graph', riskClass: 'read_only', sideEffectClass: 'none' },
            {
              name: 'create_entities',
              riskClass: 'write_internal',
              sideEffectClass: 'internal_state_change',
              resourceScope: 'project',
            },
          ],
        },
      ],
      policy: [
        {
          id: 'memory-writes',
          match: { tool: 'mcp__memory__create_entities' },
          decision: 'allow',
          reason: 'the run may write its own scratch graph',
        },
      ],
    });
    const s = await script(scratch, [
      [{ name: 'host__vault', input: {} }],
      [
        {
          name: 'mcp__memory__create_entities',
          input: { entities: [{ name: 'note', entityType: 'n', observations: ['{{handle:1}}'] }] },
        },
      ],
      [{ name: 'mcp__memory__read_graph', input: {} }],
    ]);
    const { r, dir } = await scriptedRun(scratch, { profile: p, script: s });
    expect(r.exitCode, r.stderr).toBe(0);
    const seen = new Map([['transcript.jsonl', await transcriptText(dir)]]);
    expect(leaksIn(seen, SECRET)).toEqual([]);
  });
});
