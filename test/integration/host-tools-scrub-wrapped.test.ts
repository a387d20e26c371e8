// Found by an adversarial round (adv3): the scrubber knew a bare line break only, so a host
// tool printing an encoded blob in JSON (GitHub's contents API wraps base64 with a JSON-
// escaped `\n`), in YAML (a block scalar indents each wrapped line), or as UTF-16 text (a
// Windows tool, a .NET serializer) gave the credential to the model (AH-TOOL-7, AH-TOOL-10).
// Closed by matching in a normalised view of the text (src/tools/host/scrub-view.ts): line
// breaks with their blanks, UTF-16's zero bytes, escapes and joined strings taken out, every
// match mapped back to the whole of its original spelling. Here through a real run: the
// model's requests and every file of the run directory.
import { execFileSync } from 'node:child_process';
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
const out = (x) => process.stdout.write(x);
out(JSON.stringify({ content: wrap(b64, '\\n'), encoding: 'base64' }) + '\\n');
out('data: |\\n' + wrap(b64, '\\n  ') + '\\n');
out(Buffer.from('token=' + t + '\\n', 'utf16le'));
out(Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('token=' + t + '\\n', 'utf16le').swap16()]));
out(JSON.stringify({ wide: Buffer.from('token=' + t, 'utf16le').toString('latin1') }) + '\\n');
out("b'" + [...Buffer.from(t)].map((b) => '\\\\x' + b.toString(16)).join('') + "'\\n");
out(JSON.stringify(t.match(/.{1,7}/g)) + '\\n');
out(('pw=' + t).replace(/(.{5})/g, '$1=\\r\\n') + '\\n');
`;

/** What a reader recovers, one presentation undone at a time (never the scrubber's view). */
const READERS: readonly (readonly [string, (t: string) => string, (token: string) => string])[] = [
  [
    'base64 wrapped',
    (t) => t.replace(/\\+[nr]|\s/g, ''),
    (k) => Buffer.from(FILE(k)).toString('base64'),
  ],
  ['utf-16', (t) => t.replace(/\\+u0000|\0/g, ''), (k) => `token=${k}`],
  [
    '\\x escapes',
    (t) => t.replace(/\\+x([0-9a-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
    (k) => k,
  ],
  ['split strings', (t) => t.replace(/\\*"\s*,\s*\\*"/g, ''), (k) => k],
  ['quoted-printable', (t) => t.replace(/=(?:\\+r|\r)?(?:\\+n|\n)/g, ''), (k) => `pw=${k}`],
];

describe('class: a credential in a wrapped, widened, escaped or split spelling reaches the model', () => {
  it('base64 wrapped by an escaped or indented line break, UTF-16, escapes and split strings are scrubbed', async () => {
    const leaks = (t: string): string[] =>
      READERS.filter(([, read, spelled]) => read(t).includes(spelled(TOKEN))).map(([k]) => k);
    const script = await scratch.file('wrap.mjs', SCRIPT);
    // The tool's own output shows every one of them: the readers see each leak.
    const printed = execFileSync(NODE, [script], { env: { WRAP_TOKEN: TOKEN } });
    expect(leaks(printed.toString('latin1'))).toEqual(READERS.map(([k]) => k));
    const profile = await profileFile(scratch, 'wrap-exec', {
      hostTools: [
        {
          name: 'fetch',
          kind: 'exec',
          argv: [NODE, script],
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
    const files = await filesUnder(dir);
    const found = [['model requests', bodies] as const, ...files].flatMap(([where, text]) =>
      leaks(text).map((k) => `${where}: ${k}`),
    );
    expect(found).toEqual([]);
    // The model was shown the tool's output, each spelling redacted where it stood.
    expect(bodies.split('[redacted:WRAP_TOKEN]').length - 1).toBeGreaterThanOrEqual(READERS.length);
  });
});
