// The `cfh serve --stdio` protocol without an engine: what is a message and what each
// method's params are (protocol.ts), what the line peer answers to a line that is not JSON,
// not JSON-RPC 2.0, too long, an unknown method or bad params (rpc.ts), that a cfh error
// travels as its code in `error.data`, that docs/schema holds the published schema, and that
// a restore with another authority names the fields that differ (authority.ts).
import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Message, METHOD_PARAMS, protocolJsonSchema } from '../../src/serve/protocol.js';
import { LinePeer, MAX_LINE_BYTES, errorObject } from '../../src/serve/rpc.js';
import { authorityMismatch } from '../../src/session/authority.js';
import { SessionError } from '../../src/session/session-error.js';

const SID = '20261202T190603Z-f25e70d5';

/** Feeds `lines` to a peer whose handler echoes or throws; returns every message written. */
async function exchange(
  lines: readonly string[],
  handle: (method: string, params: unknown) => Promise<unknown> = (m, p) =>
    Promise.resolve({ method: m, params: p }),
): Promise<Record<string, unknown>[]> {
  const input = new PassThrough();
  const output = new PassThrough();
  const written: string[] = [];
  output.on('data', (c: Buffer) => written.push(c.toString('utf8')));
  const peer = new LinePeer(input, output);
  const served = peer.serve((m, p) => handle(m, p));
  for (const l of lines) input.write(l.endsWith('\n') ? l : `${l}\n`);
  input.end();
  await served;
  return written
    .join('')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('protocol messages', () => {
  it('parses requests, notifications and responses, and nothing else', () => {
    expect(Message.safeParse({ jsonrpc: '2.0', id: 1, method: 'session/open' }).success).toBe(true);
    expect(Message.safeParse({ jsonrpc: '2.0', method: 'turn/cancel', params: {} }).success).toBe(
      true,
    );
    expect(Message.safeParse({ jsonrpc: '2.0', id: 'a', result: null }).success).toBe(true);
    expect(Message.safeParse({ jsonrpc: '1.0', id: 1, method: 'x' }).success).toBe(false);
    expect(Message.safeParse({ jsonrpc: '2.0', id: 1.5, method: 'x' }).success).toBe(false);
    expect(Message.safeParse({ jsonrpc: '2.0', id: 1, method: 'x', extra: 1 }).success).toBe(false);
  });

  it("checks each method's params", () => {
    expect(METHOD_PARAMS['turn/start'].safeParse({ sessionId: SID, prompt: 'p' }).success).toBe(
      true,
    );
    expect(METHOD_PARAMS['turn/start'].safeParse({ sessionId: SID, prompt: '' }).success).toBe(
      false,
    );
    expect(METHOD_PARAMS['turn/start'].safeParse({ sessionId: 'x', prompt: 'p' }).success).toBe(
      false,
    );
    expect(METHOD_PARAMS['events/replay'].safeParse({ sessionId: SID, fromSeq: 0 }).success).toBe(
      false,
    );
    const answer = { approvalId: 'cfh-1', argsDigest: `sha256:${'a'.repeat(64)}`, answer: 'once' };
    expect(METHOD_PARAMS['approval/answer'].safeParse(answer).success).toBe(true);
    expect(
      METHOD_PARAMS['approval/answer'].safeParse({ ...answer, argsDigest: 'sha256:x' }).success,
    ).toBe(false);
  });

  it('is published in docs/schema (npm run schemas)', () => {
    const url = new URL('../../docs/schema/session-protocol.schema.json', import.meta.url);
    expect(JSON.parse(readFileSync(url, 'utf8'))).toEqual(
      JSON.parse(JSON.stringify(protocolJsonSchema())),
    );
  });
});

describe('the line peer', () => {
  it('answers parse errors, invalid requests, unknown methods with their codes', async () => {
    const out = await exchange(
      ['{nope', '{"jsonrpc":"2.0","id":3}', '{"jsonrpc":"2.0","id":4,"method":"a","params":1}'],
      () => Promise.reject(new Error('not reached')),
    );
    expect(out.map((m) => [m.id, (m.error as { code: number }).code])).toEqual([
      [null, -32700],
      [3, -32600],
      [4, -32600],
    ]);
  });

  it('skips a line longer than its bound whole, and reads the next', async () => {
    const out = await exchange([
      'x'.repeat(MAX_LINE_BYTES + 10),
      '{"jsonrpc":"2.0","id":9,"method":"m"}',
    ]);
    expect(out[0]).toMatchObject({ id: null, error: { code: -32700 } });
    expect(out[1]).toMatchObject({ id: 9, result: { method: 'm' } });
  });

  it('answers a request with its own id; a notification gets no answer', async () => {
    const out = await exchange([
      '{"jsonrpc":"2.0","id":"r1","method":"m","params":{"a":1}}',
      '{"jsonrpc":"2.0","method":"quiet"}',
    ]);
    expect(out).toEqual([{ jsonrpc: '2.0', id: 'r1', result: { method: 'm', params: { a: 1 } } }]);
  });

  it('carries a cfh error as its code in error.data, whether thrown or rejected', async () => {
    const refuse = (): never => {
      throw new SessionError('turn_in_progress', 'busy', { running: 'turn-0001' });
    };
    const out = await exchange(['{"jsonrpc":"2.0","id":1,"method":"turn/start"}'], () => refuse());
    expect(out[0]).toMatchObject({
      id: 1,
      error: {
        code: -32000,
        data: { code: 'turn_in_progress', details: { running: 'turn-0001' } },
      },
    });
    expect(errorObject(new Error('x')).code).toBe(-32603);
  });
});

describe('restore authority', () => {
  const base = {
    workspace: { hostPath: '/w', mode: 'direct', identity: '1:2' },
    profile: { name: 'p', digest: 'd' },
    policy: 'sha256:1',
    model: { adapter: 'scripted', route: { source: 's' } },
    mounts: [],
    network: 'n',
    cfc: 'c',
    mode: 'run',
    approvals: [],
  };

  it('names every field that differs, and none when equal', () => {
    expect(authorityMismatch(base, { ...base })).toEqual([]);
    expect(
      authorityMismatch(base, {
        ...base,
        workspace: { ...base.workspace, identity: '1:3' },
        model: { adapter: 'anthropic', route: {} },
        approvals: ['default:write_local'],
      }),
    ).toEqual(['workspace', 'model', 'approvals']);
    // A field the record lacks is a difference, not a pass.
    const withoutCfc: Record<string, unknown> = { ...base };
    delete withoutCfc.cfc;
    expect(authorityMismatch(withoutCfc, base)).toEqual(['cfc']);
  });
});
