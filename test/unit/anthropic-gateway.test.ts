// The anthropic gateway against a loopback server that speaks the Messages API:
// streamed and plain responses, tool calls, usage kept exactly as reported, bounded
// and visible retries, typed failures that never carry the key, cancellation.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inspect } from 'node:util';
import { createServer } from 'node:net';
import {
  AnthropicGateway,
  ModelGatewayError,
  type AnthropicGatewayOptions,
  type RetryDetail,
} from '../../src/model/anthropic-gateway.js';
import type { ModelRequest } from '../../src/model/gateway.js';
import { reportedCounters, overlayReported } from '../../src/model/usage.js';
import {
  failWith,
  okText,
  okToolUse,
  startMessagesApiServer,
  type MessagesApiServer,
} from '../fixtures/messages-api-server.js';

const KEY = 'sk-ant-fixture-DO-NOT-LEAK-0123456789abcdef';

const REQUEST: ModelRequest = {
  system: 'You are a careful agent. Static instructions.',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'List the files.' }] }],
  tools: [
    {
      name: 'read_file',
      description: 'Read a file',
      input_schema: {
        type: 'object',
        properties: { path: { type: 'string' } },
        required: ['path'],
      },
    },
    {
      name: 'list_dir',
      description: 'List a directory',
      input_schema: { type: 'object', properties: { path: { type: 'string' } } },
    },
    {
      name: 'exec',
      description: 'Run a command',
      input_schema: { type: 'object', properties: { command: { type: 'array' } } },
    },
  ],
  maxOutputTokens: 1024,
};

let server: MessagesApiServer;
let retries: { attempt: number; reason: string; detail: RetryDetail }[];

beforeEach(async () => {
  server = await startMessagesApiServer();
  retries = [];
});

afterEach(async () => {
  await server.close();
});

function gateway(overrides: Partial<AnthropicGatewayOptions> = {}): AnthropicGateway {
  return new AnthropicGateway({
    apiKey: KEY,
    baseURL: server.baseURL,
    model: 'claude-test-model',
    maxRetries: 2,
    timeoutMs: 5_000,
    keySource: 'env:ANTHROPIC_API_KEY',
    backoffMs: 1,
    onRetry: (attempt, reason, detail) => retries.push({ attempt, reason, detail }),
    ...overrides,
  });
}

const live = (): AbortSignal => new AbortController().signal;

async function failure(promise: Promise<unknown>): Promise<ModelGatewayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelGatewayError);
  return error as ModelGatewayError;
}

function expectNoKey(value: unknown): void {
  expect(JSON.stringify(value)).not.toContain(KEY);
  expect(inspect(value, { depth: null, showHidden: true })).not.toContain(KEY);
  if (value instanceof Error) {
    expect(value.message).not.toContain(KEY);
    expect(String(value.stack)).not.toContain(KEY);
  }
}

const names = (tools: unknown): string[] => (tools as { name: string }[]).map((t) => t.name);

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => {
    probe.close(() => {
      resolve();
    });
  });
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('anthropic gateway: responses', () => {
  it('assembles a streamed plain-text response', async () => {
    server.enqueue(
      okText('Hello from the fixture, in many small deltas.', { model: 'claude-fx-1' }),
    );
    const response = await gateway().complete(REQUEST, live());
    expect(response).toStrictEqual({
      model: 'claude-fx-1',
      content: [{ type: 'text', text: 'Hello from the fixture, in many small deltas.' }],
      stopReason: 'end_turn',
      usage: { input_tokens: 12, output_tokens: 7 },
    });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body.stream).toBe(true);
    expect(retries).toEqual([]);
  });

  it('maps a plain (non-streamed) JSON response the same way', async () => {
    server.enqueue(okText('one message, not a stream'));
    const response = await gateway({ streaming: false }).complete(REQUEST, live());
    expect(response).toStrictEqual({
      model: 'claude-fixture',
      content: [{ type: 'text', text: 'one message, not a stream' }],
      stopReason: 'end_turn',
      usage: { input_tokens: 12, output_tokens: 7 },
    });
    expect(server.requests[0]?.body.stream).toBe(false);
  });

  it('assembles tool_use blocks with their input parsed from the JSON deltas', async () => {
    const input = {
      path: 'src/index.ts',
      options: { lines: [1, 20], follow: true },
      note: 'ünïcödé "q"',
    };
    server.enqueue({
      kind: 'ok',
      content: [
        { type: 'text', text: 'Reading two files.' },
        { type: 'tool_use', id: 'toolu_01', name: 'read_file', input },
        { type: 'tool_use', id: 'toolu_02', name: 'list_dir', input: {} },
      ],
      chunk: 3,
    });
    const response = await gateway().complete(REQUEST, live());
    expect(response.stopReason).toBe('tool_use');
    expect(response.content).toStrictEqual([
      { type: 'text', text: 'Reading two files.' },
      { type: 'tool_use', id: 'toolu_01', name: 'read_file', input },
      { type: 'tool_use', id: 'toolu_02', name: 'list_dir', input: {} },
    ]);
  });

  it('maps tool_use blocks from a plain JSON response', async () => {
    server.enqueue(okToolUse([{ id: 'toolu_9', name: 'exec', input: { command: ['ls', '-la'] } }]));
    const response = await gateway({ streaming: false }).complete(REQUEST, live());
    expect(response.stopReason).toBe('tool_use');
    expect(response.content).toStrictEqual([
      { type: 'tool_use', id: 'toolu_9', name: 'exec', input: { command: ['ls', '-la'] } },
    ]);
  });

  it('keeps tool input that is not valid JSON as the raw text, for argument validation to refuse', async () => {
    server.enqueue(
      okToolUse([{ id: 'toolu_bad', name: 'read_file', input: null }], {
        rawToolJson: '{"path": "src/ind',
        stopReason: 'max_tokens',
      }),
    );
    const response = await gateway().complete(REQUEST, live());
    expect(response.stopReason).toBe('max_tokens');
    expect(response.content).toStrictEqual([
      { type: 'tool_use', id: 'toolu_bad', name: 'read_file', input: '{"path": "src/ind' },
    ]);
  });
});

describe('anthropic gateway: usage exactly as reported (AH-USAGE-1, AH-USAGE-3)', () => {
  it('maps cache reads and writes without relating them to input tokens', async () => {
    server.enqueue(
      okText('cached', {
        startUsage: {
          input_tokens: 5,
          output_tokens: 1,
          cache_read_input_tokens: 1800,
          cache_creation_input_tokens: 240,
          service_tier: 'standard',
        },
        deltaUsage: { output_tokens: 31 },
      }),
    );
    const { usage } = await gateway().complete(REQUEST, live());
    expect(usage).toStrictEqual({
      input_tokens: 5,
      output_tokens: 31,
      cache_read_input_tokens: 1800,
      cache_creation_input_tokens: 240,
    });
  });

  it('leaves counters the provider did not send (or sent as null) absent, never zero', async () => {
    server.enqueue(
      okText('sparse', {
        startUsage: {
          input_tokens: 3,
          cache_read_input_tokens: null,
          cache_creation_input_tokens: null,
        },
        deltaUsage: {},
      }),
    );
    const { usage } = await gateway().complete(REQUEST, live());
    expect(usage).toStrictEqual({ input_tokens: 3 });
    expect('output_tokens' in usage).toBe(false);
    expect('cache_read_input_tokens' in usage).toBe(false);
  });

  it('takes output_tokens from message_delta when message_start lacks it; null deltas change nothing', async () => {
    server.enqueue(
      okText('late count', {
        startUsage: { input_tokens: 9 },
        deltaUsage: { output_tokens: 4, input_tokens: null, cache_read_input_tokens: null },
      }),
    );
    const { usage } = await gateway().complete(REQUEST, live());
    expect(usage).toStrictEqual({ input_tokens: 9, output_tokens: 4 });
  });

  it('takes cumulative counters from message_delta over message_start', async () => {
    server.enqueue(
      okText('cumulative', {
        startUsage: { input_tokens: 9, output_tokens: 1 },
        deltaUsage: { output_tokens: 12, input_tokens: 11, cache_creation_input_tokens: 50 },
      }),
    );
    const { usage } = await gateway().complete(REQUEST, live());
    expect(usage).toStrictEqual({
      input_tokens: 11,
      output_tokens: 12,
      cache_creation_input_tokens: 50,
    });
  });

  it('keeps a plain response with no usage counters at all as empty usage', async () => {
    server.enqueue(okText('no usage', { usage: {} }));
    const { usage } = await gateway({ streaming: false }).complete(REQUEST, live());
    expect(usage).toStrictEqual({});
  });

  it('reportedCounters / overlayReported keep numbers only', () => {
    expect(reportedCounters(undefined)).toStrictEqual({});
    expect(
      reportedCounters({ input_tokens: 0, output_tokens: '5', cache_read_input_tokens: NaN }),
    ).toStrictEqual({
      input_tokens: 0,
    });
    expect(
      overlayReported(
        { input_tokens: 1, output_tokens: 2 },
        { output_tokens: null, input_tokens: 4 },
      ),
    ).toStrictEqual({
      input_tokens: 4,
      output_tokens: 2,
    });
  });
});

describe('anthropic gateway: the request on the wire', () => {
  it('sends the key as a credential header, the model, max_tokens and streaming', async () => {
    server.enqueue(okText('ok'));
    await gateway().complete(REQUEST, live());
    const request = server.requests[0];
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/v1/messages');
    // SDK 1.x sends an API key as `Authorization: Bearer`; older ones used `x-api-key`.
    const credential = request?.headers['x-api-key'] ?? request?.headers.authorization;
    expect([KEY, `Bearer ${KEY}`]).toContain(credential);
    expect(request?.headers['anthropic-version']).toBeDefined();
    // The SDK's own retries are off: no retry-count header beyond the first attempt.
    expect(request?.headers['x-stainless-retry-count'] ?? '0').toBe('0');
    expect(request?.body).toMatchObject({
      model: 'claude-test-model',
      max_tokens: 1024,
      stream: true,
    });
  });

  it('puts cache breakpoints on the static system prompt, the last tool and the last message block', async () => {
    server.enqueue(okText('ok'));
    await gateway().complete(REQUEST, live());
    const body = server.requests[0]?.body;
    expect(body.system).toStrictEqual([
      { type: 'text', text: REQUEST.system, cache_control: { type: 'ephemeral' } },
    ]);
    expect(names(body.tools)).toEqual(['read_file', 'list_dir', 'exec']);
    expect(body.tools[0]).toStrictEqual({
      name: 'read_file',
      description: 'Read a file',
      input_schema: REQUEST.tools[0]?.input_schema,
    });
    expect(body.tools[1].cache_control).toBeUndefined();
    expect(body.tools[2].cache_control).toStrictEqual({ type: 'ephemeral' });
    expect(body.messages).toStrictEqual([
      {
        role: 'user',
        content: [{ type: 'text', text: 'List the files.', cache_control: { type: 'ephemeral' } }],
      },
    ]);
  });

  it('keeps tools in the order given, whatever it is', async () => {
    server.enqueue(okText('ok'));
    const reversed = { ...REQUEST, tools: [...REQUEST.tools].reverse() };
    await gateway().complete(reversed, live());
    expect(names(server.requests[0]?.body.tools)).toEqual(['exec', 'list_dir', 'read_file']);
  });

  it('maps a conversation: roles, tool_use, tool_result with is_error; omits an empty system and no tools', async () => {
    server.enqueue(okText('ok'));
    const request: ModelRequest = {
      system: '',
      tools: [],
      maxOutputTokens: 64,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Read a.txt and b.txt' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: '' },
            { type: 'tool_use', id: 'toolu_a', name: 'read_file', input: { path: 'a.txt' } },
            { type: 'tool_use', id: 'toolu_b', name: 'read_file', input: { path: 'b.txt' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_a', content: 'alpha', is_error: false },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_b',
              content: 'no such file',
              is_error: true,
            },
          ],
        },
      ],
    };
    await gateway().complete(request, live());
    const body = server.requests[0]?.body;
    expect(body.system).toBeUndefined();
    expect(body.tools).toBeUndefined();
    expect(body.max_tokens).toBe(64);
    expect((body.messages as { role: string }[]).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
    ]);
    expect(body.messages[1].content).toStrictEqual([
      { type: 'tool_use', id: 'toolu_a', name: 'read_file', input: { path: 'a.txt' } },
      { type: 'tool_use', id: 'toolu_b', name: 'read_file', input: { path: 'b.txt' } },
    ]);
    expect(body.messages[2].content).toStrictEqual([
      { type: 'tool_result', tool_use_id: 'toolu_a', content: 'alpha', is_error: false },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_b',
        content: 'no such file',
        is_error: true,
        cache_control: { type: 'ephemeral' },
      },
    ]);
  });

  it('sends the same request body on a retry', async () => {
    server.enqueue(failWith(529), okText('ok'));
    await gateway().complete(REQUEST, live());
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.body).toStrictEqual(server.requests[0]?.body);
  });
});

describe('anthropic gateway: route and credential by reference (AH-INV-2)', () => {
  it('records provider, base URL, model and the key source, never the key', () => {
    const g = gateway();
    expect(g.adapter).toBe('anthropic');
    expect(g.route).toStrictEqual({
      provider: 'anthropic',
      baseURL: server.baseURL,
      model: 'claude-test-model',
      credential: 'env:ANTHROPIC_API_KEY',
    });
    expectNoKey(g.route);
    expectNoKey(g);
  });

  it('records the base URL the SDK actually uses when none is given (ANTHROPIC_BASE_URL)', async () => {
    const saved = process.env['ANTHROPIC_BASE_URL'];
    process.env['ANTHROPIC_BASE_URL'] = server.baseURL;
    try {
      const g = gateway({ baseURL: undefined });
      expect(g.route['baseURL']).toBe(server.baseURL);
      server.enqueue(okText('via the environment'));
      await g.complete(REQUEST, live());
      expect(server.requests).toHaveLength(1);
    } finally {
      if (saved === undefined) delete process.env['ANTHROPIC_BASE_URL'];
      else process.env['ANTHROPIC_BASE_URL'] = saved;
    }
  });

  it('refuses an empty key and nonsense bounds before any request', () => {
    expect(() => gateway({ apiKey: '' })).toThrow(/empty key/);
    expect(() => gateway({ maxRetries: -1 })).toThrow(/maxRetries/);
    expect(() => gateway({ timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(server.requests).toHaveLength(0);
  });
});

describe('anthropic gateway: bounded, visible retries (AH-LIFE-5)', () => {
  it('retries a 429 once, then succeeds; onRetry is called once', async () => {
    server.enqueue(failWith(429, { message: 'slow down' }), okText('after the rate limit'));
    const response = await gateway().complete(REQUEST, live());
    expect(response.content).toStrictEqual([{ type: 'text', text: 'after the rate limit' }]);
    expect(server.requests).toHaveLength(2);
    expect(retries).toHaveLength(1);
    expect(retries[0]?.attempt).toBe(1);
    expect(retries[0]?.reason).toMatch(/429 rate_limit_error: slow down/);
    expect(retries[0]?.detail).toStrictEqual({
      status: 429,
      errorType: 'rate_limit_error',
      delayMs: 1,
    });
  });

  it('retries 500 and 529, with a doubling backoff', async () => {
    server.enqueue(failWith(500), failWith(529), okText('third time'));
    const response = await gateway({ backoffMs: 2 }).complete(REQUEST, live());
    expect(response.content).toStrictEqual([{ type: 'text', text: 'third time' }]);
    expect(retries.map((r) => [r.attempt, r.detail.status, r.detail.delayMs])).toEqual([
      [1, 500, 2],
      [2, 529, 4],
    ]);
  });

  it('gives up after maxRetries+1 overloaded answers with model_retries_exhausted', async () => {
    const maxRetries = 2;
    server.enqueue(failWith(529), failWith(529), failWith(529), okText('never reached'));
    const error = await failure(gateway({ maxRetries }).complete(REQUEST, live()));
    expect(error.code).toBe('model_retries_exhausted');
    // AH-DIAG-1: the provider's failure names the model gateway, not the harness.
    expect(error.boundary).toBe('model-gateway');
    expect(error.attempts).toBe(maxRetries + 1);
    expect(error.status).toBe(529);
    expect(error.details).toMatchObject({
      status: 529,
      attempts: 3,
      error_type: 'overloaded_error',
    });
    expect(error.message).toMatch(/all 3 attempt\(s\).*529 overloaded_error/);
    expect(server.requests).toHaveLength(3);
    expect(retries.map((r) => r.attempt)).toEqual([1, 2]);
    expectNoKey(error);
  });

  it('with maxRetries 0 makes exactly one attempt', async () => {
    server.enqueue(failWith(503), okText('never reached'));
    const error = await failure(gateway({ maxRetries: 0 }).complete(REQUEST, live()));
    expect(error.code).toBe('model_retries_exhausted');
    expect(error.attempts).toBe(1);
    expect(server.requests).toHaveLength(1);
    expect(retries).toEqual([]);
  });

  it.each([400, 401, 403, 404])('does not retry a %i: model_request_rejected', async (status) => {
    server.enqueue(
      failWith(status, { message: `refused with ${status}` }),
      okText('never reached'),
    );
    const error = await failure(gateway().complete(REQUEST, live()));
    expect(error.code).toBe('model_request_rejected');
    expect(error.status).toBe(status);
    expect(error.attempts).toBe(1);
    expect(error.details).toMatchObject({ status, attempts: 1 });
    expect(error.message).toContain(`refused with ${status}`);
    expect(server.requests).toHaveLength(1);
    expect(retries).toEqual([]);
  });

  it('retries an overloaded error that arrives mid-stream', async () => {
    server.enqueue({ kind: 'stream_error', errorType: 'overloaded_error' }, okText('recovered'));
    const response = await gateway().complete(REQUEST, live());
    expect(response.content).toStrictEqual([{ type: 'text', text: 'recovered' }]);
    expect(retries).toHaveLength(1);
    expect(retries[0]?.detail).toMatchObject({ status: null, errorType: 'overloaded_error' });
  });

  it('does not retry an invalid_request_error that arrives mid-stream', async () => {
    server.enqueue(
      { kind: 'stream_error', errorType: 'invalid_request_error' },
      okText('never reached'),
    );
    const error = await failure(gateway().complete(REQUEST, live()));
    expect(error.code).toBe('model_request_rejected');
    expect(error.status).toBeNull();
    expect(server.requests).toHaveLength(1);
  });

  it('retries a dropped connection and a stream cut before message_stop', async () => {
    server.enqueue({ kind: 'drop' }, okText('x', { cutAfterStart: true }), okText('whole'));
    const response = await gateway().complete(REQUEST, live());
    expect(response.content).toStrictEqual([{ type: 'text', text: 'whole' }]);
    expect(retries).toHaveLength(2);
    expect(retries[0]?.reason).toMatch(/connection error/);
    expect(retries[1]?.reason).toMatch(/connection error|before message_stop/);
  });

  it('retries a stream that stalls longer than timeoutMs', async () => {
    server.enqueue(okText('stalled', { stallMs: 10_000 }), okText('prompt'));
    const started = Date.now();
    const response = await gateway({ timeoutMs: 150 }).complete(REQUEST, live());
    expect(response.content).toStrictEqual([{ type: 'text', text: 'prompt' }]);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(retries).toHaveLength(1);
    expect(retries[0]?.reason).toMatch(/within 150 ms/);
  });

  it('honours retry-after, capped by maxBackoffMs', async () => {
    server.enqueue(failWith(429, { headers: { 'retry-after': '30' } }), okText('ok'));
    await gateway({ maxBackoffMs: 20 }).complete(REQUEST, live());
    expect(retries[0]?.detail.delayMs).toBe(20);
  });

  it('reports an unreachable provider as retries exhausted, status null, same route every time', async () => {
    const port = await closedPort();
    const g = gateway({ baseURL: `http://127.0.0.1:${port}`, maxRetries: 1 });
    const error = await failure(g.complete(REQUEST, live()));
    expect(error.code).toBe('model_retries_exhausted');
    expect(error.status).toBeNull();
    expect(error.attempts).toBe(2);
    expect(retries[0]?.reason).toMatch(/connection error/);
    expect(g.route['baseURL']).toBe(`http://127.0.0.1:${port}`);
    expectNoKey(error);
  });
});

describe('anthropic gateway: the key never leaks', () => {
  it('keeps the key out of a rejected request error, even when the provider echoes it', async () => {
    server.enqueue(failWith(401, { message: `invalid x-api-key ${KEY}` }));
    const error = await failure(gateway().complete(REQUEST, live()));
    expect(error.code).toBe('model_request_rejected');
    expect(error.message).toContain('[redacted]');
    expect(error.message).not.toContain(KEY);
    expect(JSON.stringify(error)).not.toContain(KEY);
    expect(
      JSON.stringify({ code: error.code, details: error.details, message: error.message }),
    ).not.toContain(KEY);
  });

  it('keeps the key out of every error shape', async () => {
    server.enqueue(failWith(500), failWith(500), failWith(500));
    expectNoKey(await failure(gateway().complete(REQUEST, live())));
    server.enqueue(failWith(403));
    expectNoKey(await failure(gateway().complete(REQUEST, live())));
    server.enqueue({ kind: 'drop' });
    expectNoKey(await failure(gateway({ maxRetries: 0 }).complete(REQUEST, live())));
    for (const retry of retries) expect(retry.reason).not.toContain(KEY);
  });
});

describe('anthropic gateway: cancellation', () => {
  it('an abort cancels an in-flight stream', async () => {
    server.enqueue(okText('too slow', { stallMs: 10_000 }));
    const controller = new AbortController();
    const started = Date.now();
    const pending = gateway({ timeoutMs: 60_000 }).complete(REQUEST, controller.signal);
    setTimeout(() => {
      controller.abort();
    }, 100);
    const error = await pending.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe('AbortError');
    expect(error).not.toBeInstanceOf(ModelGatewayError);
    expect(Date.now() - started).toBeLessThan(3_000);
    await expect.poll(() => server.requests[0]?.clientClosedEarly).toBe(true);
    expect(retries).toEqual([]);
  });

  it('an abort before the response starts rejects with the signal reason', async () => {
    server.enqueue(okText('late', { delayMs: 10_000 }));
    const controller = new AbortController();
    const reason = new Error('run cancelled (SIGINT)');
    const pending = gateway({ timeoutMs: 60_000 }).complete(REQUEST, controller.signal);
    setTimeout(() => {
      controller.abort(reason);
    }, 100);
    await expect(pending).rejects.toBe(reason);
    await expect.poll(() => server.requests[0]?.clientClosedEarly).toBe(true);
  });

  it('an abort during the backoff stops the retries', async () => {
    server.enqueue(failWith(429), okText('never reached'));
    const controller = new AbortController();
    const pending = gateway({
      backoffMs: 10_000,
      maxBackoffMs: 10_000,
      onRetry: () => {
        controller.abort();
      },
    }).complete(REQUEST, controller.signal);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(server.requests).toHaveLength(1);
  });

  it('an already-aborted signal sends nothing', async () => {
    server.enqueue(okText('never reached'));
    const controller = new AbortController();
    controller.abort();
    await expect(gateway().complete(REQUEST, controller.signal)).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(server.requests).toHaveLength(0);
  });
});
