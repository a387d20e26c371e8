// The openai-compatible gateway against a loopback endpoint that speaks both wires (Chat
// Completions and Responses) as the `openai` package's types define them: requests checked
// field by field, streamed tool-call arguments split across chunks, parallel calls, usage
// kept exactly as reported (absent stays absent), typed failures that never carry the key,
// bounded retries that honour retry-after, a stream cut mid-call retried on the same route.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OpenAiGateway, type OpenAiGatewayOptions } from '../../src/model/openai-gateway.js';
import { ModelGatewayError, type RetryDetail } from '../../src/model/gateway-failures.js';
import type { ModelRequest } from '../../src/model/gateway.js';
import {
  contextLengthError,
  failWith,
  okCalls,
  okText,
  startOpenAiApiServer,
  type OpenAiApiServer,
} from '../fixtures/openai-api-server.js';

const KEY = 'sk-openai-fixture-DO-NOT-LEAK-9876543210';

const TOOLS: ModelRequest['tools'] = [
  {
    name: 'read_file',
    description: 'Read a file',
    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'list_dir',
    description: 'List a directory',
    input_schema: { type: 'object', properties: { path: { type: 'string' } } },
  },
];

const REQUEST: ModelRequest = {
  system: 'You are a careful agent.',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'List the files.' }] }],
  tools: TOOLS,
  maxOutputTokens: 1024,
};

/** A second turn: the model's parallel calls, their results (one failed), a new line. */
const FOLLOW_UP: ModelRequest = {
  ...REQUEST,
  messages: [
    ...REQUEST.messages,
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading both.' },
        { type: 'tool_use', id: 'call_a', name: 'read_file', input: { path: 'a.txt' } },
        { type: 'tool_use', id: 'call_b', name: 'list_dir', input: { path: '.' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'call_a', content: 'alpha', is_error: false },
        { type: 'tool_result', tool_use_id: 'call_b', content: 'no such dir', is_error: true },
      ],
    },
  ],
};

let server: OpenAiApiServer;
let retries: { attempt: number; reason: string; detail: RetryDetail }[];

beforeEach(async () => {
  server = await startOpenAiApiServer();
  retries = [];
});

afterEach(async () => {
  await server.close();
});

const live = (): AbortSignal => new AbortController().signal;

async function failure(promise: Promise<unknown>): Promise<ModelGatewayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelGatewayError);
  return error as ModelGatewayError;
}

describe.each(['chat', 'responses'] as const)('openai-compatible gateway, wire %s', (wire) => {
  const gateway = (o: Partial<OpenAiGatewayOptions> = {}): OpenAiGateway =>
    new OpenAiGateway({
      apiKey: KEY,
      baseURL: server.baseURL,
      model: 'qwen3-coder',
      wire,
      keySource: 'env:OPENAI_API_KEY',
      maxRetries: 2,
      timeoutMs: 5_000,
      backoffMs: 1,
      onRetry: (attempt, reason, detail) => retries.push({ attempt, reason, detail }),
      ...o,
    });
  const path = wire === 'chat' ? '/v1/chat/completions' : '/v1/responses';

  it('sends the request field by field as the wire defines it', async () => {
    server.enqueue(okText('fine'));
    await gateway().complete(REQUEST, live());
    const [sent] = server.requests;
    expect(sent?.method).toBe('POST');
    expect(sent?.url).toBe(path);
    expect(sent?.headers['authorization']).toBe(`Bearer ${KEY}`);
    if (wire === 'chat')
      expect(sent?.body).toStrictEqual({
        model: 'qwen3-coder',
        messages: [
          { role: 'system', content: 'You are a careful agent.' },
          { role: 'user', content: 'List the files.' },
        ],
        max_tokens: 1024,
        tools: TOOLS.map((t) => ({
          type: 'function',
          function: { name: t.name, description: t.description, parameters: t.input_schema },
        })),
        stream: true,
        stream_options: { include_usage: true },
      });
    else
      expect(sent?.body).toStrictEqual({
        model: 'qwen3-coder',
        instructions: 'You are a careful agent.',
        input: [{ role: 'user', content: 'List the files.' }],
        max_output_tokens: 1024,
        store: false,
        tools: TOOLS.map((t) => ({
          type: 'function',
          name: t.name,
          description: t.description,
          parameters: t.input_schema,
          strict: false,
        })),
        stream: true,
      });
  });

  it('maps a conversation of parallel calls and their results (a failure says so)', async () => {
    server.enqueue(okText('done'));
    await gateway().complete(FOLLOW_UP, live());
    const body = server.requests[0]?.body;
    if (wire === 'chat')
      expect(body?.['messages']).toStrictEqual([
        { role: 'system', content: 'You are a careful agent.' },
        { role: 'user', content: 'List the files.' },
        {
          role: 'assistant',
          content: 'Reading both.',
          tool_calls: [
            {
              id: 'call_a',
              type: 'function',
              function: { name: 'read_file', arguments: '{"path":"a.txt"}' },
            },
            {
              id: 'call_b',
              type: 'function',
              function: { name: 'list_dir', arguments: '{"path":"."}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: 'alpha' },
        { role: 'tool', tool_call_id: 'call_b', content: '[tool call failed] no such dir' },
      ]);
    else
      expect(body?.['input']).toStrictEqual([
        { role: 'user', content: 'List the files.' },
        { role: 'assistant', content: 'Reading both.' },
        {
          type: 'function_call',
          call_id: 'call_a',
          name: 'read_file',
          arguments: '{"path":"a.txt"}',
        },
        { type: 'function_call', call_id: 'call_b', name: 'list_dir', arguments: '{"path":"."}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'alpha' },
        {
          type: 'function_call_output',
          call_id: 'call_b',
          output: '[tool call failed] no such dir',
        },
      ]);
  });

  it('assembles parallel tool calls whose arguments arrive split across chunks', async () => {
    server.enqueue(
      okCalls(
        [
          { id: 'call_1', name: 'read_file', input: { path: 'src/some/long/path.ts' } },
          { id: 'call_2', name: 'list_dir', input: { path: 'test' } },
        ],
        // Responses: no output_item.done, so the call is what its deltas add up to.
        { chunk: 3, usage: { input: 40, output: 12 }, omitItemDone: true },
      ),
    );
    const response = await gateway().complete(REQUEST, live());
    expect(response.content).toStrictEqual([
      {
        type: 'tool_use',
        id: 'call_1',
        name: 'read_file',
        input: { path: 'src/some/long/path.ts' },
      },
      { type: 'tool_use', id: 'call_2', name: 'list_dir', input: { path: 'test' } },
    ]);
    expect(response.usage).toStrictEqual({ input_tokens: 40, output_tokens: 12 });
    expect(response.model).toBe('fixture-model');
  });

  it('keeps arguments that do not parse as the raw text, for validation to refuse', async () => {
    server.enqueue(
      okCalls([{ id: 'call_x', name: 'read_file', input: {} }], { rawArguments: '{"path": "a' }),
    );
    const response = await gateway().complete(REQUEST, live());
    expect(response.content).toStrictEqual([
      { type: 'tool_use', id: 'call_x', name: 'read_file', input: '{"path": "a' },
    ]);
  });

  it('leaves usage absent when the endpoint reports none (never zero)', async () => {
    server.enqueue(okText('no counters', { usage: null }));
    const response = await gateway().complete(REQUEST, live());
    expect(response.usage).toStrictEqual({});
    expect(response.content).toStrictEqual([{ type: 'text', text: 'no counters' }]);
  });

  it('maps a non-streamed response the same way', async () => {
    server.enqueue(
      okCalls([{ id: 'call_9', name: 'list_dir', input: { path: '.' } }], { usage: null }),
    );
    const response = await gateway({ streaming: false }).complete(REQUEST, live());
    expect(server.requests[0]?.body['stream']).toBe(false);
    expect(response.content).toStrictEqual([
      { type: 'tool_use', id: 'call_9', name: 'list_dir', input: { path: '.' } },
    ]);
    expect(response.usage).toStrictEqual({});
  });

  it('retries a 429 after its retry-after (capped), on the same route, and records it', async () => {
    server.enqueue(failWith(429, { headers: { 'retry-after': '0.05' } }), okText('after wait'));
    const started = Date.now();
    const response = await gateway({ maxBackoffMs: 2_000 }).complete(REQUEST, live());
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(response.content).toStrictEqual([{ type: 'text', text: 'after wait' }]);
    expect(retries).toHaveLength(1);
    expect(retries[0]?.detail).toMatchObject({ status: 429, delayMs: 50 });
    expect(server.requests.map((q) => [q.url, q.body['model']])).toStrictEqual([
      [path, 'qwen3-coder'],
      [path, 'qwen3-coder'],
    ]);
  });

  it('a 401 is rejected at once as an auth failure, without the key', async () => {
    server.enqueue(
      failWith(401, {
        error: { message: `Incorrect API key provided: ${KEY}`, code: 'invalid_api_key' },
      }),
    );
    const error = await failure(gateway().complete(REQUEST, live()));
    expect(error.code).toBe('model_request_rejected');
    expect(error.boundary).toBe('model-gateway');
    expect(error.details).toMatchObject({ status: 401, attempts: 1, failure: 'auth' });
    expect(JSON.stringify({ m: error.message, d: error.details })).not.toContain(KEY);
    expect(server.requests).toHaveLength(1);
  });

  it('a context-length error is rejected as such, not retried', async () => {
    server.enqueue(contextLengthError());
    const error = await failure(gateway().complete(REQUEST, live()));
    expect(error.code).toBe('model_request_rejected');
    expect(error.details).toMatchObject({ status: 400, failure: 'context_length' });
    expect(retries).toStrictEqual([]);
  });

  it('a stream cut mid-tool-call is retried; with no retry left it is a typed stream failure', async () => {
    const cut = okCalls([{ id: 'call_c', name: 'read_file', input: { path: 'abcdefghij' } }], {
      cutAfterArgumentDeltas: 2,
    });
    server.enqueue(cut, okText('whole'));
    const response = await gateway().complete(REQUEST, live());
    expect(response.content).toStrictEqual([{ type: 'text', text: 'whole' }]);
    expect(retries).toHaveLength(1);
    server.enqueue(cut);
    const error = await failure(gateway({ maxRetries: 0 }).complete(REQUEST, live()));
    expect(error.code).toBe('model_retries_exhausted');
    expect(error.details).toMatchObject({ status: null, failure: 'stream', attempts: 1 });
  });

  it('a stream that ends cleanly before its last event is incomplete, never a partial answer', async () => {
    const cut = okCalls([{ id: 'call_e', name: 'read_file', input: { path: 'abcdefghij' } }], {
      cutAfterArgumentDeltas: 2,
      cutCleanly: true,
    });
    server.enqueue(cut);
    const error = await failure(gateway({ maxRetries: 0 }).complete(REQUEST, live()));
    expect(error.code).toBe('model_retries_exhausted');
    expect(error.details).toMatchObject({ failure: 'stream' });
    expect(error.message).toContain(wire === 'chat' ? 'finish_reason' : 'response.completed');
  });

  it('a local server with credential none gets no Authorization header', async () => {
    server.enqueue(okText('local'));
    const g = gateway({ apiKey: null, keySource: 'none' });
    await g.complete(REQUEST, live());
    expect(server.requests[0]?.headers['authorization']).toBeUndefined();
    expect(g.route).toStrictEqual({
      provider: 'openai-compatible',
      baseURL: server.baseURL,
      model: 'qwen3-coder',
      wire,
      credential: 'none',
    });
  });

  it('records the route by reference, never the key; cannot count tokens', async () => {
    const g = gateway();
    expect(JSON.stringify(g.route)).not.toContain(KEY);
    expect(g.route['credential']).toBe('env:OPENAI_API_KEY');
    expect(g.adapter).toBe('openai-compatible');
    expect(await g.countInputTokens(REQUEST, live())).toBeUndefined();
    expect(server.requests).toStrictEqual([]);
  });
});
