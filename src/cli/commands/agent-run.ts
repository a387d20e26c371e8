// `cfh sandbox run --prompt TEXT [--context FILE]... [--quote FILE]... [--script FILE]`:
// an agent run. The model gateway is chosen here, once (gateway-choice.ts); a failure never
// moves the run to another gateway or credential (AH-INV-5).
import path from 'node:path';
import { ConfigError } from '../../errors.js';
import { INPUT_FILE_LIMITS, readInputFile } from '../../config/input-file.js';
import { executeAgentRun, type AgentRunDeps } from '../../engine/agent/agent-run.js';
import type { Approvals } from '../../mediator/approvals.js';
import { captureOfPrompt } from '../../engine/cfc/cfc-plan.js';
import { loadApprovedPlan } from '../../engine/resume/from-plan.js';
import { childGuard, planSandboxRun } from '../../engine/run/run-plan.js';
import { checkHandedWithinCeiling, childInherits } from '../../engine/children/child-trees.js';
import type { ModelGateway } from '../../model/gateway.js';
import type { CfhEnvironment } from '../../config/env.js';
import type { RetryHook } from '../../engine/agent/agent-run.js';
import {
  EMBEDDED_SCRIPT_SOURCE,
  chooseGateway,
  childGatewayOf,
  heldCredential,
} from '../gateway-choice.js';
import type { HostToolDeps } from '../../engine/agent/host-tools.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { CliDeps } from '../deps.js';
import { strongerCfcMode } from '../../config/cfc-schema.js';
import { keyPaths, loadTrustedKey } from '../../evidence/signing.js';
import { buildRunDeps } from '../run-deps.js';
import type { RunDeps } from '../../engine/run/run-session.js';
import type { AgentRunRequest } from './run-args.js';
import { reportFailure } from '../report-failure.js';
import { setUpApprovals } from './agent-approvals.js';
import { eventStream, runEndLine } from '../run-said.js';
import type { PlannedPromptFile } from '../../engine/cfc/prompt-files.js';

/**
 * The prompt slots' files, read one at a time through the bounded reader (regular files,
 * no symbolic links, a size cap each and in all), each the object planning labelled, before
 * any run directory or engine object exists; SIGINT/SIGTERM abort the reading.
 */
async function readSlots(
  args: AgentRunRequest,
  planned: readonly PlannedPromptFile[],
  signal: AbortSignal,
): Promise<{ prompt: string; context: string[]; quoted: string[] }> {
  let total = 0;
  const read = async (flag: '--context' | '--quote', file: string): Promise<string> => {
    // The object planning labelled, or nothing (engine/cfc/prompt-files.ts).
    const expect = planned.find((p) => p.flag === flag && p.file === file)?.identity;
    const text = await readInputFile(
      {
        label: flag,
        file,
        maxBytes: INPUT_FILE_LIMITS.promptFileBytes,
        noSymlinks: true,
        expect,
      },
      signal,
    );
    total += Buffer.byteLength(text);
    if (total > INPUT_FILE_LIMITS.promptFilesTotalBytes) {
      throw new ConfigError(
        'input_files_too_large',
        `${flag}: '${file}' brings the --context and --quote files to more than ${INPUT_FILE_LIMITS.promptFilesTotalBytes} bytes together (docs/operators.md, "Input files")`,
        { field: flag, value: file },
      );
    }
    return text;
  };
  const context: string[] = [];
  for (const f of args.context) context.push(await read('--context', f));
  const quoted: string[] = [];
  for (const f of args.quote) quoted.push(await read('--quote', f));
  return { prompt: args.prompt, context, quoted };
}

/** The host-tool channel: its ledger, where credentials are read, what else is scrubbed. */
export function hostToolDeps(
  run: RunDeps,
  env: CfhEnvironment,
  gateway: ModelGateway,
): HostToolDeps {
  // The model's key is scrubbed from what host tools return, whichever provider holds it.
  const held = heldCredential(gateway, env);
  return {
    // The ledger the sweep reads: the same directory, from the one builder.
    processDir: run.hostProcessDir,
    env: env.credentialSource,
    heldCredentials: held !== undefined && held.value.length >= 8 ? [held] : [],
    keyDir: env.keyDir,
  };
}

/** An agent run's dependencies: the run's, the gateway, approvals and the event stream. */
export function agentRunDeps(
  run: RunDeps,
  deps: CliDeps,
  o: { gateway: ModelGateway; retryHook: RetryHook; approvals: Approvals; events: boolean },
): AgentRunDeps {
  return {
    ...run,
    ...(o.events ? { events: eventStream(deps.printer) } : {}),
    gateway: o.gateway,
    retryHook: o.retryHook,
    // AH-DEL-1: a child profile that names its own route talks to it (its own credential).
    childGateway: childGatewayOf(deps.env, o.retryHook),
    approvals: o.approvals,
    hostTools: hostToolDeps(run, deps.env, o.gateway),
    // AH-DEL-1: a child is planned from its own resolved profile only; it works on the
    // parent's workspace (its own mode and mounts) and keeps its evidence under the parent's.
    childPlanner: (child, parent, root) => {
      const plan = planSandboxRun(
        {
          // Delegating never weakens information flow control: the child's mode is at least
          // its parent's (an enforcing parent's child enforces too), as its profile says.
          loaded: {
            ...child.loaded,
            profile: {
              ...child.loaded.profile,
              cfc: {
                ...child.loaded.profile.cfc,
                mode: strongerCfcMode(parent.cfc.mode, child.loaded.profile.cfc.mode),
              },
            },
          },
          profile: child.loaded.profile.name,
          workspace: parent.workspace,
          // AH-CFC-12: a tree the parent hands on keeps at least the parent's label of it.
          inherited: childInherits(parent),
          ancestors: childGuard(parent, path.dirname(root)),
          artifactRoot: root,
          planning: parent.mountChecks.specialFiles !== undefined,
          command: ['sleep', 'infinity'],
        },
        deps.env,
        currentHostIdentity(),
        run.owner,
      );
      checkHandedWithinCeiling(child, plan.cfc.mounts);
      return plan;
    },
  };
}

export async function agentRunCommand(args: AgentRunRequest, deps: CliDeps): Promise<number> {
  try {
    if (args.plan && args.fromPlan !== undefined) {
      throw new ConfigError(
        'plan_and_from_plan',
        '--plan: a planning run cannot also execute a plan (drop --plan or --from-plan)',
        { field: '--plan' },
      );
    }
    const events = args.events !== undefined;
    const owner = currentOwner();
    const plan = planSandboxRun(
      {
        ...args,
        planning: args.plan,
        // Sources of the model's context: each carries its place's label (AH-CFC-7).
        promptFiles: [
          ...args.context.map((file) => ({ flag: '--context' as const, file })),
          ...args.quote.map((file) => ({ flag: '--quote' as const, file })),
        ],
        command: ['sleep', 'infinity'],
      },
      deps.env,
      currentHostIdentity(),
      owner,
    );
    // Labelled first, then read: the slot is the object its label is of.
    const slots = await readSlots(args, plan.promptFiles, deps.signal);
    // Everything that can be wrong with approvals or the plan is found before anything starts.
    const { approvals, setup } = await setUpApprovals(args, plan.profile, deps);
    const fromPlan =
      args.fromPlan === undefined
        ? undefined
        : await loadApprovedPlan(
            plan.artifactRoot,
            args.fromPlan,
            await loadTrustedKey(keyPaths(deps.env.keyDir).publicKey),
          );
    const retryHook: RetryHook = {};
    const gateway = chooseGateway(
      args,
      deps.env,
      plan.profile.budgets.maxRetriesPerModelCall,
      retryHook,
      plan.profile.model,
    );
    if (gateway.route.source === EMBEDDED_SCRIPT_SOURCE) {
      deps.printer.err(
        'cfh: no model route (no ANTHROPIC_API_KEY, no --provider, no profile model section) and no --script: replaying the embedded scripted model (no language model takes part)',
      );
    }
    const run = await buildRunDeps(deps, owner);
    const outcome = await executeAgentRun(
      plan,
      {
        slots,
        mode: args.plan ? 'plan' : 'run',
        fromPlan,
        approvals: setup,
        // AH-CFC-3: cfh read --prompt from its own caller's command line: captured.
        promptCapture: captureOfPrompt(slots.prompt),
      },
      agentRunDeps(run.deps, deps, { gateway, retryHook, approvals, events }),
      run.signal,
    );
    if (args.json) deps.printer.json(outcome);
    else {
      // The model's text: its lines kept, every other control or invisible character
      // escaped. With --events stdout is the event stream; the answer is in report.json.
      if (outcome.finalAnswer !== null && !events) deps.printer.text(outcome.finalAnswer);
      deps.printer.err(runEndLine('agent', outcome, args.artifactRoot));
    }
    return outcome.exitCode;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json, surface: 'run' });
  }
}
