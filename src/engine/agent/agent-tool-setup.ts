// What an agent run's tool containers are made from (agent-run.ts): the spec each kind
// derives from the plan, the secrets the exec tool's env holds, and the mount channel that
// keeps a plan-mode exec from being harmless.
import { MIN_CREDENTIAL_CHARS, type HeldCredential } from '../../tools/host/scrub.js';
import { withoutEnv, withoutMounts } from '../../tools/tool-container.js';
import { withheldEnv } from '../../cfc/env-labels.js';
import type { PoolSetting, ToolSpecs } from '../../tools/tool-executor.js';
import { BUILTIN_TOOLS } from '../../tools/builtins.js';
import type { ToolContainerKind } from '../../tools/tool-container.js';
import { poolSpecDigest } from '../../tools/tool-pool.js';
import { WORKSPACE_TARGET } from '../../sandbox/mount-policy.js';
import type { SpecialFileCheck } from '../../sandbox/special-files.js';
import type { ContainerSpec } from '../../substrate/container-spec.js';
import type { RunPlan } from '../run/run-plan.js';

/**
 * The spec each kind of tool container derives from. `exec` is decided as a process in the
 * sandbox and keeps the run's mounts and env as they are, less those CFC planning withheld
 * from the workload (AH-CFC-10: a mount or an env value whose secrets some sink exec reaches
 * is not cleared for; cfc/env-labels.ts).
 *
 * The file-tool container holds every mount, withheld ones included, and every program in
 * it (its idle process, the call supervisor, the helper) runs from its image's root: so its
 * image is always cfh's own sandbox image (plan.image.fileTools), never the workload's. A
 * workload image built from a repository's Dockerfile is the repository's code; run where
 * the withheld mounts are, its python3 could answer a read of a public file with a secret
 * mount's bytes, which cfh labels by the mount the path names (AH-CFC-2). The price: a path
 * in no mount reads cfh's sandbox image's files, not the workload image's (exec reads those).
 * In a draft run the file tools decide as draft-only writes (run_as_draft_only): their
 * container keeps only the draft copy writable, every other mount read-only, so that
 * decision is true whatever path the model names (`/data/x`, `../data/x`, a link).
 */
export function toolSpecs(plan: RunPlan): ToolSpecs {
  const workload = withoutEnv(
    withoutMounts(
      plan.spec,
      plan.cfc.mounts.filter((m) => !m.inWorkload).map((m) => m.target),
    ),
    withheldEnv(plan.cfc),
  );
  const fileTool: ContainerSpec = { ...plan.spec, image: plan.image.fileTools.ref };
  if (plan.workspaceMode !== 'draft') return { workload, 'file-tool': fileTool };
  const mounts = plan.spec.mounts.map((m) =>
    m.target === WORKSPACE_TARGET ? m : { ...m, mode: 'ro' as const },
  );
  return { workload, 'file-tool': { ...fileTool, mounts } };
}

/**
 * `--env`/`--env-file` values are the `exec` tool's env (like the profile's), and secrets by
 * default: a tool's output that shows one (`env`, `echo $TOKEN`) reaches neither the model
 * nor the evidence. Matched whole; a value shorter than a credential's floor is not one the
 * scrubber can find without redacting ordinary text (docs/operators.md says so).
 */
export function commandEnvSecrets(plan: RunPlan): HeldCredential[] {
  return Object.keys(plan.commandEnv).flatMap((name) => {
    const value = plan.spec.env[name];
    return value !== undefined && value.length >= MIN_CREDENTIAL_CHARS
      ? [{ name, value, fragments: false }]
      : [];
  });
}

/** The FIFO (or the unfinished search) that keeps a plan-mode exec from being harmless. */
export function mountChannelOf(check: SpecialFileCheck | undefined): { mountChannel?: string } {
  if (check === undefined) return {};
  const first = check.fifos[0];
  if (first !== undefined) return { mountChannel: `the FIFO ${first}` };
  if (!check.complete)
    return { mountChannel: `more than ${check.entries} entries, too many to prove no FIFO` };
  return {};
}

/**
 * The warm pools a run gets (issue 21): under per-call, one per container kind the profile's
 * tools run in, of the profile's `pool.size`; under per-run none (it costs nothing there).
 */
export function poolSettingOf(plan: RunPlan): PoolSetting {
  if (plan.profile.toolLifetime !== 'per-call') return { size: 0, kinds: [] };
  return { size: plan.profile.pool.size, kinds: poolKinds(plan.profile.tools) };
}

/** The kinds of container the named built-in tools run in, in a fixed order. */
export function poolKinds(tools: readonly string[]): ToolContainerKind[] {
  const used = new Set(BUILTIN_TOOLS.filter((t) => tools.includes(t.name)).map((t) => t.runsIn));
  return (['workload', 'file-tool'] as const).filter((k) => used.has(k));
}

/** The snapshot's record of the pools: size, kinds and the spec digest each is made for. */
export function poolSnapshot(
  plan: RunPlan,
): { size: number; kinds: { kind: ToolContainerKind; specDigest: string }[] } | null {
  const setting = poolSettingOf(plan);
  if (setting.size === 0) return null;
  const specs = toolSpecs(plan);
  return {
    size: setting.size,
    kinds: setting.kinds.map((kind) => ({ kind, specDigest: poolSpecDigest(specs[kind], kind) })),
  };
}
