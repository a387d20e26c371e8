// bench/model-gateways.ts: the openai-compatible gateway's own overhead per turn against the
// anthropic gateway's, on the same stand-in latency.
//
//   One stand-in endpoint in a child process (so this process's CPU is the gateway's and its
//   SDK's alone) answers both wires after the same delay (BENCH_GATEWAY_LATENCY_MS, default
//   20): a streamed turn of a short text and two tool calls whose arguments arrive in
//   5-character deltas, ~120 events a turn, as each wire sends them (Messages API events;
//   Chat Completions chunks; Responses events). Each gateway completes the same request (a
//   ten-message conversation with three tools) turn after turn, the three interleaved turn
//   by turn. Per turn: the wall time less the stand-in's delay (the gateway's overhead:
//   request building, the HTTP exchange, the stream's parsing and assembly) and this
//   process's CPU time. Reported: the medians and their ratio to the anthropic gateway's
//   (goal <= 1.1x). Times are reported, never asserted.
//
// `bench/run.sh model-gateways`. BENCH_GATEWAY_TURNS (default 200) timed turns per gateway,
// after 20 untimed ones.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { AnthropicGateway } from '../src/model/anthropic-gateway.js';
import { OpenAiGateway } from '../src/model/openai-gateway.js';
import type { ModelGateway, ModelMessage, ModelRequest } from '../src/model/gateway.js';
import { intFromEnv, printRows, runBench, type BenchRow } from './bench-util.js';
import { median } from './stats.js';

const STAND_IN = String.raw`
const http = require('node:http');
const delay = Number(process.argv[1]);
const pieces = (t) => { const o = []; for (let i = 0; i < t.length; i += 5) o.push(t.slice(i, i + 5)); return o; };
const TEXT = 'I will read both files and list the directory before answering.';
const CALLS = [
  { id: 'call_1', name: 'read_file', args: JSON.stringify({ path: 'src/engine/agent/agent-loop.ts', start: 1, end: 200 }) },
  { id: 'call_2', name: 'list_dir', args: JSON.stringify({ path: 'src/model', depth: 2, pattern: '*.ts' }) },
];
function anthropic(res) {
  const ev = (type, data) => res.write('event: ' + type + '\ndata: ' + JSON.stringify({ type, ...data }) + '\n\n');
  ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 900, output_tokens: 1 } } });
  ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  for (const t of pieces(TEXT)) ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: t } });
  ev('content_block_stop', { index: 0 });
  CALLS.forEach((c, i) => {
    ev('content_block_start', { index: i + 1, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } });
    for (const p of pieces(c.args)) ev('content_block_delta', { index: i + 1, delta: { type: 'input_json_delta', partial_json: p } });
    ev('content_block_stop', { index: i + 1 });
  });
  ev('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 60 } });
  ev('message_stop', {});
  res.end();
}
function chat(res) {
  const base = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm' };
  const ch = (delta, finish = null) => res.write('data: ' + JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] }) + '\n\n');
  ch({ role: 'assistant', content: '' });
  for (const t of pieces(TEXT)) ch({ content: t });
  CALLS.forEach((c, i) => {
    ch({ tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] });
    for (const p of pieces(c.args)) ch({ tool_calls: [{ index: i, function: { arguments: p } }] });
  });
  ch({}, 'tool_calls');
  res.write('data: ' + JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 900, completion_tokens: 60, total_tokens: 960 } }) + '\n\n');
  res.end('data: [DONE]\n\n');
}
function responses(res) {
  let seq = 0;
  const ev = (type, data) => res.write('event: ' + type + '\ndata: ' + JSON.stringify({ type, sequence_number: seq++, ...data }) + '\n\n');
  const r = (status, output, usage) => ({ id: 'resp_1', object: 'response', status, model: 'm', output, usage });
  ev('response.created', { response: r('in_progress', [], null) });
  const msg = { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: TEXT, annotations: [] }] };
  ev('response.output_item.added', { output_index: 0, item: { ...msg, content: [] } });
  for (const t of pieces(TEXT)) ev('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta: t, logprobs: [] });
  ev('response.output_item.done', { output_index: 0, item: msg });
  const items = [msg];
  CALLS.forEach((c, i) => {
    const item = { type: 'function_call', id: 'fc_' + i, call_id: c.id, name: c.name, arguments: c.args, status: 'completed' };
    ev('response.output_item.added', { output_index: i + 1, item: { ...item, arguments: '' } });
    for (const p of pieces(c.args)) ev('response.function_call_arguments.delta', { item_id: item.id, output_index: i + 1, delta: p });
    ev('response.output_item.done', { output_index: i + 1, item });
    items.push(item);
  });
  ev('response.completed', { response: r('completed', items, { input_tokens: 900, output_tokens: 60, total_tokens: 960 }) });
  res.end();
}
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => setTimeout(() => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (req.url.startsWith('/v1/messages')) anthropic(res);
    else if (req.url.startsWith('/v1/chat/completions')) chat(res);
    else responses(res);
  }, delay));
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

function request(): ModelRequest {
  const messages: ModelMessage[] = [
    { role: 'user', content: [{ type: 'text', text: 'Find where the loop reserves a request.' }] },
  ];
  for (let i = 0; i < 4; i += 1) {
    const id = `call_${String(i)}`;
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: `Step ${String(i)}: reading.` },
        { type: 'tool_use', id, name: 'read_file', input: { path: `src/f${String(i)}.ts` } },
      ],
    });
    messages.push({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: id, content: 'x'.repeat(2000), is_error: false },
      ],
    });
  }
  messages.push({ role: 'user', content: [{ type: 'text', text: 'Go on.' }] });
  const schema = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
  return {
    system: 'You are a careful agent. '.repeat(40),
    messages,
    tools: ['read_file', 'list_dir', 'grep'].map((name) => ({
      name,
      description: `The ${name} tool.`,
      input_schema: schema,
    })),
    maxOutputTokens: 4096,
  };
}

async function startStandIn(latency: number): Promise<{ port: number; stop: () => void }> {
  const child = spawn(process.execPath, ['-e', STAND_IN, String(latency)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => {
      reject(new Error(`the stand-in exited (${String(code)})`));
    });
  });
  return { port: Number(line), stop: () => child.kill() };
}

interface Sample {
  readonly overheadMs: number;
  readonly cpuMs: number;
}

async function turn(g: ModelGateway, req: ModelRequest, latency: number): Promise<Sample> {
  const signal = new AbortController().signal;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const response = await g.complete(req, signal);
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  if (response.content.filter((b) => b.type === 'tool_use').length !== 2)
    throw new Error(`${g.adapter}: the turn did not assemble two calls`);
  return { overheadMs: wall - latency, cpuMs: (used.user + used.system) / 1000 };
}

export async function rows(): Promise<readonly BenchRow[]> {
  const latency = intFromEnv('BENCH_GATEWAY_LATENCY_MS', 20, 0);
  const turns = intFromEnv('BENCH_GATEWAY_TURNS', 200, 10);
  const standIn = await startStandIn(latency);
  try {
    const base = `http://127.0.0.1:${String(standIn.port)}`;
    const common = { model: 'bench-model', maxRetries: 0, timeoutMs: 10_000 };
    const gateways: Record<string, ModelGateway> = {
      anthropic: new AnthropicGateway({
        ...common,
        apiKey: 'k',
        baseURL: base,
        keySource: 'env:K',
      }),
      chat: new OpenAiGateway({
        ...common,
        apiKey: 'k',
        baseURL: `${base}/v1`,
        wire: 'chat',
        keySource: 'env:K',
      }),
      responses: new OpenAiGateway({
        ...common,
        apiKey: 'k',
        baseURL: `${base}/v1`,
        wire: 'responses',
        keySource: 'env:K',
      }),
    };
    const req = request();
    const samples: Record<string, Sample[]> = { anthropic: [], chat: [], responses: [] };
    for (let i = 0; i < turns + 20; i += 1)
      for (const [name, g] of Object.entries(gateways)) {
        const s = await turn(g, req, latency);
        if (i >= 20) samples[name]?.push(s);
      }
    const of = (name: string, key: keyof Sample): number =>
      median((samples[name] ?? []).map((s) => s[key]));
    const base0 = { overhead: of('anthropic', 'overheadMs'), cpu: of('anthropic', 'cpuMs') };
    const out: BenchRow[] = [];
    for (const wire of ['chat', 'responses'] as const) {
      for (const [key, label, b] of [
        ['overheadMs', 'wall beyond the stand-in delay', base0.overhead],
        ['cpuMs', 'CPU', base0.cpu],
      ] as const) {
        const value = of(wire, key) / b;
        out.push({
          figure: `openai-compatible (${wire}) turn, ${label}, p50 ${of(wire, key).toFixed(2)} ms`,
          value,
          unit: 'x',
          baseline: `anthropic gateway, same stand-in (${String(latency)} ms), p50 ${b.toFixed(2)} ms`,
          goal: '<= 1.1',
          met: value <= 1.1,
        });
      }
    }
    return out;
  } finally {
    standIn.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runBench(async () => {
    printRows(
      'model gateways: overhead per turn (medians; the baseline run interleaved)',
      await rows(),
    );
    return 0;
  });
}
