// `cfh sandbox resume RUN_ID`: the plan of the new run and the driver that continues the old
// context (AH-ART-4/5, AH-CFC-5). The plan is made again from what the old snapshot recorded
// (profile reference, workspace, flags, extra mounts, CFC mode and labels) and must come out
// as the same authority: the same profile digest, the same mounts and workspace object.
// Then the resume's own overrides are applied, and the result must narrow the old run's
// configuration field by field (resume-narrowing.ts); the overrides are recorded.
import { canonicalJson } from '../../evidence/canonical-json.js';
import { createHash } from 'node:crypto';
import { ConfigError } from '../../errors.js';
import type { CfhEnvironment } from '../../config/env.js';
import { BUDGET_FLAGS } from '../../config/budget-flags.js';
import type { OwnerIdentity } from '../../sandbox/owner.js';
import type { HostIdentity } from '../../sandbox/sandbox-user.js';
import { WORKSPACE_TARGET } from '../../sandbox/mount-policy.js';
import type { ModelMessage } from '../../model/gateway.js';
import type { ResumedFrom } from '../../evidence/schema/resume.js';
import { planSandboxRun, type RunPlan, type SandboxRunOptions } from '../run/run-plan.js';
import { snapshotCfc } from '../cfc/cfc-plan.js';
import { newConversation } from '../agent/agent-loop.js';
import { answerIn, type AgentDriver } from '../agent/agent-drivers.js';
import { authorityOfPlan, authorityOfSnapshot, grantsOf } from './resume-authority.js';
import { narrowingViolations, type ModelRoute } from './resume-narrowing.js';
import { refuseResume, type ResumeState } from './resume-state.js';
import { RESUMED_CONTEXT_FILE } from '../../evidence/schema/resume.js';

/** The options a resume may give: each must narrow (tools: a subset of the profile's). */
export type ResumeOverrides = Pick<
  SandboxRunOptions,
  | 'network'
  | 'allow'
  | 'deny'
  | 'memory'
  | 'cpus'
  | 'pids'
  | 'runtime'
  | 'workspaceMode'
  | 'toolTimeout'
  | 'toolLifetime'
  | 'cfc'
  | 'mounts'
  | 'budgets'
  | 'failOnBlocked'
> & { readonly tools?: readonly string[] | undefined };

const FLAG_OPTION: Readonly<Record<string, keyof SandboxRunOptions>> = {
  timeout: 'timeout',
  memory: 'memory',
  cpus: 'cpus',
  pids: 'pids',
  runtime: 'runtime',
  network: 'network',
  'ca-bundle': 'caBundle',
  'tool-lifetime': 'toolLifetime',
  'tool-timeout': 'toolTimeout',
  'workspace-mode': 'workspaceMode',
  'host-obeyed': 'hostObeyed',
  image: 'image',
  user: 'user',
};

/** The options the old run was planned with, as its snapshot recorded them. */
function optionsOf(state: ResumeState, artifactRoot: string): SandboxRunOptions {
  const s = state.snapshot;
  const source = s.profile.sources.at(-1) ?? 'builtin:default';
  const options: Record<string, unknown> = {
    profile: source.startsWith('builtin:') ? source.slice('builtin:'.length) : source,
    workspace: s.workspace.hostPath,
    artifactRoot,
    command: ['sleep', 'infinity'],
  };
  const budgets: Record<string, string> = {};
  for (const [flag, value] of Object.entries(s.profile.overrides)) {
    const text = String(value);
    const option = FLAG_OPTION[flag];
    const budget = BUDGET_FLAGS.find((b) => b.flag === flag);
    if (option !== undefined) options[option] = text;
    else if (budget !== undefined) budgets[budget.field] = text;
    else if (flag === 'allow' || flag === 'deny') options[flag] = text.split(' ');
    else if (flag === 'fail-on-blocked') options.failOnBlocked = true;
    else
      throw refuseResume(
        state.runId,
        `its snapshot records an override cfh cannot repeat (${flag})`,
      );
  }
  options.budgets = budgets;
  if (s.cfc?.modeSource === 'flag') options.cfc = s.cfc.mode;
  // `--label` flags, as the CFC plan recorded them (c: confidentiality, i: integrity).
  options.labels = (s.cfc?.mounts ?? [])
    .filter((m) => m.labelSource === 'flag' && m.label !== null)
    .map(
      (m) =>
        `${m.target}=${[...(m.label?.confidentiality ?? []).map((a) => `c:${a}`), ...(m.label?.integrity ?? []).map((a) => `i:${a}`)].join(',')}`,
    );
  return options as unknown as SandboxRunOptions;
}

const mountsKey = (plan: RunPlan): string => canonicalJson(grantsOf(plan.spec.mounts));

/** The old run's plan made again, or a refusal saying what is no longer the same. */
function replanned(
  state: ResumeState,
  base: SandboxRunOptions,
  plan: (o: SandboxRunOptions) => RunPlan,
): { options: SandboxRunOptions; plan: RunPlan } {
  const recorded = grantsOf(state.snapshot.containerSpec.mounts);
  let first = plan(base);
  // `--mount` flags are not profile overrides: they are the recorded mounts the profile lacks
  // (not cfh's own over host-obeyed paths, which planning makes again or does not: class 9).
  const held = new Set(state.snapshot.hostObeyed?.readOnly ?? []);
  const missing = recorded.filter(
    (m) => !held.has(m.target) && !grantsOf(first.spec.mounts).some((g) => g.target === m.target),
  );
  const options = { ...base, mounts: missing.map((m) => `${m.source}:${m.target}:${m.mode}`) };
  if (missing.length > 0) first = plan(options);
  if (first.profileDigest !== state.snapshot.profile.digest)
    throw refuseResume(
      state.runId,
      `its profile changed since (digest ${state.snapshot.profile.digest.slice(0, 12)}, now ${first.profileDigest.slice(0, 12)}): ${base.profile ?? ''}`,
    );
  if (mountsKey(first) !== canonicalJson(recorded))
    throw refuseResume(state.runId, 'its mounts are no longer the same objects');
  // The workspace is the same object (device and inode) it mounted, where it mounted it.
  if (state.snapshot.workspace.mode !== 'draft') {
    const was = state.snapshot.containerSpec.mounts.find((m) => m.target === WORKSPACE_TARGET);
    const now = first.spec.mounts.find((m) => m.target === WORKSPACE_TARGET);
    if (canonicalJson(was?.identity ?? null) !== canonicalJson(now?.identity ?? null))
      throw refuseResume(
        state.runId,
        `its workspace ${state.snapshot.workspace.hostPath} was replaced since (another directory at that path)`,
      );
  }
  return { options, plan: first };
}

/** The overrides as the evidence records them: flag → value. */
export function overrideRecord(o: ResumeOverrides): Record<string, string> {
  const out: Record<string, string> = {};
  const put = (k: string, v: string | undefined): void => {
    if (v !== undefined) out[k] = v;
  };
  put('network', o.network);
  put('memory', o.memory);
  put('cpus', o.cpus);
  put('pids', o.pids);
  put('runtime', o.runtime);
  put('workspace-mode', o.workspaceMode);
  put('tool-timeout', o.toolTimeout);
  put('tool-lifetime', o.toolLifetime);
  put('cfc', o.cfc);
  if ((o.allow ?? []).length > 0) out.allow = (o.allow ?? []).join(' ');
  if ((o.deny ?? []).length > 0) out.deny = (o.deny ?? []).join(' ');
  if ((o.mounts ?? []).length > 0) out.mount = (o.mounts ?? []).join(' ');
  if (o.failOnBlocked === true) out['fail-on-blocked'] = 'true';
  if (o.tools !== undefined) out.tools = o.tools.join(',');
  for (const b of BUDGET_FLAGS) put(b.flag, o.budgets?.[b.field]);
  return out;
}

/**
 * The new run's plan: the old one made again, with the overrides, refused (resume_broadens,
 * 125) when any field does not narrow.
 */
export function planResume(
  state: ResumeState,
  overrides: ResumeOverrides,
  route: ModelRoute,
  ctx: { env: CfhEnvironment; host: HostIdentity; owner: OwnerIdentity; artifactRoot: string },
): RunPlan {
  const plan = (o: SandboxRunOptions): RunPlan => planSandboxRun(o, ctx.env, ctx.host, ctx.owner);
  const { options } = replanned(state, optionsOf(state, ctx.artifactRoot), plan);
  const { tools, ...flags } = overrides;
  const merged: SandboxRunOptions = {
    ...options,
    ...Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined)),
    allow: [...(options.allow ?? []), ...(flags.allow ?? [])],
    deny: [...(options.deny ?? []), ...(flags.deny ?? [])],
    mounts: [...(options.mounts ?? []), ...(flags.mounts ?? [])],
    budgets: { ...options.budgets, ...flags.budgets },
  };
  let next = plan(merged);
  if (tools !== undefined) {
    const profile = { ...next.profile, tools: [...tools] };
    next = {
      ...next,
      profile,
      overrides: { ...next.overrides, tools: tools.join(',') },
      profileDigest: createHash('sha256').update(canonicalJson(profile)).digest('hex'),
    };
  }
  const mode = state.snapshot.mode ?? 'run';
  const violations = narrowingViolations(
    authorityOfSnapshot(state.snapshot, state.profile),
    authorityOfPlan(next, snapshotCfc(next.cfc, next.profile.cfc.mode, null), route, mode),
  );
  const first = violations[0];
  if (first !== undefined) {
    throw new ConfigError(
      'resume_broadens',
      `${first.field}: ${first.why}${
        violations.length > 1
          ? ` (and ${violations
              .slice(1)
              .map((v) => v.field)
              .join(', ')})`
          : ''
      }`,
      { field: first.field, violations },
      `a resume keeps run ${state.runId}'s configuration and may only narrow it (docs/operators.md, "Resuming a run")`,
    );
  }
  return next;
}

/**
 * The driver of a resumed run: the link recorded before the first model request, the
 * rebuilt context written as resumed-context.jsonl (it is what the model is sent first), the old
 * context's label joined into the new one (its confidentiality stays; its integrity can only
 * lower the new run's: AH-CFC-5/7), then one loop over that context.
 */
export function resumeDriver(state: ResumeState, link: ResumedFrom): AgentDriver {
  return async (ctx, signal) => {
    await ctx.session.dir.events.append('run_resumed', link, true);
    // The context as the model is sent it, in the chain beside the new transcript (which
    // holds this run's own messages, from its first direct-command slot).
    const conversation = newConversation();
    conversation.messages.push(...(state.messages as readonly ModelMessage[]));
    await ctx.session.dir.writeFile(
      RESUMED_CONTEXT_FILE,
      state.messages.map((m) => `${JSON.stringify(m)}\n`).join(''),
    );
    return answerIn(conversation)(ctx, signal);
  };
}

/** The link the snapshot and the `run_resumed` event record. */
export function resumedFromOf(
  state: ResumeState,
  overrides: ResumeOverrides,
  prompt: 'fresh' | 'none',
): ResumedFrom {
  return {
    runId: state.runId,
    status: state.status,
    finalSeq: state.finalSeq,
    finalHash: state.finalHash,
    snapshotSchema: state.snapshot.schema,
    profileDigest: state.snapshot.profile.digest,
    transcript: state.transcript,
    overrides: overrideRecord(overrides),
    prompt,
  };
}
