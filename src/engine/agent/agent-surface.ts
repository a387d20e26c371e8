// What every agent-shaped run opens once and then drives: the transcript and governance
// files, the budget tracker, the mediator, the egress posture and the tool executor, wired
// into the loop's dependencies. A one-prompt run drives it with one loop (agent-run.ts); a
// driver given to executeAgentRun may drive it turn after turn, or call by call, over the
// same containers, mediator and evidence (AH-INT-1): everything here lives on the run
// session's stack and is disposed with it.
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { MediatorError, errorMessage } from '../../errors.js';
import { GovernanceRecord } from '../../evidence/governance-record.js';
import { Approvals } from '../../mediator/approvals.js';
import { Mediator } from '../../mediator/mediator.js';
import type { RunFacts } from '../../mediator/policy.js';
import { policyFor } from '../ops/policy-explain.js';
import { scrubMessage, scrubbingGateway } from '../run/disclosure.js';
import type { Scrubber } from '../../tools/host/scrub.js';
import { SandboxToolRunner } from '../../tools/sandbox-runner.js';
import type { OpenHostTools } from './host-tools.js';
import { BUILTIN_TOOLS } from '../../tools/builtins.js';
import type { ToolRegistry } from '../../tools/contract.js';
import { toolExecutor } from '../../tools/tool-executor.js';
import type { AgentLoopDeps } from './agent-loop.js';
import { AttemptLedger } from './agent-run-records.js';
import { BudgetTracker } from './budgets.js';
import { rateCardOf } from '../../model/cost.js';
import { WrittenNotes } from '../cfc/written-notes.js';
import type { RunSession } from '../run/run-session.js';
import type { CfcRuntime } from '../../cfc/runtime.js';
import type { BlockedCalls } from './blocked-calls.js';
import { poolSettingOf, toolSpecs } from './agent-tool-setup.js';
import { runFactsFor } from '../run/mediation-record.js';
import type { ModelGateway } from '../../model/gateway.js';
import type { RunDeps } from '../run/run-session.js';
import { compactionConfigOf, compactionSetup } from './compaction.js';
import type { ToolRunner } from '../../tools/runner.js';
import { RoutedRunner } from '../../tools/routed-runner.js';
import { DELEGATE } from '../../tools/delegate-tool.js';

/** The `host` executor: the host-tool channel, and `delegate` when there are children. */
function hostRunner(host: OpenHostTools, children: ToolRunner | undefined): { host?: ToolRunner } {
  if (children === undefined) return host.runner === undefined ? {} : { host: host.runner };
  return { host: new RoutedRunner(new Map([[DELEGATE, children]]), host.runner) };
}

/** The most output one request asks for, before the budgets lower it (AH-LIFE-4). */
export const MODEL_OUTPUT_CAP = 8192;

export interface RetryHook {
  current?: (attempt: number, reason: string) => void;
}

/** What opening a surface needs of the run's dependencies. */
export interface SurfaceDeps extends RunDeps {
  readonly gateway: ModelGateway;
  /** Where approvals come from (the CLI's flags, file and terminal); none: nobody to ask. */
  readonly approvals?: Approvals | undefined;
  /** Filled in here so the gateway's bounded retries become events (AH-LIFE-5). */
  readonly retryHook?: RetryHook | undefined;
}

/** What the loop works with beyond the request: its surface, host tools and tallies. */
export interface AgentSurface {
  readonly registry: ToolRegistry;
  readonly host: OpenHostTools;
  readonly scrubber: Scrubber;
  readonly blocked: BlockedCalls;
  readonly cfc: CfcRuntime | undefined;
  /**
   * The `delegate` tool's runner, made with this run's budget tracker (the children's slices
   * are carved from it): present when the profile lists children (child-runner.ts).
   */
  readonly children?: ((tracker: BudgetTracker) => ToolRunner) | undefined;
}

/** An opened surface: what a driver runs loops or single calls with. */
export interface OpenAgentSurface {
  /** The loop's dependencies: also the tool-call path's (ToolCallDeps), for a driver
   * that answers calls without a model turn. */
  readonly loopDeps: AgentLoopDeps;
  readonly tracker: BudgetTracker;
  readonly facts: RunFacts;
  /** Every model attempt the run's log records, for its report, however the run ends. */
  readonly attempts: AttemptLedger;
}

/**
 * Opens the surface on the session's stack. Ends with the workload marked started (the
 * first model request, or the first call, is the start of the work: AH-INV-4).
 */
export async function openAgentSurface(
  session: RunSession,
  request: { readonly mode: 'run' | 'plan'; readonly fromPlan?: unknown },
  deps: SurfaceDeps,
  surface: AgentSurface,
  signal: AbortSignal,
): Promise<OpenAgentSurface> {
  const { registry, host, scrubber } = surface;
  const { plan, dir, log } = session;
  const budgets = plan.profile.budgets;
  const lifetime = plan.profile.toolLifetime;
  // Live from here (AH-LIFE-2): `runs list` shows it running, and a cfh killed outright
  // leaves a record that the run had started.
  await dir.writeProgress('running');
  const transcript = await open(dir.path('transcript.jsonl'), 'wx', 0o640);
  const governance = await open(dir.path('governance.jsonl'), 'wx', 0o640);
  // The transcript's digest as it is written: a session names it at every turn's end.
  const transcriptHash = createHash('sha256');
  let transcriptLines = 0;
  session.stack.defer(async () => {
    for (const [file, handle] of [
      ['transcript.jsonl', transcript],
      ['governance.jsonl', governance],
    ] as const) {
      await handle.sync();
      await handle.close();
      await dir.seal(file);
    }
  });
  if (deps.retryHook !== undefined) {
    deps.retryHook.current = (attempt, reason) => {
      dir.events.append('model_retry', { attempt, reason }, true).catch((e: unknown) => {
        log.error({ err: errorMessage(e) }, 'retry event not recorded');
      });
    };
  }
  const capMs =
    plan.profile.toolTimeoutSeconds === undefined
      ? Number.POSITIVE_INFINITY
      : plan.profile.toolTimeoutSeconds * 1000;
  const card = rateCardOf(deps.gateway);
  const tracker = new BudgetTracker({ ...budgets, maxTotalCost: budgets.maxTotalCost });
  session.stack.defer(() => {
    tracker.close();
  });
  // The facts snapshot.json `mediation` recorded (mediation-record.ts): the same function.
  const facts: RunFacts = runFactsFor(plan, request);
  const mediator = new Mediator({
    policy: policyFor(plan.profile, facts),
    approvals: deps.approvals ?? new Approvals([]),
    recorder: {
      event: async (type, data, durable) => {
        await dir.events.append(type, data, durable ?? false);
      },
    },
    clock: tracker,
  });
  await session.openEgress(signal);
  // After the egress posture on the stack: tool containers are removed before it closes.
  // Disposal waits for starts and calls still in flight: nothing is left behind.
  const executor = session.stack.use(
    toolExecutor(
      lifetime,
      deps.runtime,
      toolSpecs(plan),
      {
        started: async (container) => {
          await dir.events.append('tool_container_started', { ...container }, true);
        },
        removed: async (container) => {
          await dir.events.append('tool_container_removed', { ...container }, true);
        },
        pooled: async (container, facts) => {
          await dir.events.append(
            'tool_container_pooled',
            { ...container, lifetime: 'per-call', ...facts },
            true,
          );
        },
        taken: async (container, facts) => {
          await dir.events.append(
            'tool_container_taken',
            { ...container, lifetime: 'per-call', ...facts },
            true,
          );
        },
        removalFailed: (container, err) => {
          log.error({ ...container, err }, 'tool container removal failed; cfh reap will retry');
        },
      },
      poolSettingOf(plan),
    ),
  );
  session.markStarted();
  session.startSweep();
  // Held for the run's life: the trees it mounts, under the labels it reads them as
  // (cfc/written-leases.ts); taken before the first call.
  const written =
    surface.cfc === undefined
      ? undefined
      : session.stack.use(
          await WrittenNotes.open(
            plan,
            session.deps.writtenLabelsDir,
            { event: (type, data, durable) => dir.events.append(type, data, durable) },
            signal,
          ),
        );
  const loopDeps: AgentLoopDeps = {
    gateway: scrubbingGateway(deps.gateway, scrubber),
    ...(scrubber.empty ? {} : { disclosure: scrubber }),
    ...(surface.cfc === undefined
      ? {}
      : {
          cfc: surface.cfc,
          toolLifetime: lifetime,
          ...(written === undefined ? {} : { written }),
        }),
    registry,
    mediator,
    mode: facts.mode,
    budgets: tracker,
    runners: {
      sandbox: new SandboxToolRunner(
        BUILTIN_TOOLS,
        executor,
        capMs,
        plan.spec.mounts.map((m) => m.target),
        async (stop) => {
          await dir.events.append('tool_call_stopped', { ...stop }, true);
        },
      ),
      ...hostRunner(host, surface.children?.(tracker)),
    },
    recorder: {
      governance: async (record) => {
        // The extension's invariants hold for every record, or the harness is broken.
        const checked = GovernanceRecord.safeParse(scrubber.value(record));
        if (!checked.success) {
          throw new MediatorError(
            'governance_invariant',
            `governance record for ${record.call_id} breaks the schema: ${checked.error.message}`,
            { callId: record.call_id },
          );
        }
        await governance.appendFile(`${JSON.stringify(checked.data)}\n`);
      },
      event: async (type, data, durable) => {
        await dir.events.append(type, data, durable ?? false);
      },
      transcript: async (message) => {
        const line = `${JSON.stringify(scrubMessage(message, scrubber))}\n`;
        await transcript.appendFile(line);
        transcriptHash.update(line);
        transcriptLines += 1;
      },
      transcriptState: () => ({
        messages: transcriptLines,
        sha256: transcriptHash.copy().digest('hex'),
      }),
      output: (name, data) => dir.writeOutput(name, data),
    },
    // The model's cap per request; the reservation lowers it to what the budgets leave.
    maxOutputTokens: MODEL_OUTPUT_CAP,
    card,
    // AH-LIFE-4: the wall-time budget is hard; in-flight model and tool work is aborted.
    // Time spent waiting for a person's approval does not count (the tracker pauses).
    deadline: tracker.deadline,
    // AH-LIFE-6/7: the profile's context.compactAt, armed for this model (or not at all).
    compaction: compactionConfigOf(compactionSetup(plan.profile.context, deps.gateway)),
  };
  const attempts = new AttemptLedger();
  dir.events.subscribe(attempts.listener);
  return { loopDeps, tracker, facts, attempts };
}
