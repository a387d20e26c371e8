// What cfh's egress gateway (src/network/egress-gateway.ts) adds to a sandboxed client's
// requests, against the same requests sent directly, in one process and without containers.
//
// A local HTTP server (node:http on 127.0.0.1, random port) serves a small response
// (SMALL_BYTES) and a large one (BENCH_LARGE_MIB, streamed from one reused buffer). An
// EgressGateway is started on 127.0.0.1 the way cfh starts it for an allowlist posture: the
// policy allows `127.0.0.1:<port>` (loopback is refused unless listed, so it is listed) and
// `bench.cfh.test:<port>`; the server port is intercepted by name and pinned to 127.0.0.1;
// the resolver answers 127.0.0.1. Requests reach the gateway's listeners exactly as the
// sandbox's DNAT delivers them, and the gateway connects on to the server:
//   direct   the client connects to the server port (Host 127.0.0.1:<port>).
//   pinned   the pinned listener for 127.0.0.1:<port> (Host 127.0.0.1:<port>): no name, the
//            address decides.
//   name     the by-port listener for <port> with Host bench.cfh.test:<port>: the name is
//            read from the Host header, checked, resolved, the address checked again.
// The client is hand-written on node:net (one write per request, a Content-Length parser), so
// the client's own cost is the same small amount in every series:
//   close      a fresh TCP connection per request (Connection: close): what a sandboxed
//              client's transparent connection costs, handshake and upstream connect
//              included. Timed from connect() to the last body byte.
//   keepalive  one persistent connection per series, timed from write to the last body byte:
//              the gateway's forwarding cost alone.
//   download   the large response on a fresh connection; MB/s of body bytes (1 MB = 10^6).
// Latency series run in batches (BENCH_BATCH requests of one series, then the next), the
// order of direct/pinned/name rotating per batch, so drift falls on all of them alike;
// downloads are interleaved the same way. Warm-up requests and downloads are discarded.
//
// Layout (BENCH_LAYOUT): `worker` (default) runs the server and the client in a worker
// thread and leaves the main thread to the gateway alone, as in cfh, where the gateway has
// cfh's event loop and the client and server are other processes. `single` runs all three
// on one thread: the gateway's work then adds serially to the client's and the server's,
// which understates the gateway's throughput.
//
// After the runs the gateway's events are checked against what the client did: one event
// per gateway connection (a close-mode request, a download, a keep-alive connection), each
// allowed and allowlisted by the expected rule, with bytesIn/bytesOut equal to the bytes the
// client received/sent on that connection (so a large download's bytesIn is its head plus
// the whole body). The targets (issue 21: at most 0.3 ms added per fresh connection at p50,
// at least 80% of direct throughput on the large download) are reported, never asserted: the
// exit status is non-zero only when something failed or the events do not match.
//
// egress-client.ts is the client, egress-load.ts the server and the worker thread,
// egress-report.ts the tables; rows() gives the two figures to bench-all.
//
// Run: bench/run.sh egress   (BENCH_REQUESTS per series, default 2000; BENCH_WARMUP per
//      series, default 200; BENCH_BATCH, default 50; BENCH_DOWNLOADS, default 5, after one
//      warm-up each; BENCH_LARGE_MIB, default 256; BENCH_LAYOUT worker|single)
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseDestinations } from '../src/network/destination.js';
import { EgressGateway, type EgressEvent } from '../src/network/egress-gateway.js';
import { EgressPolicy } from '../src/network/egress-policy.js';
import { intFromEnv, printRows, runBench, type BenchRow } from './bench-util.js';
import { LOOPBACK, type ConnectionBytes } from './egress-client.js';
import {
  layoutFromEnv,
  MiB,
  MODES,
  SMALL_BYTES,
  startDriver,
  TARGETS,
  type Mode,
  type Target,
} from './egress-load.js';
import {
  ADDED_P50_MAX_MS,
  GATEWAY_TARGETS,
  judge,
  ms3,
  report,
  signed3,
  summarizeLatency,
  summarizeThroughput,
  THROUGHPUT_MIN_RATIO,
  type EgressResults,
  type GatewayTarget,
  type LatencySummary,
  type ThroughputSummary,
} from './egress-report.js';
import { round1 } from './stats.js';

const BENCH_NAME = 'bench.cfh.test';
const EVENT_WAIT_MS = 10_000;

function rotate<T>(items: readonly T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

function key(bytes: ConnectionBytes): string {
  return `${bytes.bytesIn}/${bytes.bytesOut}`;
}

function sameMultiset(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const x = [...a].sort();
  const y = [...b].sort();
  return x.every((v, i) => v === y[i]);
}

async function waitFor(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/**
 * Runs the latency series and the downloads through a fresh gateway, then checks its events
 * against the client's connections; with `header`, prints what is measured first.
 */
async function measure(header: boolean): Promise<EgressResults> {
  const requests = intFromEnv('BENCH_REQUESTS', 2000, 1);
  const warmup = intFromEnv('BENCH_WARMUP', 200, 0);
  const batch = intFromEnv('BENCH_BATCH', 50, 1);
  const downloads = intFromEnv('BENCH_DOWNLOADS', 5, 1);
  const downloadWarmup = 1;
  const largeMiB = intFromEnv('BENCH_LARGE_MIB', 256, 1);
  const layout = layoutFromEnv();
  const largeBytes = largeMiB * MiB;

  const events: EgressEvent[] = [];
  const driver = await startDriver(layout, largeBytes);
  let gateway: EgressGateway | undefined;
  const serverPort = driver.port;
  const rules = { pinned: `${LOOPBACK}:${serverPort}`, name: `${BENCH_NAME}:${serverPort}` };

  const latency = {
    close: { direct: [] as number[], pinned: [] as number[], name: [] as number[] },
    keepalive: { direct: [] as number[], pinned: [] as number[], name: [] as number[] },
  } satisfies Record<Mode, Record<Target, number[]>>;
  const throughput = { direct: [] as number[], pinned: [] as number[], name: [] as number[] };
  // What the client saw on each connection through the gateway, warm-up included.
  const connections = { pinned: [] as string[], name: [] as string[] };
  const downloadBytes = { pinned: [] as number[], name: [] as number[] };
  let downloadHeadBytes = 0;

  try {
    gateway = await EgressGateway.start({
      policy: new EgressPolicy({
        mode: 'allowlist',
        allow: parseDestinations('allow', [rules.pinned, rules.name]),
        deny: [],
        hostAddresses: [],
      }),
      bindAddress: LOOPBACK,
      interceptPorts: [serverPort],
      pinned: [{ address: LOOPBACK, port: serverPort }],
      resolve: () => Promise.resolve([LOOPBACK]),
      onEvent: (e) => {
        events.push(e);
      },
    });
    const pinnedListen = gateway.endpoints.pinned[0]?.listen;
    const byPortListen = gateway.endpoints.byPort.get(serverPort);
    if (pinnedListen === undefined || byPortListen === undefined) {
      throw new Error('the gateway has no listener for the server port');
    }
    await driver.setRoutes({
      direct: { port: serverPort, host: `${LOOPBACK}:${serverPort}` },
      pinned: { port: pinnedListen, host: `${LOOPBACK}:${serverPort}` },
      name: { port: byPortListen, host: `${BENCH_NAME}:${serverPort}` },
    });

    if (header) {
      console.log('cfh egress gateway bench');
      console.log(
        `  node ${process.version}, ${os.cpus().length} cpus, ${os.platform()} ${os.release()}`,
      );
      console.log(
        `  layout ${layout}: ${layout === 'worker' ? 'gateway on the main thread; server + client in a worker thread' : 'gateway, server and client on one thread'}`,
      );
      console.log(
        `  server 127.0.0.1:${serverPort} (small ${SMALL_BYTES} B, large ${largeMiB} MiB); gateway listeners: pinned ${pinnedListen} (${rules.pinned}), by-port ${byPortListen} (Host ${rules.name})`,
      );
      console.log(
        `  latency: ${requests} requests per series after ${warmup} warm-up, batches of ${batch}, order rotating per batch`,
      );
      console.log(
        `  download: ${downloads} per series after ${downloadWarmup} warm-up, interleaved`,
      );
      console.log('');
    }

    const runLatency = async (perSeries: number, measured: boolean): Promise<void> => {
      for (let done = 0, b = 0; done < perSeries; b++) {
        const size = Math.min(batch, perSeries - done);
        for (const mode of MODES) {
          for (const target of rotate(TARGETS, b)) {
            const samples = await driver.latency(target, mode, size);
            if (measured) latency[mode][target].push(...samples.map((s) => s.ms));
            if (mode === 'close' && target !== 'direct') {
              connections[target].push(...samples.map(key));
            }
          }
        }
        done += size;
      }
    };
    const t0 = performance.now();
    await runLatency(warmup, false);
    console.error(`  latency warm-up done (${round1((performance.now() - t0) / 1000)} s)`);
    const t1 = performance.now();
    await runLatency(requests, true);
    console.error(`  latency runs done (${round1((performance.now() - t1) / 1000)} s)`);
    const kept = await driver.endKeepAlive();
    for (const target of GATEWAY_TARGETS) {
      const bytes = kept[target];
      if (bytes !== undefined) connections[target].push(key(bytes));
    }

    for (let rep = 0; rep < downloadWarmup + downloads; rep++) {
      const line: string[] = [];
      for (const target of rotate(TARGETS, rep)) {
        const s = await driver.download(target);
        downloadHeadBytes = s.bytesIn - largeBytes;
        const mbps = largeBytes / 1e6 / (s.ms / 1000);
        if (rep >= downloadWarmup) throughput[target].push(mbps);
        if (target !== 'direct') {
          connections[target].push(key(s));
          downloadBytes[target].push(s.bytesIn);
        }
        line.push(`${target} ${mbps.toFixed(0)}`);
      }
      const label =
        rep < downloadWarmup ? 'warm-up' : `rep ${rep - downloadWarmup + 1}/${downloads}`;
      console.error(`  download ${label.padEnd(9)} ${line.join('  ')} MB/s`);
    }
  } finally {
    await driver.close();
    await gateway?.close();
  }

  // One event per gateway connection, reported when both of its sockets have closed.
  const expected = connections.pinned.length + connections.name.length;
  await waitFor(() => events.length >= expected, EVENT_WAIT_MS);
  await new Promise((resolve) => setTimeout(resolve, 100));

  const problems: string[] = [];
  const byTarget: Record<GatewayTarget, EgressEvent[]> = { pinned: [], name: [] };
  for (const e of events) {
    if (e.name === BENCH_NAME) byTarget.name.push(e);
    else if (e.name === undefined) byTarget.pinned.push(e);
    else problems.push(`event for an unexpected name ${e.name}`);
  }
  const verification: Record<string, unknown> = {};
  const eventLines: string[] = [];
  for (const target of GATEWAY_TARGETS) {
    const seen = byTarget[target];
    const wrong = seen.filter(
      (e) =>
        !e.allowed ||
        e.reason !== 'allowlisted' ||
        e.rule !== rules[target] ||
        e.protocol !== 'http' ||
        e.via !== 'transparent' ||
        e.address !== LOOPBACK ||
        e.port !== serverPort,
    );
    const bytesMatch = sameMultiset(seen.map(key), connections[target]);
    const large = seen.filter((e) => e.bytesIn >= largeBytes);
    const largeMatch =
      large.length === downloadBytes[target].length &&
      large.every((e) => e.bytesIn === largeBytes + downloadHeadBytes) &&
      downloadBytes[target].every((b) => b === largeBytes + downloadHeadBytes);
    if (seen.length !== connections[target].length) {
      problems.push(
        `${target}: ${seen.length} events for ${connections[target].length} connections`,
      );
    }
    if (wrong.length > 0) {
      const first = wrong[0];
      problems.push(
        `${target}: ${wrong.length} events not allowed as expected (first: ${JSON.stringify(first)})`,
      );
    }
    if (!bytesMatch) problems.push(`${target}: event bytes differ from the client's`);
    if (!largeMatch) {
      problems.push(
        `${target}: large downloads: ${large.length} events, bytesIn ${[...new Set(large.map((e) => e.bytesIn))].join(', ')}; expected ${downloadBytes[target].length} x ${largeBytes + downloadHeadBytes}`,
      );
    }
    verification[target] = {
      events: seen.length,
      connections: connections[target].length,
      allAllowed: wrong.length === 0,
      bytesMatch,
      largeEvents: large.length,
      largeBytesInOk: largeMatch,
    };
    eventLines.push(
      `  ${target.padEnd(6)} ${seen.length} events for ${connections[target].length} connections` +
        ` (${warmup + requests} close-mode requests, 1 kept-alive connection, ${downloadWarmup + downloads} downloads);` +
        ` ${wrong.length === 0 ? `all allowed, allowlisted by ${rules[target]}` : `${wrong.length} NOT as expected`};` +
        ` bytesIn/bytesOut ${bytesMatch ? 'equal' : 'DIFFER from'} the client's per connection;` +
        ` large: ${large.length} events, bytesIn ${large.length > 0 && largeMatch ? `${largeBytes + downloadHeadBytes} each (head ${downloadHeadBytes} + body ${largeBytes})` : 'MISMATCH'}`,
    );
  }
  const stray = events.length - byTarget.pinned.length - byTarget.name.length;

  // ---- report
  const lat = {
    close: Object.fromEntries(
      TARGETS.map((t) => [t, summarizeLatency(latency.close[t])]),
    ) as Record<Target, LatencySummary>,
    keepalive: Object.fromEntries(
      TARGETS.map((t) => [t, summarizeLatency(latency.keepalive[t])]),
    ) as Record<Target, LatencySummary>,
  };
  const thr = Object.fromEntries(
    TARGETS.map((t) => [t, summarizeThroughput(throughput[t])]),
  ) as Record<Target, ThroughputSummary>;

  return {
    layout,
    requests,
    warmup,
    batch,
    downloads,
    downloadWarmup,
    largeMiB,
    largeBytes,
    lat,
    thr,
    events: { seen: events.length, expected, stray, lines: eventLines, problems, verification },
  };
}

function rowsOf(r: EgressResults): BenchRow[] {
  const { added, throughputRatio } = judge(r);
  const worse = (f: (t: GatewayTarget) => number, pick: (...xs: number[]) => number): number =>
    pick(...GATEWAY_TARGETS.map(f));
  const ratio = worse((t) => throughputRatio[t].median, Math.min);
  const addedMs = worse((t) => added.close[t].p50, Math.max);
  return [
    {
      figure: `egress gateway: ${r.largeMiB} MiB download over loopback, throughput median (worse of pinned, by name)`,
      value: ratio,
      unit: 'x',
      baseline:
        `the same download direct, median ${r.thr.direct.median.toFixed(0)} MB/s; gateway` +
        ` pinned ${r.thr.pinned.median.toFixed(0)}, by name ${r.thr.name.median.toFixed(0)} MB/s`,
      goal: `>= ${THROUGHPUT_MIN_RATIO.toFixed(2)}`,
      met: ratio >= THROUGHPUT_MIN_RATIO,
    },
    {
      figure: 'egress gateway: added latency per fresh connection, p50 (worse of pinned, by name)',
      value: addedMs,
      unit: 'ms',
      baseline:
        `the same request direct on a fresh loopback connection, p50 ${ms3(r.lat.close.direct.p50)} ms;` +
        ` gateway pinned ${signed3(added.close.pinned.p50)}, by name ${signed3(added.close.name.p50)} ms`,
      goal: `<= ${ADDED_P50_MAX_MS} ms`,
      met: addedMs <= ADDED_P50_MAX_MS,
    },
  ];
}

/** The bench's figures, for bench-all; throws when the gateway's events do not match. */
export async function rows(): Promise<readonly BenchRow[]> {
  const r = await measure(false);
  if (r.events.problems.length > 0)
    throw new Error(`egress: event check: ${r.events.problems.join('; ')}`);
  return rowsOf(r);
}

async function main(): Promise<number> {
  const r = await measure(true);
  report(r);
  console.log('');
  printRows('egress gateway (medians; direct run side by side)', rowsOf(r));
  return r.events.problems.length === 0 ? 0 : 1;
}

// Run as a script (bench/run.sh egress), not when bench-all imports rows().
if (process.argv[1] === fileURLToPath(import.meta.url)) runBench(main);
