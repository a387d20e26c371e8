// `cfh doctor`: is every dependency a run needs healthy (AH-CAP-4)? Required checks fail
// the command; optional ones (gVisor) only report.
import { errorMessage } from '../../errors.js';
import { loadRecipe } from '../../image/recipe.js';
import { README_TOOLCHAIN, toolchainRecipe } from '../../image/toolchain.js';
import { seccompEnforcementOf } from '../run/preflight.js';
import type { ContainerRuntime } from '../../substrate/runtime.js';
import { modelLifecycle } from '../../model/model-lifecycle.js';

export interface DoctorCheck {
  readonly name: string;
  readonly ok: boolean;
  readonly required: boolean;
  readonly detail: string;
}

/**
 * The configured model (CFH_MODEL or the default), by the installed SDK's deprecation
 * table: a warning, never a failure, since command runs and scripted runs need no model.
 */
export function modelCheck(model: string, now?: Date): DoctorCheck {
  const life = modelLifecycle(model, now ?? new Date());
  const detail =
    life.status === 'retired'
      ? `${model} reached end of life on ${life.endOfLife ?? '?'} (${life.source}); set CFH_MODEL to a current model`
      : life.status === 'deprecated'
        ? `${model} is deprecated${life.endOfLife === undefined ? '' : `, end of life ${life.endOfLife}`} (${life.source}); set CFH_MODEL to a current model`
        : life.status === 'unknown'
          ? `${model}: not checked, ${life.source}`
          : `${model}: not deprecated (${life.source})`;
  return {
    name: 'model',
    ok: life.status === 'current' || life.status === 'unknown',
    required: false,
    detail,
  };
}

export async function runDoctor(
  runtime: ContainerRuntime,
  signal?: AbortSignal,
  options: { readonly model?: string } = {},
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  if (options.model !== undefined) checks.push(modelCheck(options.model));
  try {
    await runtime.ping(signal);
  } catch (error) {
    checks.push({ name: 'engine', ok: false, required: true, detail: errorMessage(error) });
    return checks;
  }
  const facts = await runtime.facts(signal);
  checks.push({
    name: 'engine',
    ok: true,
    required: true,
    detail: `Docker ${facts.serverVersion} (API ${facts.apiVersion}), cgroup v${facts.cgroupVersion || '?'}`,
  });
  checks.push({
    name: 'runtime:runc',
    ok: facts.runtimes.includes('runc'),
    required: true,
    detail: `registered: ${facts.runtimes.join(', ')}`,
  });
  const runsc = facts.runtimes.includes('runsc');
  checks.push({
    name: 'runtime:runsc',
    ok: runsc,
    required: false,
    detail: runsc
      ? `gVisor registered (runsc ${(facts.runtimeArgs.runsc ?? []).join(' ')}); seccomp ${seccompEnforcementOf('runsc', facts.runtimeArgs.runsc ?? [])}`
      : 'gVisor not registered; profiles with runtime runsc will be refused',
  });
  const runscHost = facts.runtimes.includes('runsc-host');
  checks.push({
    name: 'runtime:runsc-host',
    ok: runscHost,
    required: false,
    detail: runscHost
      ? `registered (${(facts.runtimeArgs['runsc-host'] ?? []).join(' ')}): runsc with a network posture`
      : 'not registered; runsc profiles with network allowlist/open will be refused',
  });
  const seccomp = facts.securityOptions.some((o) => o.includes('seccomp'));
  checks.push({
    name: 'seccomp',
    ok: seccomp,
    required: true,
    detail: facts.securityOptions.join(' '),
  });
  for (const [name, ok] of [
    ['limit:memory', facts.memoryLimit],
    ['limit:pids', facts.pidsLimit],
    ['limit:cpu', facts.cpuCfsQuota],
  ] as const) {
    checks.push({
      name,
      ok,
      required: true,
      detail: ok ? 'supported' : 'not supported by this engine/kernel',
    });
  }
  const recipe = loadRecipe();
  const image = await runtime.inspectImage(recipe.ref, signal);
  checks.push({
    name: 'image:sandbox',
    ok: image !== undefined,
    required: true,
    detail:
      image === undefined
        ? `${recipe.ref} missing; run 'cfh image build'`
        : `${recipe.ref} ${image.id}`,
  });
  // Not required: only the README's examples (and profiles naming it) use it.
  const toolchain = toolchainRecipe(recipe, README_TOOLCHAIN);
  const built = await runtime.inspectImage(toolchain.ref, signal);
  checks.push({
    name: 'image:toolchain',
    ok: built !== undefined,
    required: false,
    detail:
      built === undefined
        ? `${toolchain.ref} (the README's node,make) missing; run ${toolchain.buildCommand}`
        : `${toolchain.ref} ${built.id}`,
  });
  return checks;
}
