// A large agent run made through the real writer classes (RunDirectory, EventLog, outputs,
// transcript, finish) without containers: N tool calls in turns of four, their outputs, a
// model attempt per turn, and egress attempts until the log holds the asked number of
// events. What the audit and the report are measured on (bench/audit.ts).
import { createHash } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { RunDirectory, RUN_FILES } from '../src/evidence/run-directory.js';
import { argsDigest } from '../src/mediator/mediator.js';
import { newRunId } from '../src/evidence/run-id.js';

export interface SyntheticRun {
  readonly dir: string;
  readonly runId: string;
  readonly events: number;
}

const digest = (t: string): string => `sha256:${createHash('sha256').update(t).digest('hex')}`;

function snapshot(runId: string, workspace: string, seccompSha: string): Record<string, unknown> {
  const tools = ['read_file', 'list_dir', 'grep', 'exec', 'write_file', 'edit_file'];
  return {
    schema: 'cfh.snapshot/1',
    cfhVersion: 'bench',
    runId,
    createdAt: new Date().toISOString(),
    kind: 'agent',
    caller: { host: 'bench', pid: process.pid, start: 'bench/0', uid: 0, gid: 0, user: 'bench' },
    model: {
      adapter: 'scripted',
      route: { provider: 'scripted', credential: 'none' },
      languageModel: false,
    },
    profile: {
      name: 'bench',
      sources: ['builtin:default'],
      digest: '0'.repeat(64),
      overrides: {},
      // The profile rule every call is allowed by (policy.rederived decides each again).
      resolved: { name: 'bench', tools, policy: [BENCH_RULE] },
    },
    image: { ref: 'cfh-sandbox:bench', id: 'sha256:bench' },
    engine: { serverVersion: 'bench', apiVersion: '1.41' },
    runtime: { requested: 'runc', engineRuntime: 'runc' },
    sandboxUser: { user: '4321:4321', reason: 'workspace-owner' },
    workspace: { hostPath: workspace, target: '/workspace', mode: 'rw' },
    workingDir: '/workspace',
    command: null,
    network: {
      mode: 'allowlist',
      allow: ['api.bench.test:443'],
      deny: [],
      enforcement: { kind: 'egress-gateway' },
    },
    limits: { memoryBytes: 536870912, wallTimeMs: 300000 },
    containerSpec: {
      name: `cfh-${runId}`,
      image: 'cfh-sandbox:bench',
      user: '4321:4321',
      workingDir: '/workspace',
      mounts: [{ source: workspace, target: '/workspace', mode: 'rw' }],
      readOnlyRootfs: true,
      capDrop: ['ALL'],
      capAdd: [],
      noNewPrivileges: true,
      init: true,
      privileged: false,
      networkMode: { join: `cfh-guard-${runId}` },
      limits: { memoryBytes: 536870912 },
      envNames: ['HOME', 'LANG', 'PATH'],
      seccomp: { sha256: seccompSha, enforcement: 'kernel-seccomp' },
    },
    mountChecks: { method: 'gate' },
    seccomp: {
      file: 'seccomp.json',
      sha256: seccompSha,
      source: 'bench',
      enforcement: 'kernel-seccomp',
    },
    assurance: { level: 'standard', notes: [] },
    tools,
    childProfiles: [],
    promptSlots: { directCommand: { chars: 5, digest: digest('bench') }, context: [], quoted: [] },
    budgets: {
      maxModelTurns: 1000,
      maxToolCalls: 5000,
      maxParallelToolCalls: 4,
      maxWallTimeSeconds: 900,
      maxInputTokens: 1e9,
      maxOutputTokens: 1e9,
      maxToolResultChars: 20000,
      maxRetriesPerModelCall: 2,
      maxRetriesPerToolCall: 1,
    },
    toolContainer: {
      lifetime: 'per-run',
      name: `cfh-tools-${runId}`,
      fileToolName: `cfh-files-${runId}`,
      timeoutCapSeconds: null,
    },
    mediation: {
      facts: {
        mode: 'run',
        workspaceMode: 'direct',
        network: 'allowlist',
        rwMounts: true,
        mountChannel: null,
        fromPlan: false,
      },
      tools: [
        {
          name: 'exec',
          executor: 'sandbox',
          riskClass: 'process_execution',
          sideEffectClass: 'process_or_network_execution',
          resourceScope: 'session',
          permissionPolicy: 'sandbox',
          cfc: null,
        },
      ],
      unnamedMcpLabels: {},
    },
  };
}

const BENCH_RULE = {
  id: 'profile:bench',
  match: { tool: 'exec' },
  decision: 'allow',
  reason: 'bench',
};
const EXEC_ARGS = { command: ['true'] };

export async function writeSyntheticRun(
  root: string,
  workspace: string,
  calls: number,
  events: number,
): Promise<SyntheticRun> {
  const runId = newRunId();
  const dir = await RunDirectory.create(root, runId);
  const seccomp = '{"defaultAction":"SCMP_ACT_ERRNO"}\n';
  const seccompSha = await dir.writeFile(RUN_FILES.seccomp, seccomp);
  await dir.writeSnapshot(snapshot(runId, workspace, seccompSha));
  await dir.events.append(
    'run_created',
    { kind: 'agent', profile: 'bench', imageId: 'sha256:bench' },
    true,
  );
  await dir.events.append('egress_ready', {
    mode: 'allowlist',
    networkId: 'n',
    network: `cfh-net-${runId}`,
    subnet: '10.0.0.0/24',
    guardId: 'guard',
    gateway: {
      kind: 'in-process',
      pid: process.pid,
      address: '10.0.0.1',
      dnsPort: 53,
      interceptPorts: { '443': 40000 },
      pinned: [],
    },
  });
  const transcript = dir.path(RUN_FILES.transcript);
  const line = async (m: unknown): Promise<void> =>
    appendFile(transcript, `${JSON.stringify(m)}\n`);
  await line({
    role: 'user',
    content: [{ type: 'text', text: '<direct-command>\nbench\n</direct-command>' }],
  });
  const container = {
    containerId: 'c'.repeat(64),
    name: `cfh-tools-${runId}`,
    kind: 'workload' as const,
    lifetime: 'per-run' as const,
  };
  await dir.events.append('tool_container_started', container, true);
  const usage: {
    attemptId: string;
    adapter: string;
    model: string;
    usage: { input_tokens: number; output_tokens: number };
  }[] = [];
  const turns = Math.ceil(calls / 4);
  let n = 0;
  for (let t = 1; t <= turns + 1; t += 1) {
    const attemptId = `turn-${t}`;
    await dir.events.append('model_call_started', { attemptId, adapter: 'scripted' });
    const u = { input_tokens: 100 * t, output_tokens: 10 };
    const batch = t <= turns ? Math.min(4, calls - n) : 0;
    await dir.events.append('model_call_completed', {
      attemptId,
      adapter: 'scripted',
      model: 'bench',
      stopReason: batch > 0 ? 'tool_use' : 'end_turn',
      usage: u,
      costEstimate: { attemptId, omitted: 'unsupported_pricing' },
    });
    usage.push({ attemptId, adapter: 'scripted', model: 'bench', usage: u });
    if (batch === 0) {
      await line({ role: 'assistant', content: [{ type: 'text', text: 'done' }] });
      await dir.events.append('final_answer_produced', { chars: 4 }, true);
      break;
    }
    const uses = Array.from({ length: batch }, (_, i) => ({
      id: `toolu_${t}_${i}`,
      callId: `call-${String(n + i + 1).padStart(4, '0')}`,
    }));
    await line({
      role: 'assistant',
      content: uses.map((u2) => ({
        type: 'tool_use',
        id: u2.id,
        name: 'exec',
        input: EXEC_ARGS,
      })),
    });
    const results = [];
    for (const u2 of uses) {
      const ref = { callId: u2.callId, toolUseId: u2.id, tool: 'exec' };
      await dir.events.append('tool_requested', { ...ref, input: '{"command":["true"]}' });
      await dir.events.append(
        'permission_decision',
        {
          call_id: u2.callId,
          tool_name: 'exec',
          risk_class: 'process_execution',
          side_effect_class: 'process_or_network_execution',
          resource_scope: 'session',
          decision: 'allow',
          policy_rule: 'profile:bench',
          reason: 'bench',
          approver: null,
          args_digest: argsDigest('exec', EXEC_ARGS),
          timestamp: new Date().toISOString(),
        },
        true,
      );
      const out = await dir.writeOutput(
        `${u2.callId}.stdout`,
        Buffer.from(`output of ${u2.callId}\n`.repeat(40)),
      );
      await dir.events.append('tool_executed', {
        ...ref,
        status: 'success',
        exitCode: 0,
        durationMs: 5,
        containerId: container.containerId,
        attempts: 1,
        outputs: [out],
      });
      const obs = JSON.stringify({
        status: 'success',
        summary: 'ok',
        items: [],
        evidence_refs: [out],
        next_valid_actions: [],
      });
      results.push({
        type: 'tool_result',
        tool_use_id: u2.id,
        is_error: false,
        content: `<untrusted-tool-output tool="exec">\n${obs}\n</untrusted-tool-output>`,
      });
    }
    await line({ role: 'user', content: results });
    n += batch;
  }
  // Egress attempts up to the asked size of the log (4 more events follow).
  for (let i = 0; dir.events.lastSeq < events - 4; i += 1) {
    const allowed = i % 3 !== 0;
    await dir.events.append('egress', {
      protocol: 'tls',
      via: 'transparent',
      name: allowed ? 'api.bench.test' : `other${i}.bench.test`,
      address: '10.0.0.9',
      port: 443,
      allowed,
      reason: allowed ? 'allowlisted' : 'not-allowlisted',
      ...(allowed ? { rule: 'api.bench.test:443' } : {}),
      bytesOut: 512,
      bytesIn: 4096,
      startedAt: new Date().toISOString(),
      durationMs: 3,
    });
  }
  await dir.events.append('tool_container_removed', container, true);
  await dir.events.append('egress_closed', { network: `cfh-net-${runId}`, guardId: 'guard' }, true);
  await dir.seal(RUN_FILES.transcript);
  await dir.finish(
    { status: 'completed', reason: 'final_answer', exitCode: 0 },
    {
      kind: 'agent',
      image: { ref: 'cfh-sandbox:bench', id: 'sha256:bench' },
      model: {
        adapter: 'scripted',
        route: { provider: 'scripted', credential: 'none' },
        languageModel: false,
      },
      finalAnswer: 'done',
      usage,
      toolCalls: { total: n, byStatus: { success: n }, byTool: { exec: n } },
      toolLifetime: 'per-run',
      usageCoverage: { scope: 'direct-run', attempts: usage.length, descendants: 'none' },
      costEstimate: {
        kind: 'harness-estimate',
        currency: 'USD',
        rateCard: { file: 'rate-cards/anthropic.json', version: 'bench', source: 'bench' },
        perAttempt: usage.map((u) => ({ attemptId: u.attemptId, omitted: 'unsupported_pricing' })),
        totalOmitted: 'incomplete_coverage',
      },
      providerReportedCost: null,
      error: null,
      assurance: { level: 'standard', notes: [] },
    },
  );
  return { dir: dir.dir, runId, events: dir.events.lastSeq };
}
