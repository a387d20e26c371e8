// bench/mediator.ts: the mediator's own cost per decided call, with a profile of 50 policy
// rules, against the tool call it decides (measured in the same process).
//
//   policy      Policy.decide alone: the tiers, 50 profile rules (globs, classes, argument
//               paths and regexes), the contract, the defaults
//   decide      Mediator.decide: policy, the decision object, its `permission_decision`
//               event appended to a real events.jsonl (fsynced, as in a run) and the
//               governance record's validation (the zod schema with its invariants)
//   tool call   the baseline: a real read_file in a per-run tool container (one exec of
//               cfh's helper through the engine), as an agent run makes it
//
// p50 and p99 of each, and the mediator's share of a tool call. BENCH_DECISIONS (default
// 2000) decisions per series, BENCH_TOOL_CALLS (default 20) tool calls. Times are
// reported, never asserted. `bench/run.sh mediator` (also run by `make bench-tools`).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readEnvironment } from '../src/config/env.js';
import { PolicyRule } from '../src/config/policy-schema.js';
import { EventLog } from '../src/evidence/event-log.js';
import { GovernanceRecord } from '../src/evidence/governance-record.js';
import { planSandboxRun } from '../src/engine/run/run-plan.js';
import { Approvals } from '../src/mediator/approvals.js';
import { Mediator, type Ruling } from '../src/mediator/mediator.js';
import { Policy, type CheckedCall, type RunFacts } from '../src/mediator/policy.js';
import { compilePolicy } from '../src/mediator/policy-rule.js';
import { currentOwner } from '../src/sandbox/owner.js';
import { currentHostIdentity } from '../src/sandbox/sandbox-user.js';
import { DockerRuntime } from '../src/substrate/docker/adapter.js';
import { BUILTIN_TOOLS } from '../src/tools/builtins.js';
import { SandboxToolRunner } from '../src/tools/sandbox-runner.js';
import { toolExecutor } from '../src/tools/tool-executor.js';
import { checkLeftovers, dockerClient, intFromEnv, runBench, table } from './bench-util.js';
import { percentile } from './stats.js';

const FACTS: RunFacts = {
  mode: 'run',
  workspaceMode: 'direct',
  network: 'disabled',
  rwMounts: true,
  fromPlan: false,
};

/** 50 rules of the kinds operators write; none matches read_file, so every tier is walked. */
function fiftyRules(): PolicyRule[] {
  const rules: unknown[] = [];
  for (let i = 0; i < 50; i += 1) {
    const kind = i % 5;
    rules.push({
      id: `rule-${i}`,
      match:
        kind === 0
          ? { tool: `mcp__server${i}__*` }
          : kind === 1
            ? { tool: 'exec', args: { 'command.0': `/^(tool${i}|other${i})$/` } }
            : kind === 2
              ? { riskClass: 'communication', mode: 'run' }
              : kind === 3
                ? { tool: 'write_file', args: { path: `/^secrets\\/${i}\\//` } }
                : { sideEffectClass: 'external_commitment' },
      decision: i % 3 === 0 ? 'deny' : i % 3 === 1 ? 'approval_required' : 'allow',
      reason: `rule ${i}`,
    });
  }
  return rules.map((r) => PolicyRule.parse(r));
}

function stats(samples: number[]): { p50: number; p99: number } {
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const ms = (n: number): string => (n < 1 ? n.toFixed(3) : n.toFixed(2));

async function main(): Promise<number> {
  const decisions = intFromEnv('BENCH_DECISIONS', 2000, 10);
  const toolCalls = intFromEnv('BENCH_TOOL_CALLS', 20, 3);
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'cfh-bench-mediator-'));
  const runIds = new Set<string>();
  try {
    const readFile = BUILTIN_TOOLS.find((t) => t.name === 'read_file');
    if (readFile === undefined) throw new Error('no read_file');
    const call: CheckedCall = { kind: 'valid', tool: readFile, args: { path: 'calc.py' } };
    const policy = new Policy(compilePolicy(fiftyRules()), FACTS);

    const policySamples: number[] = [];
    for (let i = 0; i < decisions; i += 1) {
      const t = performance.now();
      policy.decide(call);
      policySamples.push(performance.now() - t);
    }

    const log = await EventLog.create(path.join(scratch, 'events.jsonl'), 'bench');
    const mediator = new Mediator({
      policy,
      approvals: new Approvals([]),
      recorder: {
        event: async (type, data, durable) => {
          await log.append(type, data, durable ?? false);
        },
      },
    });
    const decideSamples: number[] = [];
    for (let i = 0; i < decisions; i += 1) {
      const t = performance.now();
      const ruling: Ruling = await mediator.decide(
        { callId: `call-${String(i + 1).padStart(4, '0')}`, toolUseId: `tu${i}`, checked: call },
        new AbortController().signal,
      );
      GovernanceRecord.parse({
        schema: 'cfh.governance/1',
        call_id: ruling.decision.call_id,
        timestamp: ruling.decision.timestamp,
        mode: 'run',
        tool: {
          name: 'read_file',
          risk_class: 'read_only',
          side_effect_class: 'none',
          resource_scope: 'project',
          executor: 'sandbox',
        },
        decision: {
          value: ruling.decision.decision,
          policy_rule: ruling.decision.policy_rule,
          reason: ruling.decision.reason,
          decided_by: 'policy',
          approver: null,
          args_digest: ruling.decision.args_digest,
        },
        side_effect_committed: false,
        idempotency_key: null,
        observation_status: 'success',
        budget: {
          model_turns: 1,
          tool_calls: i,
          input_tokens: 0,
          output_tokens: 0,
          estimated_cost: null,
          elapsed_seconds: 0,
        },
      });
      decideSamples.push(performance.now() - t);
    }

    // The baseline: real read_file calls in a per-run tool container of a planned run.
    const ws = path.join(scratch, 'ws');
    mkdirSync(ws);
    writeFileSync(path.join(ws, 'calc.py'), 'def add(a, b):\n    return a + b\n');
    const env = readEnvironment();
    const plan = planSandboxRun(
      { workspace: ws, command: ['true'], artifactRoot: path.join(scratch, 'art') },
      env,
      currentHostIdentity(),
      currentOwner(),
    );
    runIds.add(plan.runId);
    const runtime = new DockerRuntime({ dockerHost: env.dockerHost });
    const events = {
      started: () => Promise.resolve(),
      removed: () => Promise.resolve(),
      removalFailed: () => undefined,
    };
    const toolSamples: number[] = [];
    {
      await using executor = toolExecutor(
        'per-run',
        runtime,
        { workload: plan.spec, 'file-tool': plan.spec },
        events,
      );
      const runner = new SandboxToolRunner(
        BUILTIN_TOOLS,
        executor,
        30_000,
        plan.spec.mounts.map((m) => m.target),
        () => Promise.resolve(),
      );
      for (let i = 0; i <= toolCalls; i += 1) {
        const ruling = await mediator
          .decide(
            { callId: `call-9${String(i).padStart(3, '0')}`, toolUseId: 'tu', checked: call },
            new AbortController().signal,
          )
          .catch(() => undefined);
        if (ruling?.kind !== 'authorized') throw new Error('read_file was not authorized');
        const t = performance.now();
        await runner.run(ruling.call, 32_000, new AbortController().signal);
        // The first call also starts the container: not a tool call's cost.
        if (i > 0) toolSamples.push(performance.now() - t);
      }
    }
    await log.close();
    const p = stats(policySamples);
    const d = stats(decideSamples);
    const tc = stats(toolSamples);
    console.log(
      `mediator cost per decided call, 50 profile rules (${decisions} decisions; ${toolCalls} tool calls)\n`,
    );
    table(
      ['series', 'p50 ms', 'p99 ms', 'p50 share of a tool call'],
      [
        [
          'policy (tiers, 50 rules)',
          ms(p.p50),
          ms(p.p99),
          `${((p.p50 / tc.p50) * 100).toFixed(2)} %`,
        ],
        [
          'decide (+ event, fsync; + record check)',
          ms(d.p50),
          ms(d.p99),
          `${((d.p50 / tc.p50) * 100).toFixed(2)} %`,
        ],
        ['tool call (read_file, per-run container)', ms(tc.p50), ms(tc.p99), '100 %'],
      ],
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const left = await checkLeftovers(dockerClient(readEnvironment()), {
    tag: 'mediator',
    names: new Set(),
    runIds,
  });
  return left === 0 ? 0 : 1;
}

runBench(main);
