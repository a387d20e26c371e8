// Operator commands: capabilities, doctor, reap (image build/ls/rm: image.ts; runs: runs.ts).
import { describeCapabilities } from '../../engine/ops/capabilities.js';
import { runDoctor } from '../../engine/ops/doctor.js';
import { reapOrphans } from '../../engine/ops/reaper.js';
import type { CliDeps } from '../deps.js';
import { ConfigError } from '../../errors.js';
import { isRunId } from '../../evidence/run-id.js';
import { reportFailure } from '../report-failure.js';
import { loadProfile } from '../../config/profile-loader.js';
import { checkHostTools } from '../../engine/ops/host-doctor.js';
import { checkModelRoute } from '../../engine/ops/route-doctor.js';
import type { DoctorCheck } from '../../engine/ops/doctor.js';
import type { ModelSection } from '../../config/model-schema.js';
import { CfhError } from '../../errors.js';
import {
  ANTHROPIC_DEFAULT_BASE_URL,
  resolveRoute,
  routeKey,
  type RouteChoice,
} from '../model-route.js';

export function capabilitiesCommand(args: { profile?: string | undefined }, deps: CliDeps): number {
  try {
    const profile = args.profile === undefined ? undefined : loadProfile(args.profile).profile;
    deps.printer.json(describeCapabilities(profile));
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: true });
  }
}

export async function doctorCommand(
  args: { json: boolean; profile?: string | undefined },
  deps: CliDeps,
): Promise<number> {
  try {
    const profile = args.profile === undefined ? undefined : loadProfile(args.profile).profile;
    // The Anthropic deprecation table speaks of Anthropic's models only: the model a run of
    // this profile would ask Anthropic for, if its route is Anthropic's.
    const route = profile?.model;
    const anthropicModel =
      route === undefined
        ? deps.env.model
        : route.provider === 'anthropic'
          ? (route.model ?? deps.env.model)
          : undefined;
    const checks = [
      ...(await runDoctor(
        deps.runtime(),
        deps.signal,
        anthropicModel === undefined ? {} : { model: anthropicModel },
      )),
      // AH-CAP-4: the route the profile's `model` section names, and its endpoint.
      ...(profile?.model === undefined ? [] : await routeChecks(profile.model, deps)),
      // AH-CAP-4: each host tool the profile declares, started and asked.
      ...(profile === undefined
        ? []
        : await checkHostTools(
            profile,
            deps.env.credentialSource,
            deps.env.hostProcessDir,
            deps.signal,
          )),
    ];
    const healthy = checks.every((c) => c.ok || !c.required);
    if (args.json) deps.printer.json({ healthy, checks });
    else {
      for (const c of checks)
        deps.printer.out(
          `${c.ok ? 'ok  ' : c.required ? 'FAIL' : 'warn'} ${c.name.padEnd(14)} ${c.detail}`,
        );
      deps.printer.out(healthy ? 'healthy' : 'unhealthy: a required dependency is missing');
    }
    return healthy ? 0 : 1;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}

/** The profile's route as a run would resolve it (no flags), then its endpoint probed. */
async function routeChecks(section: ModelSection, deps: CliDeps): Promise<DoctorCheck[]> {
  let choice: RouteChoice;
  try {
    choice = resolveRoute({}, section, deps.env);
  } catch (error) {
    if (!(error instanceof CfhError)) throw error;
    return [{ name: 'model-route', ok: false, required: true, detail: error.message }];
  }
  if (choice.provider === 'scripted')
    return [{ name: 'model-route', ok: true, required: true, detail: 'scripted: no endpoint' }];
  const credential = choice.keyEnv === null ? 'none' : `env:${choice.keyEnv}`;
  return checkModelRoute(
    {
      provider: choice.provider,
      baseUrl: choice.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL,
      model: choice.model,
      credential,
      key: routeKey(choice, deps.env),
    },
    deps.signal,
  );
}

export async function reapCommand(
  args: { dryRun: boolean; json: boolean; run: readonly string[] },
  deps: CliDeps,
): Promise<number> {
  try {
    const bad = args.run.find((id) => !isRunId(id));
    if (bad !== undefined) {
      throw new ConfigError('invalid_run_id', `--run: '${bad}' is not a run id`, {
        field: '--run',
        value: bad,
      });
    }
    const entries = await reapOrphans(deps.runtime(), {
      dryRun: args.dryRun,
      logger: deps.logger,
      signal: deps.signal,
      runIds: args.run.length === 0 ? undefined : args.run,
      hostProcessDir: deps.env.hostProcessDir,
      draftRoot: deps.env.draftRoot,
    });
    if (args.json) deps.printer.json(entries);
    else {
      for (const e of entries)
        deps.printer.out(
          `${e.action.padEnd(12)} ${e.kind.padEnd(9)} ${e.name} (run ${e.runId}, owner ${e.owner})${e.error === undefined ? '' : `: ${e.error}`}`,
        );
      const n = entries.filter((e) => e.action === 'removed' || e.action === 'would-remove').length;
      deps.printer.out(`${args.dryRun ? 'would remove' : 'removed'} ${n} object(s)`);
    }
    return entries.some((e) => e.action === 'failed') ? 1 : 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}

export { imageBuildCommand } from './image.js';
