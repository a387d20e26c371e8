// bench/cfc.ts: the CFC figures of issue 18 (`make bench-cfc`).
//
//   suite       the injection suite's full matrix (test/integration/injection, run by
//               `make bench-cfc` before this with CFC_SUITE=full, which writes
//               .cache/cfc-suite.json): attack success per mode, observe's would_deny
//               coverage of the attacks that succeeded there, benign completion per mode.
//               The attacks are judged by the suite's own oracle (the sinks), never by cfh.
//   label work  the flow gate and labelling cost per tool call, in process: resolving the
//               call's handles, the flow decision (judgeFlow through the run's gate), the
//               observation's label and its disposition (exposed or a minted handle) and
//               the context join, on three realistic calls (exec passing a handle, a
//               read_file of a secrets mount, a write_file into the workspace), against the
//               same call path with CFC disabled (none of it runs: deps.cfc is undefined).
//               p50/p99 added, in ms (goal: <= 0.2 ms p50).
//
// BENCH_CFC_CALLS (default 20000) calls per series. Times are reported, never asserted.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { planCfc } from '../src/cfc/label-map.js';
import { label } from '../src/cfc/label.js';
import { CfcRuntime } from '../src/cfc/runtime.js';
import { loadProfile } from '../src/config/profile-loader.js';
import { captureOfPrompt } from '../src/engine/cfc/cfc-plan.js';
import { dispose, observationLabel } from '../src/engine/cfc/cfc-observations.js';
import { flowGateOf } from '../src/mediator/flow-gate.js';
import { BUILTIN_TOOLS } from '../src/tools/builtins.js';
import type { Observation } from '../src/tools/observation.js';
import { intFromEnv, runBench, table } from './bench-util.js';
import { percentile } from './stats.js';

interface Outcome {
  id: string;
  kind: 'attack' | 'benign';
  mode: string;
  succeeded: boolean;
  completed: boolean;
  verdicts: Record<string, number>;
}

const MODES = ['disabled', 'observe', 'enforce-explicit', 'enforce-strict'];

function suiteTable(file: string): void {
  if (!existsSync(file)) {
    console.log(
      `suite: ${file} is missing (run CFC_SUITE=full vitest on test/integration/injection first)`,
    );
    return;
  }
  const raw: unknown = JSON.parse(readFileSync(file, 'utf8'));
  const all = Array.isArray(raw) ? (raw as Outcome[]) : [];
  const rows = MODES.map((mode) => {
    const attacks = all.filter((o) => o.kind === 'attack' && o.mode === mode);
    const won = attacks.filter((o) => o.succeeded);
    const recorded = won.filter((o) => (o.verdicts.would_deny ?? 0) + (o.verdicts.deny ?? 0) > 0);
    const benign = all.filter((o) => o.kind === 'benign' && o.mode === mode);
    const done = benign.filter((o) => o.completed);
    return [
      mode,
      `${won.length}/${attacks.length}`,
      mode === 'observe' ? `${recorded.length}/${won.length}` : '-',
      `${done.length}/${benign.length}`,
      benign.length === 0 ? '-' : `${Math.round((100 * done.length) / benign.length)}%`,
    ];
  });
  console.log('injection suite (oracle: the sinks the test owns)');
  table(['mode', 'attacks succeeded', 'observe would_deny', 'benign completed', 'benign %'], rows);
  const failed = all.filter(
    (o) =>
      (o.kind === 'attack' && o.succeeded && o.mode.startsWith('enforce')) ||
      (o.kind === 'benign' && !o.completed),
  );
  for (const o of failed)
    console.log(
      `  ${o.kind} ${o.id} under ${o.mode}: ${o.kind === 'attack' ? 'SUCCEEDED' : 'not completed'}`,
    );
}

function tool(name: string) {
  const t = BUILTIN_TOOLS.find((x) => x.name === name);
  if (t === undefined) throw new Error(`no built-in ${name}`);
  return t;
}

async function labelWork(calls: number): Promise<void> {
  const { profile } = loadProfile('untrusted-repo');
  const p = {
    ...profile,
    workspace: {
      ...profile.workspace,
      label: { confidentiality: [], integrity: ['repo:untrusted'] },
    },
    mounts: [
      {
        source: '/tmp',
        target: '/secrets',
        mode: 'ro' as const,
        label: { confidentiality: ['secret'], integrity: [] },
      },
    ],
    network: { ...profile.network, mode: 'allowlist' as const, allow: ['api.example.test:443'] },
  };
  const secretText = 'SECRET-0123456789abcdef01234567\n';
  const ok = (items: string[]): Observation => ({
    status: 'success',
    summary: 'ok',
    items,
    evidence_refs: ['call-0001/stdout'],
    next_valid_actions: [],
  });
  const series = async (mode: 'enforce-explicit' | 'disabled'): Promise<number[]> => {
    const plan = planCfc(p, { workspaceTarget: '/workspace', mode });
    // Held values are kept in memory here: the bench measures the label work, not a write.
    const runtime = new CfcRuntime(
      plan,
      '/workspace',
      { capture: captureOfPrompt('task'), context: 0, quoted: 0, fromPlan: false },
      { runId: 'bench', keep: () => Promise.resolve(), carried: [] },
    );
    const gate = flowGateOf(runtime);
    const { handle } = await runtime.handles.mint(
      'call-0000',
      secretText,
      label({ confidentiality: ['secret'] }),
      true,
    );
    const shapes = [
      {
        t: tool('exec'),
        args: { command: ['sh', '-c', `printf %s '${handle}' | sha256sum`] },
        obs: ok(['abc -']),
      },
      { t: tool('read_file'), args: { path: '/secrets/token.txt' }, obs: ok([secretText]) },
      {
        t: tool('write_file'),
        args: { path: 'notes.md', content: 'hello '.repeat(200) },
        obs: ok(['wrote']),
      },
    ];
    const out: number[] = [];
    for (let i = 0; i < calls; i += 1) {
      const s = shapes[i % shapes.length] as (typeof shapes)[number];
      const t0 = performance.now();
      // Disabled: deps.cfc is undefined and the call path does none of this.
      if (gate !== undefined) {
        const r = runtime.handles.resolve(s.args);
        const args = r.kind === 'resolved' ? r.value : s.args;
        const explicit = r.kind === 'resolved' ? r.used.map((u) => u.label) : [];
        const influence = runtime.context();
        gate.judge(s.t, args, influence, explicit);
        const labelled = observationLabel(s.t, args, {
          plan,
          workspaceTarget: '/workspace',
          influence,
          container: runtime.containerLabel(),
        });
        const d = await dispose(runtime, `call-${String(i + 1).padStart(4, '0')}`, s.obs, labelled);
        if (d.expose !== undefined) runtime.expose(d.expose);
      }
      out.push(performance.now() - t0);
    }
    return out;
  };
  // Warm both paths first (JIT), then measure.
  await series('enforce-explicit');
  await series('disabled');
  const on = await series('enforce-explicit');
  const off = await series('disabled');
  const ms = (x: number): string => x.toFixed(4);
  console.log(
    `label work per tool call (${calls} calls: exec with a handle, read_file /secrets, write_file)`,
  );
  table(
    ['path', 'p50 ms', 'p99 ms'],
    [
      ['CFC enforce-explicit', ms(percentile(on, 50)), ms(percentile(on, 99))],
      ['CFC disabled', ms(percentile(off, 50)), ms(percentile(off, 99))],
      [
        'added',
        ms(percentile(on, 50) - percentile(off, 50)),
        ms(percentile(on, 99) - percentile(off, 99)),
      ],
    ],
  );
  console.log(
    `goal: added p50 <= 0.2 ms (${percentile(on, 50) - percentile(off, 50) <= 0.2 ? 'met' : 'NOT met'})`,
  );
}

runBench(async () => {
  suiteTable(path.join(process.cwd(), '.cache', 'cfc-suite.json'));
  await labelWork(intFromEnv('BENCH_CFC_CALLS', 20_000, 100));
  return 0;
});
