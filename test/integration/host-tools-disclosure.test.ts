// What host tools disclose, proved against real runs (AH-TOOL-7/8/10, AH-REF-4): nothing
// derived from a credential cfh holds reaches the model or the evidence by any string (a
// schema's enum, pattern, description or default echoed by a validation message, an error
// the server answers with, a credential split across two fields), a stream bounded at a cap
// is scrubbed before it is cut (no prefix of a credential survives a cut or a chunk boundary),
// the snapshot holds no digest computable from the evidence and a guess, and a resolved
// opaque reference never comes back to the model in clear through a tool that echoes it
// (the turn that hands it back reads the name this run minted from the request).
import { describe, expect, it } from 'vitest';
import { createHash, createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { agentRunArgs, cfh, readJson, runIdOf, useScratch } from './helpers.js';
import {
  NODE,
  apiRun as apiRunIn,
  filesUnder,
  leaksIn,
  profileFile,
  spellings,
  type ApiRun,
  type Turn,
} from './host-tools-support.js';

const scratch = useScratch('host-disclosure');

/**
 * An MCP server of the test's own, holding LEAK_TOKEN: it puts the credential in its tool
 * schemas (an enum, a pattern, a description, a default, and split in halves across two
 * fields), in the error it answers `fail` with, and on stderr across the 64 KiB cut in two
 * writes (mode `stderr`); `echo` echoes its `id` in spellings an operator-only pattern does
 * not match.
 */
const LEAK_SERVER = `
import { createInterface } from 'node:readline';
const T = process.env.LEAK_TOKEN;
const half = Math.ceil(T.length / 2);
const mode = process.argv[2] ?? '';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
if (mode === 'stderr') {
  process.stderr.write('x'.repeat(64 * 1024 - 6) + T.slice(0, 4));
  setTimeout(() => process.stderr.write(T.slice(4) + ' and more\\n'), 100);
}
const every = (v, f) => [...Buffer.from(v)].map(f).join('');
const tools = [
  { name: 'pick', description: 'picks', inputSchema: { type: 'object', required: ['mode'], properties: {
      mode: { type: 'string', enum: ['public', T] },
      p: { type: 'string', pattern: '^' + T + '$', description: 'like ' + T, default: T },
      a: { type: 'string', enum: [T.slice(0, half)] },
      b: { type: 'string', enum: [T.slice(half)] } } } },
  { name: 'fail', description: 'fails', inputSchema: { type: 'object' } },
  { name: 'lookup', description: 'looks up', inputSchema: { type: 'object' } },
  { name: 'echo', description: 'echoes', inputSchema: { type: 'object', properties: {
      id: { type: 'string' }, fail: { type: 'boolean' } } } },
];
createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === 'initialize')
    send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'leak', version: '1' } } });
  else if (msg.method === 'tools/list') send({ jsonrpc: '2.0', id: msg.id, result: { tools } });
  else if (msg.method === 'tools/call') {
    const { name, arguments: a } = msg.params;
    const text = (t, extra = {}) => send({ jsonrpc: '2.0', id: msg.id,
      result: { content: [{ type: 'text', text: t }], ...extra } });
    if (name === 'fail')
      send({ jsonrpc: '2.0', id: msg.id, error: { code: -32000, message: 'upstream refused ' + T } });
    else if (name === 'lookup')
      text('found customer CRM-12345.', { structuredContent: { customer: { id: 'CRM-12345' } } });
    else if (name === 'echo') {
      const v = String(a.id);
      const echoed = [ '_' + v + '_', v.toLowerCase(), JSON.stringify(v),
        every(v, (b) => '\\\\u00' + b.toString(16).padStart(2, '0')),
        every(v, (b) => '%' + b.toString(16).toUpperCase()),
        Buffer.from(v).toString('base64'), Buffer.from('k:' + v).toString('base64') ].join(' | ');
      if (a.fail === true)
        send({ jsonrpc: '2.0', id: msg.id, error: { code: -32000, message: 'no such id _' + v + '_' } });
      else text(echoed, { structuredContent: { echo: '_' + v + '_' } });
    } else text('ok');
  }
});
`;

const CRM = { kind: 'crm', pattern: '\\bCRM-[0-9]{5}\\b' };
/** The customer id of `lookup`'s structured result: a reference the model may hand back. */
const CRM_FIELD = { kind: 'crm', field: '/customer/id' };

/** The one reference of `authority` the model was shown in `request` (a turn's request). */
function shownRef(request: string, authority: string): string {
  const refs = new Set(request.match(new RegExp(`cfh-ref:${authority}:[a-z2-7]{16}`, 'g')) ?? []);
  expect([...refs]).toHaveLength(1);
  return [...refs][0] ?? '';
}

async function leakProfile(name: string, mode = ''): Promise<string> {
  const server = await scratch.file('leak-server.mjs', LEAK_SERVER);
  const readOnly = { riskClass: 'read_only', sideEffectClass: 'none' };
  return profileFile(scratch, name, {
    hostTools: [
      {
        name: 'leak',
        kind: 'mcp',
        command: NODE,
        args: [server, mode],
        env: { LEAK_TOKEN: { fromEnv: 'TEST_LEAK_TOKEN' } },
        operatorOnly: [CRM_FIELD, CRM],
        timeoutSeconds: 20,
        tools: ['pick', 'fail', 'lookup', 'echo'].map((t) => ({ name: t, ...readOnly })),
      },
    ],
  });
}

/** One run with a stand-in Messages API (host-tools-support.ts). */
function apiRun(
  name: string,
  profile: string,
  turns: readonly Turn[],
  env: Record<string, string>,
): Promise<ApiRun> {
  return apiRunIn(scratch, name, profile, turns, env);
}

const TOKEN = `Tq7Zw${process.pid}kVm3RxPd9LuY`;

describe('class: a string derived from a credential-holding configuration reaches the model or the evidence', () => {
  it('invalid calls against an enum, a pattern and a split credential, and a server error, disclose nothing', async () => {
    const profile = await leakProfile('validation');
    const half = Math.ceil(TOKEN.length / 2);
    const r = await apiRun(
      'validation',
      profile,
      [
        [
          { name: 'mcp__leak__pick', input: { mode: 'nope' } },
          { name: 'mcp__leak__pick', input: { mode: 'public', p: 'zzz' } },
          { name: 'mcp__leak__pick', input: { mode: 'public', a: 'x', b: 'y' } },
          { name: 'mcp__leak__fail', input: {} },
        ],
      ],
      { TEST_LEAK_TOKEN: TOKEN },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    // The calls were answered (the leak was there to be had), the credential redacted.
    expect(r.bodies).toContain('invalid arguments');
    expect(r.bodies).toContain('upstream refused [redacted:LEAK_TOKEN]');
    const files = await filesUnder(r.dir);
    const model = new Map([['model requests', r.bodies]]);
    expect(leaksIn(model, TOKEN)).toEqual([]);
    expect(leaksIn(files, TOKEN)).toEqual([]);
    // Split across two fields: neither half, in the model's requests or the evidence.
    for (const part of [TOKEN.slice(0, half), TOKEN.slice(half)]) {
      expect(r.bodies).not.toContain(part);
      for (const [file, text] of files) expect(text.includes(part), file).toBe(false);
    }
  });
});

describe('class: a bounded stream is cut before it is scrubbed', () => {
  it('a credential straddling the 64 KiB stderr cut and a chunk boundary leaves no prefix', async () => {
    const profile = await leakProfile('stderr', 'stderr');
    const r = await apiRun('stderr', profile, [], { TEST_LEAK_TOKEN: TOKEN });
    expect(r.exitCode, r.stderr).toBe(0);
    const files = await filesUnder(r.dir);
    const stderr = [...files.keys()].filter((f) => /^outputs\/host-leak-\d+\.stderr$/.test(f));
    expect(stderr.length).toBeGreaterThan(0);
    for (const f of stderr) {
      const text = files.get(f) ?? '';
      expect(text.length).toBeLessThanOrEqual(64 * 1024);
      // Not even the first characters written before the cut.
      expect(text).not.toContain(TOKEN.slice(0, 4));
      expect(text.endsWith('x')).toBe(false);
    }
    expect(leaksIn(files, TOKEN)).toEqual([]);
  });
});

/** Every string inside a JSON value. */
function stringsOf(v: unknown, out: Set<string> = new Set()): Set<string> {
  if (typeof v === 'string') out.add(v);
  else if (Array.isArray(v)) for (const x of v) stringsOf(x, out);
  else if (typeof v === 'object' && v !== null) {
    for (const [k, x] of Object.entries(v)) {
      out.add(k);
      stringsOf(x, out);
    }
  }
  return out;
}

describe('class: a credential digest is a dictionary key for the credential', () => {
  it('the snapshot holds no digest computable from the evidence alone and a guess', async () => {
    const profile = await leakProfile('digest');
    const first = await apiRun('digest-1', profile, [], { TEST_LEAK_TOKEN: TOKEN });
    expect(first.exitCode, first.stderr).toBe(0);
    const snapshot = await readJson(path.join(first.dir, 'snapshot.json'));
    const record = JSON.stringify(snapshot.hostTools);
    expect(record).toContain('TEST_LEAK_TOKEN');
    // Every string the evidence holds, the run id first, tried as a key, and none at all.
    const files = await filesUnder(first.dir);
    const keys = new Set<string>([runIdOf(first.dir), '']);
    for (const [f, text] of files) {
      if (f.endsWith('.json')) stringsOf(JSON.parse(text), keys);
      if (f.endsWith('.jsonl'))
        for (const line of text.split('\n').filter((l) => l !== ''))
          stringsOf(JSON.parse(line), keys);
    }
    const all = [...files.values()].join('\n');
    const guesses = [
      createHash('sha256').update(TOKEN).digest('hex'),
      ...[...keys].map((k) => createHmac('sha256', k).update(TOKEN).digest('hex')),
    ];
    for (const g of guesses) expect(all.includes(g)).toBe(false);
    // Still what it is for: the same credential is recognised across runs by the key holder.
    const second = await apiRun('digest-2', profile, [], { TEST_LEAK_TOKEN: TOKEN });
    const digestOf = (s: Record<string, unknown>): unknown =>
      JSON.stringify(s.hostTools).match(/"digest":"([^"]+)"/)?.[1];
    const again = await readJson(path.join(second.dir, 'snapshot.json'));
    expect(digestOf(again)).toBe(digestOf(snapshot));
    expect(digestOf(snapshot)).toMatch(/^hmac-sha256:[0-9a-f]{16}:[0-9a-f]{64}$/);
    const secret = await readFile(path.join(scratch.path('keys'), 'credential-digest.key'));
    expect(secret.length).toBeGreaterThanOrEqual(32);
  });
});

describe('class: an opaque reference is laundered through a tool that echoes its input', () => {
  const VALUE = 'CRM-12345';
  function echoedSpellings(v: string): string[] {
    const bytes = Buffer.from(v);
    return [
      ...spellings(v),
      v.toLowerCase(),
      [...bytes].map((b) => `\\u00${b.toString(16).padStart(2, '0')}`).join(''),
      [...bytes].map((b) => `%${b.toString(16).toUpperCase()}`).join(''),
    ];
  }

  it('an echoing MCP tool: result, structured content and error give the model the handle only', async () => {
    const profile = await leakProfile('launder');
    let ref = '';
    const r = await apiRun(
      'launder',
      profile,
      [
        [{ name: 'mcp__leak__lookup', input: {} }],
        (request) => {
          ref = shownRef(request, 'leak');
          return [
            { name: 'mcp__leak__echo', input: { id: ref } },
            { name: 'mcp__leak__echo', input: { id: ref, fail: true } },
          ];
        },
      ],
      { TEST_LEAK_TOKEN: TOKEN },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    // The reference was minted, resolved and echoed (the launder was attempted).
    expect(r.bodies).toContain(`found customer ${ref}.`);
    expect(r.bodies).toContain(`_${ref}_`);
    expect(r.bodies).toContain(`no such id _${ref}_`);
    for (const s of echoedSpellings(VALUE)) expect(r.bodies.includes(s), s).toBe(false);
  });

  it('an echoing exec tool (variant): its stdout gives the model the handle only', async () => {
    const script = [
      'if [ "$1" = new ]; then echo \'{"created": {"id": "CRM-54321"}}\'; exit 0; fi',
      'printf \'{"echo": "_%s_ %s %s"}\\n\' "$1" "$(printf %s "$1" | tr A-Z a-z)" "$(printf %s "$1" | base64)"',
    ].join('\n');
    // A file beside the profile: an argv literal may hold no braces.
    const file = await scratch.file('crm.sh', `${script}\n`);
    const profile = await profileFile(scratch, 'launder-exec', {
      hostTools: [
        {
          name: 'crm',
          kind: 'exec',
          argv: ['/bin/sh', file, '{id}'],
          input: { id: { type: 'string', pattern: 'new|CRM-[0-9]{5}' } },
          output: 'json',
          operatorOnly: [{ kind: 'crm', field: '/created/id' }, CRM],
          riskClass: 'read_only',
          sideEffectClass: 'none',
        },
      ],
    });
    let ref = '';
    const r = await apiRun(
      'launder-exec',
      profile,
      [
        [{ name: 'host__crm', input: { id: 'new' } }],
        (request) => {
          ref = shownRef(request, 'crm');
          return [{ name: 'host__crm', input: { id: ref } }];
        },
      ],
      {},
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(ref).toMatch(/^cfh-ref:crm:[a-z2-7]{16}$/);
    expect(r.bodies).toContain(`_${ref}_`);
    for (const s of echoedSpellings('CRM-54321')) expect(r.bodies.includes(s), s).toBe(false);
  });
});

describe('class: an exec tool output cut at its cap keeps the start of a credential', () => {
  it('a credential across the stdout cap leaves no prefix in the observation or outputs/', async () => {
    const script = 'head -c 1020 /dev/zero | tr "\\0" x; printf "%s and more" "$CAP_TOKEN"';
    const profile = await profileFile(scratch, 'cap-exec', {
      hostTools: [
        {
          name: 'dump',
          kind: 'exec',
          argv: ['/bin/sh', '-c', script],
          env: { CAP_TOKEN: { fromEnv: 'TEST_CAP_TOKEN' } },
          outputBytes: 1024,
          riskClass: 'read_only',
          sideEffectClass: 'none',
        },
      ],
    });
    const r = await apiRun('cap-exec', profile, [[{ name: 'host__dump', input: {} }]], {
      TEST_CAP_TOKEN: TOKEN,
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.bodies).toContain('xxxx');
    const files = await filesUnder(r.dir);
    for (const [where, text] of [['model requests', r.bodies], ...files] as const)
      expect(text.includes(TOKEN.slice(0, 4)), where).toBe(false);
  });
});

describe('class: a tool whose replay could act twice is replayed on timeout (AH-LIFE-5)', () => {
  it('a communication host tool declaring safe_retry is refused when the profile loads', async () => {
    const profile = await profileFile(scratch, 'replay-refused', {
      hostTools: [
        {
          name: 'send',
          kind: 'exec',
          argv: ['/bin/true'],
          riskClass: 'communication',
          sideEffectClass: 'internal_state_change',
          retryPolicy: 'safe_retry',
        },
      ],
    });
    const r = await cfh(
      agentRunArgs({
        workspace: await scratch.sampleRepo(),
        artifactRoot: scratch.path('art-replay-refused'),
        profile,
      }),
    );
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/^cfh: .*never replayed automatically.*$/m);
  });

  it('a communication host tool that times out is called exactly once, whatever the retry budget', async () => {
    const count = scratch.path('send-count');
    const profile = await profileFile(scratch, 'replay-once', {
      budgets: { maxRetriesPerToolCall: 3 },
      hostTools: [
        {
          name: 'send',
          kind: 'exec',
          argv: ['/bin/sh', '-c', `echo sent >> '${count}'; sleep 30`],
          timeoutSeconds: 1,
          riskClass: 'communication',
          sideEffectClass: 'internal_state_change',
        },
      ],
      policy: [{ id: 'allow-send', match: { tool: 'host__send' }, decision: 'allow', reason: 't' }],
    });
    const r = await apiRun('replay-once', profile, [[{ name: 'host__send', input: {} }]], {});
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.bodies).toContain('timed out');
    expect((await readFile(count, 'utf8')).trim().split('\n')).toEqual(['sent']);
  });
});
