// bench/session.ts: a long-lived cfh against a new cfh per request (issue 21, sessions).
//
//   session    `cfh serve --stdio` with a scripted model (--script): one session, turns that
//              each make one `exec {"command":["true"]}` call and answer. Turns 2..T are timed
//              by the client, from writing `turn/start` to reading `turn/completed`; the
//              model's time and the tool's time (tool_executed durationMs, the exec as
//              ToolContainer times it) are subtracted: what is left is the harness's overhead
//              per turn. The model is the scripted gateway, in cfh's process: its time is
//              its two complete() calls a turn, timed here in this process (microseconds).
//              The interval between the model_call_started and model_call_completed stamps
//              (1 ms resolution) is shown too but not subtracted: it also holds cfh writing
//              the model_call_started record. The tool_executed records say which
//              container each call ran in: every turn of a session must use the same one
//              (one tool_container_started per session).
//      baseline: a new `cfh sandbox run --prompt ... --script ...` per turn making the same
//              one call (whole process wall), run between the session's turns, alternating
//              which goes first; its own overhead beyond model and tool is read the same way
//              from its events.jsonl.
//   mcp        an SDK Client (StdioClientTransport) connected to `cfh mcp`, calling
//              `sandbox_exec {argv:["true"]}` N times (the first, which starts the workload
//              container, not counted), each round trip timed by the client.
//      baseline: dockerode exec of `true` (create, start, the stream's end, inspect) in a
//              container of the same image that the bench created and started itself,
//              interleaved call by call with the MCP calls.
//
// The profile is `default` plus the `exec` tool (the built-in default profile lists only
// read_file, list_dir and grep, so `cfh mcp --profile default` serves no sandbox_exec), with
// budgets that let a session make its turns; the workspace is an empty directory of the
// bench's scratch. Note that `true` prints nothing: a session turn whose call writes output
// files fails at present (call ids restart at call-0001 in every turn: EEXIST on
// outputs/call-0001.stdout).
//
// bin/cfh runs the bundle `npm run build` writes (dist/bundle/); the bench only reads it.
// Times are reported, never asserted; it throws when a run failed or a container of its runs
// (or its own, labelled cfh.bench) was left behind.
//
// `bench/run.sh session` (`make bench-sessions`); a row source of bench-all (rows()).
// BENCH_SESSION_ROUNDS (default 3): sessions, and MCP connections; BENCH_SESSION_TURNS
// (default 8) turns per session; BENCH_MCP_CALLS (default 12) timed calls per connection.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type Docker from 'dockerode';
import { readEnvironment } from '../src/config/env.js';
import type { ModelRequest } from '../src/model/gateway.js';
import { loadScript, ScriptedGateway } from '../src/model/scripted-gateway.js';
import {
  rawExec,
  BENCH_LABEL,
  checkLeftovers,
  dockerClient,
  intFromEnv,
  printRows,
  runBench,
  table,
  type BenchRow,
} from './bench-util.js';
import { fmt, median, summarize, type Summary } from './stats.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CFH = path.join(ROOT, 'bin', 'cfh');
const PROMPT = 'run true once';

/** One line of events.jsonl, or the record of an `event` notification. */
interface EventRecord {
  readonly seq: number;
  readonly ts: string;
  readonly type: string;
  readonly data: Record<string, unknown>;
}

interface RpcMessage {
  readonly id?: number | string | null;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly code: number; readonly message: string; readonly data?: unknown };
}

/** What the evidence of one turn (or one run) says: model and tool time, the containers. */
interface Split {
  readonly modelMs: number;
  readonly toolMs: number;
  readonly calls: number;
  readonly containers: readonly string[];
  readonly containerStarts: number;
}

function split(events: readonly EventRecord[]): Split {
  const started = new Map<string, number>();
  let modelMs = 0;
  let toolMs = 0;
  let calls = 0;
  let containerStarts = 0;
  const containers: string[] = [];
  for (const e of events) {
    if (e.type === 'model_call_started') started.set(String(e.data.attemptId), Date.parse(e.ts));
    else if (e.type === 'model_call_completed') {
      const t0 = started.get(String(e.data.attemptId));
      if (t0 !== undefined) modelMs += Date.parse(e.ts) - t0;
    } else if (e.type === 'tool_executed') {
      if (e.data.status !== 'success')
        throw new Error(`tool_executed ${String(e.data.callId)}: ${String(e.data.status)}`);
      calls += 1;
      toolMs += Number(e.data.durationMs);
      containers.push(String(e.data.containerId));
    } else if (e.type === 'tool_container_started') containerStarts += 1;
  }
  return { modelMs, toolMs, calls, containers, containerStarts };
}

function childEnv(art: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return { ...env, CFH_LOG_LEVEL: 'error', CFH_ARTIFACT_ROOT: art };
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once('exit', (code) => {
      resolve(code);
    });
  });
}

/** A client of `cfh serve --stdio`: JSON-RPC lines, notifications stamped when read. */
class Session {
  readonly child: ChildProcess;
  readonly notes: { readonly at: number; readonly m: RpcMessage }[] = [];
  stderr = '';
  readonly #waiting = new Map<number, { ok: (m: RpcMessage) => void; no: (e: Error) => void }>();
  readonly #listeners = new Set<() => void>();
  #id = 0;

  constructor(args: readonly string[], env: Record<string, string>) {
    this.child = spawn(CFH, ['serve', '--stdio', ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env,
      cwd: ROOT,
    });
    this.child.stderr?.on('data', (d: Buffer) => {
      this.stderr += d.toString('utf8');
    });
    this.child.once('exit', (code) => {
      for (const w of this.#waiting.values())
        w.no(new Error(`cfh serve exited (${String(code)}): ${this.stderr.trim()}`));
      this.#waiting.clear();
    });
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const at = performance.now();
      const m = JSON.parse(line) as RpcMessage;
      if (m.method === undefined && typeof m.id === 'number') {
        this.#waiting.get(m.id)?.ok(m);
        this.#waiting.delete(m.id);
      } else if (m.method === 'approval/request') {
        // Nothing here should ask: an approval request is a bench failure, denied.
        const p = m.params ?? {};
        this.#write({ id: m.id, result: { argsDigest: p.argsDigest, answer: 'deny' } });
        this.notes.push({ at, m });
      } else this.notes.push({ at, m });
      for (const l of this.#listeners) l();
    });
  }

  #write(message: Record<string, unknown>): void {
    this.child.stdin?.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  }

  async call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.#id += 1;
    const id = this.#id;
    const m = await new Promise<RpcMessage>((ok, no) => {
      this.#waiting.set(id, { ok, no });
      this.#write({ id, method, params });
    });
    if (m.error !== undefined) throw new Error(`${method}: ${JSON.stringify(m.error)}`);
    return m.result ?? {};
  }

  /** The first notification `method` matching from index `from` on, with when it came. */
  async note(
    method: string,
    matches: (p: Record<string, unknown>) => boolean,
    from: number,
  ): Promise<{ at: number; index: number; params: Record<string, unknown> }> {
    const deadline = performance.now() + 120_000;
    for (;;) {
      for (let i = from; i < this.notes.length; i += 1) {
        const n = this.notes[i];
        if (n?.m.method === method && matches(n.m.params ?? {}))
          return { at: n.at, index: i, params: n.m.params ?? {} };
      }
      if (performance.now() > deadline) throw new Error(`no ${method} in 120 s: ${this.stderr}`);
      if (this.child.exitCode !== null)
        throw new Error(`cfh serve exited waiting for ${method}: ${this.stderr.trim()}`);
      await new Promise<void>((resolve) => {
        const l = (): void => {
          this.#listeners.delete(l);
          resolve();
        };
        this.#listeners.add(l);
        setTimeout(l, 250);
      });
    }
  }

  /** One turn: client wall time, and the event records notified during it. */
  async turn(sessionId: string): Promise<{ wallMs: number; events: EventRecord[] }> {
    const from = this.notes.length;
    const t0 = performance.now();
    const { turnId } = await this.call('turn/start', { sessionId, prompt: PROMPT });
    const done = await this.note('turn/completed', (p) => p.turnId === turnId, from);
    const wallMs = done.at - t0;
    if (done.params.status !== 'answered' || done.params.toolCalls !== 1)
      throw new Error(`session turn ${String(turnId)}: ${JSON.stringify(done.params)}`);
    const events = this.notes
      .slice(from, done.index)
      .filter((n) => n.m.method === 'event')
      .map((n) => n.m.params?.record as EventRecord);
    return { wallMs, events };
  }
}

/** One `cfh sandbox run --prompt --script`: whole process wall, and its run's evidence. */
async function sandboxRun(
  args: readonly string[],
  env: Record<string, string>,
  art: string,
): Promise<{ wallMs: number; split: Split; runId: string }> {
  const before = new Set(await readdir(art).catch(() => []));
  let stderr = '';
  const t0 = performance.now();
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(CFH, ['sandbox', 'run', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env,
      cwd: ROOT,
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  const wallMs = performance.now() - t0;
  const runId = (await readdir(art)).find((d) => !before.has(d));
  if (code !== 0 || runId === undefined)
    throw new Error(`cfh sandbox run: exit ${String(code)}: ${stderr.trim()}`);
  const events = (await readFile(path.join(art, runId, 'events.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as EventRecord);
  const s = split(events);
  if (s.calls !== 1) throw new Error(`cfh sandbox run ${runId}: ${s.calls} calls, not 1`);
  return { wallMs, split: s, runId };
}

/** dockerode, no cfh code: exec create, start (hijacked), the stream's end, inspect. */
async function rawExecTrue(container: Docker.Container): Promise<void> {
  const { exitCode } = await rawExec(container, ['true'], undefined, '/');
  if (exitCode !== 0) throw new Error(`raw exec true: exit ${String(exitCode)}`);
}

/** The MCP call; throws unless the observation is a success. */
async function mcpExecTrue(client: Client): Promise<void> {
  const r = await client.callTool({ name: 'sandbox_exec', arguments: { argv: ['true'] } });
  const obs = r.structuredContent as { status?: string; summary?: string } | undefined;
  if (r.isError === true || obs?.status !== 'success')
    throw new Error(`sandbox_exec true: ${JSON.stringify(obs)}`);
}

/** The scripted model's own time for one turn (two answers), in process, p50 of many. */
async function scriptedTurnMs(file: string): Promise<number> {
  const script = loadScript(file);
  const signal = new AbortController().signal;
  const request: ModelRequest = { system: '', messages: [], tools: [], maxOutputTokens: 8192 };
  const samples: number[] = [];
  for (let i = 0; i < 500; i += 1) {
    const gateway = new ScriptedGateway(script, file);
    const t0 = performance.now();
    await gateway.complete(request, signal);
    await gateway.complete(request, signal);
    samples.push(performance.now() - t0);
  }
  return median(samples);
}

async function timed(f: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

/** The report of an MCP run once its process wrote it (the SDK's close waits up to 2 s). */
async function reportOf(runDir: string): Promise<{ status: string; terminalReason: string }> {
  for (let i = 0; ; i += 1) {
    try {
      return JSON.parse(await readFile(path.join(runDir, 'report.json'), 'utf8')) as {
        status: string;
        terminalReason: string;
      };
    } catch (error) {
      if (i > 100) throw error;
      await sleep(100);
    }
  }
}

interface Results {
  readonly rounds: number;
  readonly turns: number;
  readonly mcpCalls: number;
  readonly turnWall: Summary;
  readonly turnOverhead: Summary;
  /** The scripted model's two answers a turn, in process (what is subtracted). */
  readonly modelMs: number;
  /** From the event stamps (shown, not subtracted). */
  readonly turnModelStamped: Summary;
  readonly turnOverheadStamped: Summary;
  readonly turnTool: Summary;
  readonly runWall: Summary;
  readonly runOverhead: Summary;
  readonly runTool: Summary;
  /** Sessions whose turns all ran in one container started once, of all sessions. */
  readonly oneContainer: number;
  readonly sessions: number;
  readonly mcp: Summary;
  readonly raw: Summary;
  readonly mcpFirst: Summary;
  readonly image: string;
  readonly leftovers: number;
}

async function measure(): Promise<Results> {
  const rounds = intFromEnv('BENCH_SESSION_ROUNDS', 3, 1);
  const turns = intFromEnv('BENCH_SESSION_TURNS', 8, 2);
  const mcpCalls = intFromEnv('BENCH_MCP_CALLS', 12, 1);
  const tag = `session-${process.pid}-${Date.now().toString(36)}`;
  const rawName = `cfh-bench-${tag}`;
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'cfh-bench-session-'));
  const art = path.join(scratch, 'runs');
  const ws = path.join(scratch, 'workspace');
  await mkdir(art);
  await mkdir(ws);
  const profile = path.join(scratch, 'profile.yaml');
  await writeFile(
    profile,
    [
      'extends: default',
      'name: bench-session',
      'description: default, with exec, for bench/session.ts',
      'tools: [read_file, list_dir, grep, exec]',
      'budgets:',
      `  maxModelTurns: ${2 * turns + 2}`,
      `  maxToolCalls: ${Math.max(turns, mcpCalls + 1) + 2}`,
      '',
    ].join('\n'),
  );
  const turnYaml = [
    '  - tool_calls: [{ name: exec, input: { command: ["true"] } }]',
    '  - text: done',
  ];
  const sessionScript = path.join(scratch, 'session.yaml');
  await writeFile(
    sessionScript,
    ['model: scripted', 'turns:', ...Array.from({ length: turns }, () => turnYaml).flat(), ''].join(
      '\n',
    ),
  );
  const runScript = path.join(scratch, 'run.yaml');
  await writeFile(runScript, ['model: scripted', 'turns:', ...turnYaml, ''].join('\n'));
  const env = childEnv(art);
  const common = ['--profile', profile, '--workspace', ws, '--artifact-root', art];
  const runArgs = [...common, '--prompt', PROMPT, '--script', runScript];
  const docker = dockerClient(readEnvironment());
  const modelMs = await scriptedTurnMs(runScript);

  const turnWall: number[] = [];
  const turnOverhead: number[] = [];
  const turnModelStamped: number[] = [];
  const turnOverheadStamped: number[] = [];
  const turnTool: number[] = [];
  const runWall: number[] = [];
  const runOverhead: number[] = [];
  const runTool: number[] = [];
  const mcp: number[] = [];
  const raw: number[] = [];
  const mcpFirst: number[] = [];
  let oneContainer = 0;
  let image = '';
  const children: ChildProcess[] = [];
  const transports: StdioClientTransport[] = [];
  let rawContainer: Docker.Container | undefined;
  let leftovers: number;

  try {
    // Warms the page cache and the compile cache for every series; not counted.
    await sandboxRun(runArgs, env, art);

    // Sessions: turn k of the session, then one new process making the same call (the
    // order alternating), so both see the same load.
    for (let round = 0; round < rounds; round += 1) {
      const s = new Session([...common, '--script', sessionScript], env);
      children.push(s.child);
      const open = await s.call('session/open', {});
      const sessionId = String(open.sessionId);
      const seen = new Set<string>();
      let starts = 0;
      for (let k = 1; k <= turns; k += 1) {
        const baselineFirst = (round + k) % 2 === 0;
        if (k > 1 && baselineFirst) {
          const r = await sandboxRun(runArgs, env, art);
          runWall.push(r.wallMs);
          runTool.push(r.split.toolMs);
          runOverhead.push(r.wallMs - modelMs - r.split.toolMs);
        }
        const t = await s.turn(sessionId);
        const x = split(t.events);
        if (x.calls !== 1) throw new Error(`session turn ${k}: ${x.calls} tool calls, not 1`);
        for (const c of x.containers) seen.add(c);
        starts += x.containerStarts;
        if (k > 1) {
          turnWall.push(t.wallMs);
          turnModelStamped.push(x.modelMs);
          turnTool.push(x.toolMs);
          turnOverhead.push(t.wallMs - modelMs - x.toolMs);
          turnOverheadStamped.push(t.wallMs - x.modelMs - x.toolMs);
        }
        if (k > 1 && !baselineFirst) {
          const r = await sandboxRun(runArgs, env, art);
          runWall.push(r.wallMs);
          runTool.push(r.split.toolMs);
          runOverhead.push(r.wallMs - modelMs - r.split.toolMs);
        }
      }
      if (seen.size === 1 && starts === 1) oneContainer += 1;
      else
        console.error(
          `  session ${sessionId}: ${seen.size} containers, ${starts} started, over ${turns} turns`,
        );
      const closed = await s.call('session/close', { sessionId });
      s.child.stdin?.end();
      const code = await exited(s.child);
      if (closed.status !== 'completed' || code !== 0)
        throw new Error(`session ${sessionId}: ${JSON.stringify(closed)}, exit ${String(code)}`);
      console.error(
        `  session round ${round + 1}/${rounds}: turn p50 ${fmt(summarize(turnWall).p50)} ms` +
          ` (overhead ${fmt(summarize(turnOverhead).p50)}), new process p50 ${fmt(summarize(runWall).p50)} ms`,
      );
    }

    // MCP: one connection per round, its calls interleaved with raw execs.
    for (let round = 0; round < rounds; round += 1) {
      const before = new Set(await readdir(art));
      const transport = new StdioClientTransport({
        command: CFH,
        args: ['mcp', ...common],
        env,
        cwd: ROOT,
        stderr: 'pipe',
      });
      transports.push(transport);
      let stderr = '';
      transport.stderr?.on('data', (d: Buffer) => {
        stderr += d.toString('utf8');
      });
      const client = new Client({ name: 'cfh-bench-session', version: '0' });
      await client.connect(transport);
      // The first call starts the run's workload container: reported apart.
      mcpFirst.push(await timed(() => mcpExecTrue(client)));
      const runId = (await readdir(art)).find((d) => !before.has(d));
      if (runId === undefined) throw new Error(`cfh mcp: no run directory: ${stderr}`);
      if (rawContainer === undefined) {
        const snapshot = JSON.parse(
          await readFile(path.join(art, runId, 'snapshot.json'), 'utf8'),
        ) as { image: { ref: string; id: string } };
        image = snapshot.image.ref;
        rawContainer = await docker.createContainer({
          name: rawName,
          Image: snapshot.image.id,
          Cmd: ['sleep', 'infinity'],
          Labels: { [BENCH_LABEL]: tag },
          NetworkDisabled: true,
          HostConfig: { NetworkMode: 'none', CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] },
        });
        await rawContainer.start();
        await rawExecTrue(rawContainer); // not counted, as the first MCP call
      }
      const direct = rawContainer;
      for (let i = 0; i < mcpCalls; i += 1) {
        if ((i + round) % 2 === 0) {
          mcp.push(await timed(() => mcpExecTrue(client)));
          raw.push(await timed(() => rawExecTrue(direct)));
        } else {
          raw.push(await timed(() => rawExecTrue(direct)));
          mcp.push(await timed(() => mcpExecTrue(client)));
        }
      }
      await client.close();
      const report = await reportOf(path.join(art, runId));
      if (report.status !== 'completed')
        throw new Error(`cfh mcp run ${runId}: ${report.status} (${report.terminalReason})`);
      console.error(
        `  mcp round ${round + 1}/${rounds}: sandbox_exec p50 ${fmt(summarize(mcp).p50)} ms,` +
          ` raw exec p50 ${fmt(summarize(raw).p50)} ms`,
      );
    }
  } finally {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGTERM');
        await exited(c);
      }
    }
    for (const t of transports) await t.close().catch(() => undefined);
    if (rawContainer !== undefined)
      await rawContainer.remove({ force: true, v: true }).catch((e: unknown) => {
        console.error(`  could not remove ${rawName}: ${String(e)}`);
      });
    const runIds = new Set(await readdir(art).catch(() => []));
    leftovers = await checkLeftovers(docker, { tag, names: new Set([rawName]), runIds });
    await rm(scratch, { recursive: true, force: true });
  }
  if (leftovers > 0) throw new Error(`session: ${String(leftovers)} containers left behind`);
  return {
    rounds,
    turns,
    mcpCalls,
    turnWall: summarize(turnWall),
    turnOverhead: summarize(turnOverhead),
    modelMs,
    turnModelStamped: summarize(turnModelStamped),
    turnOverheadStamped: summarize(turnOverheadStamped),
    turnTool: summarize(turnTool),
    runWall: summarize(runWall),
    runOverhead: summarize(runOverhead),
    runTool: summarize(runTool),
    oneContainer,
    sessions: rounds,
    mcp: summarize(mcp),
    raw: summarize(raw),
    mcpFirst: summarize(mcpFirst),
    image,
    leftovers,
  };
}

function rowsOf(r: Results): BenchRow[] {
  const ov = r.turnOverhead.p50;
  const same = r.oneContainer === r.sessions;
  const containers = same
    ? `one workload container per session, all ${r.turns} turns`
    : `${r.sessions - r.oneContainer} of ${r.sessions} sessions changed container`;
  const ratio = r.mcp.p50 / r.raw.p50;
  return [
    {
      figure: 'session turn 2+ (one exec true): harness overhead p50 beyond model and tool',
      value: ov,
      unit: 'ms',
      baseline:
        `a new cfh sandbox run --prompt --script per turn: its overhead beyond model and tool` +
        ` p50 ${r.runOverhead.p50.toFixed(0)} ms (x${(ov / r.runOverhead.p50).toFixed(3)}); tool p50` +
        ` ${r.turnTool.p50.toFixed(0)} ms, model (scripted) ${(r.modelMs * 1000).toFixed(0)} µs; ${containers}`,
      goal: '<= 10 ms, same container',
      met: ov <= 10 && same,
    },
    {
      figure: 'session turn 2+ (one exec true): wall p50',
      value: r.turnWall.p50 / r.runWall.p50,
      unit: 'x',
      baseline: `a new cfh sandbox run --prompt --script per turn, wall p50 ${r.runWall.p50.toFixed(0)} ms; session turn ${r.turnWall.p50.toFixed(0)} ms`,
      goal: 'reported',
      met: true,
    },
    {
      figure: 'cfh mcp sandbox_exec {argv:[true]}: round trip p50',
      value: ratio,
      unit: 'x',
      baseline: `dockerode exec of true in a running container of the same image, p50 ${r.raw.p50.toFixed(1)} ms; cfh mcp ${r.mcp.p50.toFixed(1)} ms`,
      goal: '<= 1.2',
      met: ratio <= 1.2,
    },
  ];
}

/** The bench's figures, for bench-all. */
export async function rows(): Promise<readonly BenchRow[]> {
  return rowsOf(await measure());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runBench(async () => {
    const r = await measure();
    console.log('');
    console.log(
      `ms per turn or call (${r.rounds} sessions of ${r.turns} turns, turns 2..${r.turns};` +
        ` ${r.rounds} MCP connections of ${r.mcpCalls} calls after the first; image ${r.image};` +
        ` the scripted model's two answers a turn take ${(r.modelMs * 1000).toFixed(1)} µs in process)`,
    );
    const line = (name: string, x: Summary): string[] => [
      name,
      String(x.n),
      fmt(x.p50),
      fmt(x.p90),
      fmt(x.mean),
      fmt(x.min),
      fmt(x.max),
    ];
    table(
      ['series', 'n', 'p50', 'p90', 'mean', 'min', 'max'],
      [
        line('session turn, wall', r.turnWall),
        line('  tool (tool_executed)', r.turnTool),
        line('  harness overhead', r.turnOverhead),
        line('  model (event stamps)', r.turnModelStamped),
        line('  overhead less stamps', r.turnOverheadStamped),
        line('new sandbox run, wall', r.runWall),
        line('  tool (tool_executed)', r.runTool),
        line('  overhead', r.runOverhead),
        line('mcp sandbox_exec', r.mcp),
        line('  first call', r.mcpFirst),
        line('dockerode exec true', r.raw),
      ],
    );
    console.log('');
    printRows('sessions and MCP (medians; baselines run side by side)', rowsOf(r));
    return 0;
  });
}
