// What delegation costs (docs/operators.md, "Child profiles (delegation)"): a child run
// against an agent run of the same profile, and 8 children side by side on this machine,
// all in one process (planSandboxRun + executeAgentRun, a scripted model).
//
// The profile P (`worker`): the built-in default (workspace ro, network disabled) with the
// one tool list_dir and small budgets; its script makes one `list_dir {"path":"."}` call,
// then answers. The parents' child `worker` is P itself (`extends: <P's file>`, nothing
// else but maxParallel), with the same script under `children.worker`.
//
// Each round runs, its order rotating so drift falls on every series alike:
//   agent run        P run alone: planSandboxRun + executeAgentRun, wall.
//   parent + child   a parent (maxParallelChildren 1) whose one turn makes one
//                    `delegate {profile: worker}` call, then answers. The child's cost
//                    is its child_finished `ms` in the parent's events.jsonl
//                    (child_started to child_finished inside the parent: its plan, its
//                    run, its evidence verified); also shown as the parent's wall less
//                    the next series'.
//   parent, no call  the same parent answering at once, no delegate call.
// then the side-by-side group, its order rotating too:
//   8 at once        a parent whose one turn makes 8 `delegate` calls (maxParallelToolCalls
//                    8, maxParallelChildren 8, the child's maxParallel 8); each child's
//                    child_finished outcome must be `returned`, a failure otherwise.
//   8, one at a time the same parent with maxParallelChildren 1.
//   8 agent runs     8 runs of P one after the other.
// Warm-up rounds are run and discarded. The figures are reported; the goals (a child at most
// 1.1x an agent run of its profile, no failure side by side) are checked in the rows, and
// the exit status is non-zero only when a run failed or an engine object was left behind
// (containers or networks labelled with one of the runs' ids, children's included).
//
// Run: bench/run.sh children (`make bench-children`; BENCH_ROUNDS, default 5; BENCH_WARMUP,
// default 1; BENCH_CHILDREN, default 8); a row source of bench-all (rows()).
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEnvironment, type CfhEnvironment } from '../src/config/env.js';
import { executeAgentRun, type AgentRunDeps } from '../src/engine/agent/agent-run.js';
import { planSandboxRun, type RunPlan } from '../src/engine/run/run-plan.js';
import { CancelRequest } from '../src/engine/run/terminal.js';
import { RUN_FILES } from '../src/evidence/run-directory.js';
import { createLogger } from '../src/log.js';
import { Script, ScriptedGateway } from '../src/model/scripted-gateway.js';
import { LABEL_RUN_ID, currentOwner } from '../src/sandbox/owner.js';
import { currentHostIdentity } from '../src/sandbox/sandbox-user.js';
import { DockerRuntime } from '../src/substrate/docker/adapter.js';
import {
  checkLeftovers,
  dockerClient,
  intFromEnv,
  printRows,
  runBench,
  table,
  type BenchRow,
} from './bench-util.js';
import { fmt, round1, round3, summarize, type Summary } from './stats.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHILD = 'worker';
const RATIO_GOAL = 1.1;

const ONE = ['agent run', 'parent + child', 'parent, no call'] as const;
type One = (typeof ONE)[number];
const WIDE = ['at once', 'one at a time', 'agent runs'] as const;
type Wide = (typeof WIDE)[number];

/** One line of events.jsonl. */
interface EventRecord {
  readonly type: string;
  readonly data: Record<string, unknown>;
}

interface Results {
  readonly rounds: number;
  readonly warmup: number;
  readonly width: number;
  readonly one: Record<One, Summary>;
  /** child_started to child_finished inside the parent (its `ms`). */
  readonly child: Summary;
  /** The parent's wall less the no-call parent's of the same round. */
  readonly childByWall: Summary;
  readonly wide: Record<Wide, Summary>;
  /** child_finished per child of the side-by-side parents, `ms`. */
  readonly wideChild: Summary;
  /** Children (in the side-by-side series) whose outcome was not `returned`, or missing. */
  readonly failures: number;
  readonly children: number;
  readonly leftovers: number;
}

const TURN = [
  { tool_calls: [{ name: 'list_dir', input: { path: '.' } }] },
  { text: 'listed the workspace' },
];

function yaml(lines: readonly string[]): string {
  return `${lines.join('\n')}\n`;
}

async function measure(): Promise<Results> {
  const rounds = intFromEnv('BENCH_ROUNDS', 5, 1);
  const warmup = intFromEnv('BENCH_WARMUP', 1, 0);
  const width = intFromEnv('BENCH_CHILDREN', 8, 2);
  // The sandbox user reads the workspace (ro): every directory on its way is 0755.
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cfh-bench-children-'));
  chmodSync(tmp, 0o755);
  const workspace = path.join(tmp, 'workspace');
  cpSync(path.join(ROOT, 'examples', 'sample-repo'), workspace, { recursive: true });
  const artifactRoot = path.join(tmp, 'runs');
  mkdirSync(artifactRoot, { mode: 0o755 });
  chmodSync(artifactRoot, 0o755);

  // P, and the parents whose child is P itself.
  const worker = path.join(tmp, 'worker.yaml');
  writeFileSync(
    worker,
    yaml([
      'extends: default',
      'name: bench-child-worker',
      'description: Lists the workspace once, then answers (bench/children.ts).',
      'tools: [list_dir]',
      'budgets: { maxModelTurns: 2, maxToolCalls: 2, maxInputTokens: 50000, maxOutputTokens: 5000 }',
    ]),
  );
  // Budgets: the parent's first turn, then for each child an equal share of what is left
  // (budgets.ts carve: left / maxParallelChildren, carved when the child may run) of at
  // least the child's 2 turns. P asks for little, so the agent run and the child are the
  // same small profile.
  const parentTurns = 4 * width + 8;
  const parent = (name: string, parallel: number): string => {
    const file = path.join(tmp, `${name}.yaml`);
    writeFileSync(
      file,
      yaml([
        'extends: default',
        `name: ${name}`,
        'description: Delegates to children of the worker profile (bench/children.ts).',
        'tools: [list_dir]',
        'budgets:',
        `  maxModelTurns: ${String(parentTurns)}`,
        `  maxToolCalls: ${String(parentTurns)}`,
        `  maxParallelToolCalls: ${String(width)}`,
        `  maxParallelChildren: ${String(parallel)}`,
        'children:',
        `  ${CHILD}:`,
        `    extends: ${worker}`,
        `    maxParallel: ${String(width)}`,
      ]),
    );
    return file;
  };
  const wideProfile = parent('bench-children-wide', width);
  const serialProfile = parent('bench-children-serial', 1);

  const delegate = { name: 'delegate', input: { profile: CHILD, task: 'List the workspace.' } };
  const children = { [CHILD]: { turns: TURN } };
  const scripts = {
    worker: Script.parse({ model: 'scripted', turns: TURN }),
    one: Script.parse({
      model: 'scripted',
      turns: [{ tool_calls: [delegate] }, { text: 'the child listed it' }],
      children,
    }),
    none: Script.parse({ model: 'scripted', turns: [{ text: 'nothing to delegate' }], children }),
    wide: Script.parse({
      model: 'scripted',
      turns: [
        { tool_calls: Array.from({ length: width }, () => delegate) },
        { text: 'the children listed it' },
      ],
      children,
    }),
  };

  const env: CfhEnvironment = { ...readEnvironment(), artifactRoot };
  const docker = dockerClient(env);
  const runtime = new DockerRuntime({ dockerHost: env.dockerHost });
  const owner = currentOwner();
  const host = currentHostIdentity();
  const runIds = new Set<string>();
  const controller = new AbortController();
  const onSigint = (): void => {
    controller.abort(new CancelRequest('SIGINT'));
  };
  process.once('SIGINT', onSigint);

  const plan = (profile: string): RunPlan => {
    const p = planSandboxRun(
      { profile, workspace, artifactRoot, command: ['sleep', 'infinity'] },
      env,
      host,
      owner,
    );
    runIds.add(p.runId);
    return p;
  };
  // The CLI's child planner (src/cli/commands/agent-run.ts agentRunDeps): the child's own
  // resolved profile, the parent's workspace, its evidence under the parent's directory.
  // (Both have the default CFC mode: the CLI's "at least the parent's" changes nothing.)
  const deps = (script: Script, source: string): AgentRunDeps => ({
    runtime,
    logger: createLogger('silent'),
    owner,
    gateway: new ScriptedGateway(script, source),
    hostProcessDir: env.hostProcessDir,
    writtenLabelsDir: env.writtenLabelsDir,
    draftRoot: env.draftRoot,
    childPlanner: (child, parentPlan, root) => {
      const p = planSandboxRun(
        {
          loaded: child.loaded,
          profile: child.loaded.profile.name,
          workspace: parentPlan.workspace,
          artifactRoot: root,
          command: ['sleep', 'infinity'],
        },
        env,
        host,
        owner,
      );
      runIds.add(p.runId);
      return p;
    },
  });

  /** One agent run: wall (plan included), and its child_finished records. */
  const run = async (
    profile: string,
    script: Script,
    what: string,
  ): Promise<{ wall: number; finished: EventRecord[]; refused: EventRecord[] }> => {
    const t0 = performance.now();
    const p = plan(profile);
    const outcome = await executeAgentRun(
      p,
      {
        slots: { prompt: what },
        mode: 'run',
        approvals: {
          user: 'bench',
          interactive: false,
          notInteractiveBecause: 'bench: nobody to ask',
          preApprovedRules: [],
          file: null,
          surfaces: [],
        },
      },
      deps(script, `bench/children.ts#${what}`),
      controller.signal,
    );
    const wall = performance.now() - t0;
    if (outcome.status !== 'completed')
      throw new Error(
        `${what}: run ${outcome.runId} ${outcome.status} (${outcome.terminalReason}): ${outcome.error?.message ?? ''}`,
      );
    const events = readFileSync(path.join(outcome.artifactDir, RUN_FILES.events), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as EventRecord);
    return {
      wall,
      finished: events.filter((e) => e.type === 'child_finished'),
      refused: events.filter((e) => e.type === 'child_refused'),
    };
  };
  const msOf = (e: EventRecord): number => Number(e.data.ms);

  const one: Record<One, number[]> = {
    'agent run': [],
    'parent + child': [],
    'parent, no call': [],
  };
  const child: number[] = [];
  const childByWall: number[] = [];
  const wide: Record<Wide, number[]> = { 'at once': [], 'one at a time': [], 'agent runs': [] };
  const wideChild: number[] = [];
  let failures = 0;
  let childCount = 0;
  let failure: unknown;
  let leftovers: number;
  try {
    for (let round = 0; round < warmup + rounds && !controller.signal.aborted; round++) {
      const counted = round >= warmup;
      const sample: Partial<Record<One | Wide, number>> = {};
      let childMs = Number.NaN;
      for (let i = 0; i < ONE.length; i++) {
        const series = ONE[(i + round) % ONE.length] as One;
        if (series === 'agent run') {
          const r = await run(worker, scripts.worker, 'agent run of P');
          sample[series] = r.wall;
        } else if (series === 'parent + child') {
          const r = await run(serialProfile, scripts.one, 'parent + 1 child');
          const f = r.finished[0];
          if (r.finished.length !== 1 || f?.data.outcome !== 'returned')
            throw new Error(`parent + 1 child: child_finished ${JSON.stringify(r.finished)}`);
          sample[series] = r.wall;
          childMs = msOf(f);
        } else {
          const r = await run(serialProfile, scripts.none, 'parent, no call');
          sample[series] = r.wall;
        }
      }
      for (let i = 0; i < WIDE.length; i++) {
        const series = WIDE[(i + round) % WIDE.length] as Wide;
        if (series === 'agent runs') {
          const t0 = performance.now();
          for (let k = 0; k < width; k++) await run(worker, scripts.worker, 'agent run of P');
          sample[series] = performance.now() - t0;
          continue;
        }
        const r = await run(
          series === 'at once' ? wideProfile : serialProfile,
          scripts.wide,
          `parent + ${String(width)} children, ${series}`,
        );
        sample[series] = r.wall;
        if (!counted) continue;
        const bad = r.finished.filter((e) => e.data.outcome !== 'returned');
        for (const e of bad)
          console.error(`  child ${String(e.data.childId)}: ${JSON.stringify(e.data)}`);
        for (const e of r.refused) console.error(`  child refused: ${JSON.stringify(e.data)}`);
        failures += bad.length + Math.max(0, width - r.finished.length);
        childCount += width;
        if (series === 'at once') wideChild.push(...r.finished.map(msOf));
      }
      if (counted) {
        for (const s of ONE) one[s].push(sample[s] ?? Number.NaN);
        for (const s of WIDE) wide[s].push(sample[s] ?? Number.NaN);
        child.push(childMs);
        childByWall.push((sample['parent + child'] ?? 0) - (sample['parent, no call'] ?? 0));
      }
      const ms = (s: One | Wide): string => (sample[s] ?? 0).toFixed(0);
      console.error(
        `  ${counted ? `round ${String(round - warmup + 1)}/${String(rounds)}` : 'warm-up'}:` +
          ` agent run ${ms('agent run')}, child ${childMs.toFixed(0)} (parent ${ms('parent + child')},` +
          ` no call ${ms('parent, no call')}); ${String(width)} children at once ${ms('at once')},` +
          ` one at a time ${ms('one at a time')}, ${String(width)} agent runs ${ms('agent runs')} ms`,
      );
    }
  } catch (error) {
    failure = error;
  } finally {
    process.off('SIGINT', onSigint);
    leftovers = await checkLeftovers(docker, { tag: 'none', names: new Set(), runIds });
    const ours = (await docker.listNetworks()).filter((n) =>
      runIds.has(n.Labels?.[LABEL_RUN_ID] ?? ''),
    );
    for (const n of ours)
      await docker
        .getNetwork(n.Id)
        .remove()
        .catch(() => undefined);
    if (ours.length > 0) console.log(`  ${String(ours.length)} network(s) left behind, removed`);
    leftovers += ours.length;
    rmSync(tmp, { recursive: true, force: true });
  }
  if (failure !== undefined)
    throw failure instanceof Error ? failure : new Error('bench failed', { cause: failure });
  if (controller.signal.aborted) throw new Error('interrupted');
  return {
    rounds,
    warmup,
    width,
    one: {
      'agent run': summarize(one['agent run']),
      'parent + child': summarize(one['parent + child']),
      'parent, no call': summarize(one['parent, no call']),
    },
    child: summarize(child),
    childByWall: summarize(childByWall),
    wide: {
      'at once': summarize(wide['at once']),
      'one at a time': summarize(wide['one at a time']),
      'agent runs': summarize(wide['agent runs']),
    },
    wideChild: summarize(wideChild),
    failures,
    children: childCount,
    leftovers,
  };
}

function rowsOf(r: Results): BenchRow[] {
  const agent = r.one['agent run'].p50;
  const ratio = r.child.p50 / agent;
  const n = String(r.width);
  const s = (ms: number): string => (ms / 1000).toFixed(2);
  const atOnce = r.wide['at once'].p50;
  return [
    {
      figure: 'child run (one list_dir), child_started to child_finished in the parent, p50',
      value: ratio,
      unit: 'x',
      baseline: `an agent run of the same profile (planSandboxRun + executeAgentRun), p50 ${agent.toFixed(0)} ms; child ${r.child.p50.toFixed(0)} ms (parent wall less a no-call parent's: ${r.childByWall.p50.toFixed(0)} ms)`,
      goal: `<= ${String(RATIO_GOAL)}`,
      met: ratio <= RATIO_GOAL,
    },
    {
      figure: `${n} children side by side (one list_dir each), failures`,
      value: r.failures,
      unit: 'count',
      baseline: `${String(r.children)} children over the side-by-side parents, child_finished outcome returned`,
      goal: '0',
      met: r.failures === 0,
    },
    {
      figure: `parent delegating ${n} children at once (2 cores), wall p50`,
      value: atOnce / r.wide['agent runs'].p50,
      unit: 'x',
      baseline: `${n} agent runs of the child's profile in sequence, p50 ${s(r.wide['agent runs'].p50)} s; at once ${s(atOnce)} s; the same parent with maxParallelChildren 1 ${s(r.wide['one at a time'].p50)} s (x${(atOnce / r.wide['one at a time'].p50).toFixed(2)})`,
      goal: 'reported (2 cores)',
      met: true,
    },
  ];
}

/** The bench's figures, for bench-all; throws when an engine object was left behind. */
export async function rows(): Promise<readonly BenchRow[]> {
  const r = await measure();
  if (r.leftovers > 0)
    throw new Error(`children: ${String(r.leftovers)} engine objects left behind`);
  return rowsOf(r);
}

async function main(): Promise<number> {
  const r = await measure();
  console.log('');
  console.log(
    `wall per run, ms (${String(r.rounds)} rounds after ${String(r.warmup)} warm-up; P: default + list_dir, one call then an answer)`,
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
  const n = String(r.width);
  table(
    ['series', 'n', 'p50', 'p90', 'mean', 'min', 'max'],
    [
      line('agent run of P', r.one['agent run']),
      line('parent + 1 child of P', r.one['parent + child']),
      line('  child (child_finished ms)', r.child),
      line('  child (wall less no call)', r.childByWall),
      line('parent, no delegate call', r.one['parent, no call']),
      line(`parent + ${n} children at once`, r.wide['at once']),
      line('  each child (child_finished ms)', r.wideChild),
      line(`parent + ${n} children, one at a time`, r.wide['one at a time']),
      line(`${n} agent runs of P in sequence`, r.wide['agent runs']),
    ],
  );
  const list = rowsOf(r);
  console.log('');
  printRows('child runs (medians; baselines run side by side)', list);
  const p50 = (x: Summary): number => round1(x.p50);
  console.log(
    JSON.stringify({
      bench: 'children',
      rounds: r.rounds,
      warmup: r.warmup,
      width: r.width,
      p50Ms: {
        agentRun: p50(r.one['agent run']),
        parentOneChild: p50(r.one['parent + child']),
        child: p50(r.child),
        childByWall: p50(r.childByWall),
        parentNoCall: p50(r.one['parent, no call']),
        atOnce: p50(r.wide['at once']),
        atOnceChild: p50(r.wideChild),
        oneAtATime: p50(r.wide['one at a time']),
        agentRuns: p50(r.wide['agent runs']),
      },
      childRatio: round3(r.child.p50 / r.one['agent run'].p50),
      failures: r.failures,
      rows: list,
      leftovers: r.leftovers,
    }),
  );
  return r.leftovers === 0 && r.failures === 0 ? 0 : 1;
}

// Run as a script (bench/run.sh children), not when bench-all imports rows().
if (process.argv[1] === fileURLToPath(import.meta.url)) runBench(main);
