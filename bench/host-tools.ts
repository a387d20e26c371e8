// The host-tool channel's own cost (make bench-host-tools), against the SDK's own stdio
// client talking to the same server, in one process, rounds interleaved:
//   call    one tools/call of server-everything's `echo`: raw (Client + StdioClientTransport)
//           against cfh's channel (McpChannel: its transport, the ledger's records, the call,
//           the observation, credential scrubbing with one held credential, concealment).
//   start   a server started, `initialize`d, `tools/list`ed and stopped: raw (Client.connect,
//           listTools, close) against cfh (McpConnection.open, listTools, close, which also
//           stops the tree and scans the process table for the marker).
//   scrub   the scrubber alone over texts of two sizes and kinds (bench/scrub.ts): ns per
//           byte, and whether that stays the same as the text grows.
// BENCH_CALLS (default 200) calls and BENCH_STARTS (default 10) starts per round, 3 rounds.
import path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { currentOwner } from '../src/sandbox/owner.js';
import { HostProcessLedger } from '../src/tools/host/host-process.js';
import { Sanitizer } from '../src/tools/host/host-results.js';
import { mcpToolDefinitions } from '../src/tools/host/host-tool.js';
import { McpChannel } from '../src/tools/host/mcp-channel.js';
import { McpConnection, type McpServerSpec } from '../src/tools/host/mcp-connection.js';
import { OpaqueReferences, concealPattern } from '../src/tools/host/opaque-refs.js';
import { Scrubber } from '../src/tools/host/scrub.js';
import { McpHostTool } from '../src/config/host-tools-schema.js';
import { serverSpec } from '../src/engine/agent/host-tools.js';
import { planHostTools } from '../src/tools/host/host-plan.js';
import { scrubBench } from './scrub.js';
import { summarize } from './stats.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SERVER = path.join(
  ROOT,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const STARTS = Number(process.env.BENCH_STARTS ?? 10);
const ROUNDS = 3;
const signal = new AbortController().signal;
const CREDENTIAL = 'bench-credential-0123456789';

const ledgerDir = mkdtempSync(path.join(os.tmpdir(), 'cfh-bench-host-'));
const entry = McpHostTool.parse({
  kind: 'mcp',
  name: 'everything',
  command: process.execPath,
  args: [SERVER],
  cwd: ROOT,
  env: { API_TOKEN: { value: CREDENTIAL } },
  tools: [{ name: 'echo', riskClass: 'read_only', sideEffectClass: 'none' }],
});
// Planned as a run plans it: checked and pinned, so each start pays for the pin check.
const planned = planHostTools([entry], 'bench', process.env).tools[0];
if (planned === undefined) throw new Error('not planned');
const spec: McpServerSpec = serverSpec(planned, entry);
const scrubber = new Scrubber([{ name: 'API_TOKEN', value: CREDENTIAL }]);
const launch = {
  runId: 'bench',
  owner: currentOwner(),
  ledger: new HostProcessLedger(ledgerDir),
  scrubber,
  sink: { event: () => Promise.resolve(), output: () => Promise.resolve('') },
};

async function rawClient(): Promise<Client> {
  const client = new Client({ name: 'bench', version: '0' }, { capabilities: {} });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [SERVER],
      env: { ...spec.env },
      stderr: 'pipe',
    }),
  );
  return client;
}

async function timed(n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const t = performance.now();
    await fn(i);
    out.push(performance.now() - t);
  }
  return out;
}

async function main(): Promise<void> {
  const raw = await rawClient();
  const probe = await McpConnection.open(spec, 'probe', launch, signal);
  const refs = new OpaqueReferences();
  const { tools } = mcpToolDefinitions(entry, await probe.listTools(signal), refs, scrubber);
  const channel = new McpChannel(
    spec,
    entry,
    launch,
    new Map(tools.map((t) => [t.remoteName, t.inputSchemaDigest])),
    probe,
  );
  const echo = tools[0];
  if (echo === undefined) throw new Error('echo not exposed');
  const sanitizer = new Sanitizer(scrubber, refs, 'everything', {
    fields: [],
    patterns: [concealPattern('n', 'acct_[0-9]+')],
  });
  const samples = {
    rawCall: [] as number[],
    cfhCall: [] as number[],
    rawStart: [] as number[],
    cfhStart: [] as number[],
  };
  for (let round = 0; round < ROUNDS; round += 1) {
    samples.rawCall.push(
      ...(await timed(CALLS, (i) =>
        raw.callTool({ name: 'echo', arguments: { message: `m${i}` } }),
      )),
    );
    samples.cfhCall.push(
      ...(await timed(CALLS, (i) =>
        channel.run(echo, { message: `m${i}` }, `call-${i}`, sanitizer, 30_000, signal),
      )),
    );
    samples.rawStart.push(
      ...(await timed(STARTS, async () => {
        const c = await rawClient();
        await c.listTools();
        await c.close();
      })),
    );
    samples.cfhStart.push(
      ...(await timed(STARTS, async () => {
        const c = await McpConnection.open(spec, 'probe', launch, signal);
        await c.listTools(signal);
        await c.close('bench');
      })),
    );
  }
  await raw.close();
  await channel.close();
  rmSync(ledgerDir, { recursive: true, force: true });
  const s = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
  const ratio = (a: string, b: string): string =>
    ((s[a]?.p50 ?? Number.NaN) / (s[b]?.p50 ?? Number.NaN)).toFixed(2);
  process.stdout.write(`${JSON.stringify(s, null, 2)}\n`);
  process.stdout.write(
    `call p50: cfh ${s.cfhCall?.p50.toFixed(3)} ms vs raw SDK ${s.rawCall?.p50.toFixed(3)} ms (ratio ${ratio('cfhCall', 'rawCall')})\n` +
      `start p50: cfh ${s.cfhStart?.p50.toFixed(1)} ms vs raw SDK ${s.rawStart?.p50.toFixed(1)} ms (ratio ${ratio('cfhStart', 'rawStart')})\n`,
  );
  process.stdout.write(
    'scrub, CPU ns per byte at 64 KiB and 1 MiB, and linearity (1 MiB over 64 KiB):\n',
  );
  for (const [kind, f] of Object.entries(scrubBench()))
    process.stdout.write(
      `  ${kind.padEnd(44)} ${'error' in f ? f.error : `${f.small} / ${f.large} (x${f.linearity})`}\n`,
    );
}

await main();
