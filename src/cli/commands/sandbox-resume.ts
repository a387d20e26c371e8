// `cfh sandbox resume RUN_ID [--prompt TEXT] [--script FILE] [narrowing options]`: an agent
// run that ended continues as a new run linked to it (AH-ART-4/5). Everything is checked
// before anything starts: the old run's state (resume-state.ts), the plan made again and
// narrowed (resume-run.ts), the image it ran (the same id), the approved plan of a
// `--from-plan` run. A new `--prompt` gets a fresh capture record (AH-CFC-3); without one
// the run continues with cfh's own words, which carry no prompt authority (AH-CFC-5).
import { ConfigError } from '../../errors.js';
import { executeAgentRun, type RetryHook } from '../../engine/agent/agent-run.js';
import { captureOfPrompt } from '../../engine/cfc/cfc-plan.js';
import { loadApprovedPlan } from '../../engine/resume/from-plan.js';
import { CONTINUE_PROMPT } from '../../engine/resume/resume-conversation.js';
import {
  planResume,
  resumeDriver,
  resumedFromOf,
  type ResumeOverrides,
} from '../../engine/resume/resume-run.js';
import {
  loadResumeState,
  refuseResume,
  type ResumeState,
} from '../../engine/resume/resume-state.js';
import { routeOf } from '../../engine/resume/resume-authority.js';
import { keyPaths, loadTrustedKey } from '../../evidence/signing.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { ContainerRuntime } from '../../substrate/runtime.js';
import type { CliDeps } from '../deps.js';
import { readFlags } from '../flags/flag.js';
import { budgetOverrides } from '../flags/run-flags.js';
import { RESUME_BUDGET_FLAGS, RESUME_FLAGS } from '../flags/resume-flags.js';
import { reportFailure } from '../report-failure.js';
import { buildRunDeps } from '../run-deps.js';
import { runEndLine } from '../run-said.js';
import { setUpApprovals } from './agent-approvals.js';
import { agentRunDeps } from './agent-run.js';
import { chooseGateway } from '../gateway-choice.js';

type ResumeArgs = ReturnType<typeof readFlags<typeof RESUME_FLAGS>>;

function overridesOf(o: ResumeArgs, raw: Readonly<Record<string, unknown>>): ResumeOverrides {
  const budgets = budgetOverrides(readFlags(RESUME_BUDGET_FLAGS, raw));
  return {
    network: o.network,
    allow: o.allow,
    deny: o.deny,
    memory: o.memory,
    cpus: o.cpus,
    pids: o.pids,
    runtime: o.runtime,
    workspaceMode: o.workspaceMode,
    mounts: o.mount,
    cfc: o.cfc,
    toolLifetime: o.toolLifetime,
    toolTimeout: o.toolTimeout,
    budgets,
    failOnBlocked: o.failOnBlocked,
    tools: o.tool.length === 0 ? undefined : o.tool,
  };
}

/** The image the old run ran is still there, as the same image (AH-ART-5). */
async function checkImage(
  state: ResumeState,
  runtime: ContainerRuntime,
  signal: AbortSignal,
): Promise<void> {
  const { ref, id } = state.snapshot.image;
  const now = await runtime.inspectImage(ref, signal);
  if (now === undefined) throw refuseResume(state.runId, `its image ${ref} is gone`);
  if (now.id !== id)
    throw refuseResume(
      state.runId,
      `its image ${ref} is another image now (${now.id.slice(0, 19)}, was ${id.slice(0, 19)})`,
    );
}

export async function sandboxResumeCommand(
  runId: string,
  raw: Readonly<Record<string, unknown>>,
  deps: CliDeps,
): Promise<number> {
  let json = false;
  try {
    const o = readFlags(RESUME_FLAGS, raw);
    json = o.json;
    if (o.json && o.events !== undefined)
      throw new ConfigError('events_and_json', '--events: not with --json (choose one)', {
        field: '--events',
      });
    const artifactRoot = o.artifactRoot ?? deps.env.artifactRoot;
    const trustedKey = await loadTrustedKey(keyPaths(deps.env.keyDir).publicKey);
    const state = await loadResumeState(artifactRoot, runId, trustedKey);
    const overrides = overridesOf(o, raw);
    const owner = currentOwner();
    const planned = { env: deps.env, host: currentHostIdentity(), owner, artifactRoot };
    // The gateway first: its route is one of the fields a resume keeps (AH-INV-5).
    const retryHook: RetryHook = {};
    const budgets = state.profile.budgets;
    const gateway = chooseGateway(
      o,
      deps.env,
      budgets.maxRetriesPerModelCall,
      retryHook,
      state.profile.model,
    );
    const plan = planResume(state, overrides, routeOf(gateway.route, gateway.adapter), planned);
    const { approvals, setup } = await setUpApprovals(o, plan.profile, deps);
    const from = state.snapshot.fromPlan ?? null;
    const fromPlan =
      from === null ? undefined : await loadApprovedPlan(artifactRoot, from.runId, trustedKey);
    if (fromPlan !== undefined && fromPlan.sha256 !== from?.sha256)
      throw refuseResume(runId, `the plan of ${from?.runId ?? ''} is not the one the run executed`);
    const prompt = o.prompt ?? CONTINUE_PROMPT;
    const link = resumedFromOf(state, overrides, o.prompt === undefined ? 'none' : 'fresh');
    const run = await buildRunDeps(deps, owner);
    await checkImage(state, run.deps.runtime, run.signal);
    const events = o.events !== undefined;
    const outcome = await executeAgentRun(
      plan,
      {
        slots: { prompt },
        mode: state.snapshot.mode ?? 'run',
        fromPlan,
        approvals: setup,
        // AH-CFC-3/5: only a --prompt this cfh read from its caller is captured; cfh's own
        // continuation text is none, and the old direct command is context.
        promptCapture: o.prompt === undefined ? undefined : captureOfPrompt(o.prompt),
        resumedFrom: link,
        // The old context keeps its label, and its handles their referents (cfc/carried.ts).
        carried: [state.carried],
      },
      agentRunDeps(run.deps, deps, { gateway, retryHook, approvals, events }),
      run.signal,
      resumeDriver(state, link),
    );
    if (o.json) deps.printer.json({ ...outcome, resumedFrom: link });
    else {
      if (outcome.finalAnswer !== null && !events) deps.printer.text(outcome.finalAnswer);
      deps.printer.err(runEndLine('agent', outcome, o.artifactRoot));
    }
    return outcome.exitCode;
  } catch (error) {
    return reportFailure(error, deps, { json, surface: 'run' });
  }
}
