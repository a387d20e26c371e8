// adv3 (BROKE): the scrubber's "wrapped over lines" spelling (AH-TOOL-7, AH-TOOL-10) knows a
// bare line break only. A host tool printing an encoded blob in JSON (GitHub's contents API
// wraps base64 with a JSON-escaped `\n`), in YAML (a block scalar indents each wrapped line),
// or as UTF-16 text (a Windows tool, a .NET serializer) gives the credential to the model.
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, useScratch } from './helpers.js';
import { NODE, filesUnder, profileFile } from './host-tools-support.js';

const scratch = useScratch('adv3-scrub');
const TOKEN = `Tq7Zw${process.pid}kVm3RxPd9LuYbN4cHs`;
const FILE = (t: string): string => `# config\nremote: https://x:${t}@git.example/repo\n`;

const SCRIPT = `
const t = process.env.WRAP_TOKEN;
const file = '# config\\nremote: https://x:' + t + '@git.example/repo\\n';
const b64 = Buffer.from(file).toString('base64');
const wrap = (s, sep) => s.replace(/(.{16})/g, '$1' + sep);
process.stdout.write(JSON.stringify({ content: wrap(b64, '\\n'), encoding: 'base64' }) + '\\n');
process.stdout.write('data: |\\n' + wrap(b64, '\\n  ') + '\\n');
process.stdout.write(Buffer.from('token=' + t + '\\n', 'utf16le'));
`;

describe.skip('open deviation (docs/conformance.md), class: a credential in a wrapped or wide spelling reaches the model', () => {
  it('base64 wrapped by a JSON-escaped or indented line break, and UTF-16, are scrubbed', async () => {
    const profile = await profileFile(scratch, 'wrap-exec', {
      hostTools: [
        {
          name: 'fetch',
          kind: 'exec',
          argv: [NODE, await scratch.file('wrap.mjs', SCRIPT)],
          env: { WRAP_TOKEN: { fromEnv: 'TEST_WRAP_TOKEN' } },
          riskClass: 'read_only',
          sideEffectClass: 'none',
        },
      ],
    });
    const { startMessagesApiServer, okText, okToolUse } =
      await import('../fixtures/messages-api-server.js');
    const api = await startMessagesApiServer();
    let bodies: string;
    let dir: string;
    try {
      api.enqueue(okToolUse([{ id: 'toolu_0', name: 'host__fetch', input: {} }]));
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
            TEST_WRAP_TOKEN: TOKEN,
          },
        },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      bodies = api.requests.map((q) => JSON.stringify(q.body)).join('\n');
      dir = await onlyRunDir(root);
    } finally {
      await api.close();
    }
    const b64 = Buffer.from(FILE(TOKEN)).toString('base64');
    // What a reader gets back: drop the line breaks (bare, JSON-escaped at any depth) and
    // indentation, or the NULs of UTF-16, and the credential is there whole.
    const unwrapped = (t: string): string => t.replace(/\\+n|\s/g, '');
    const narrowed = (t: string): string => t.replace(/\\+u0000/g, '');
    const leaks = (t: string): string[] => [
      ...(t.includes(b64) ? ['base64 as is'] : []),
      ...(unwrapped(t).includes(b64) ? ['base64 wrapped'] : []),
      ...(narrowed(t).includes(`token=${TOKEN}`) ? ['utf-16'] : []),
    ];
    const files = await filesUnder(dir);
    const found = [['model requests', bodies] as const, ...files].flatMap(([where, text]) =>
      leaks(text).map((k) => `${where}: ${k}`),
    );
    expect(found).toEqual([]);
  });
});
