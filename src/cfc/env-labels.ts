// The environment values of exec's container as CFC sources (AH-CFC-2/10). A value the
// operator hands the sandbox with `--env`/`--env-file` is data exec reads as surely as a
// mounted file (`printf %s "$TOKEN" | rev`), so it has a label like a mount: the profile's
// `cfc.envLabels` or `--label env:NAME=ATOM,...` (the flag's over the profile's), and none
// is `unlabelled`. The profile's own `env:` map is configuration (PATH, LANG, a tool's
// settings, written in the profile and recorded with it) and is a source only where the
// operator labels it; a run whose PATH has no label is not a run with an unlabelled source.
//
// Under an enforce mode a labelled value whose confidentiality some other sink of the
// workload container is not cleared for is withheld from its environment, as such a mount
// is withheld from its mounts (label-map.ts withholdReason): exec never sees it, so every
// other exec still runs. An unlabelled value is not withheld: it stays, exec's reads carry
// `unlabelled`, and every exec is refused under `cfc:unlabelled` saying how to label it (or
// enforce-strict refuses the run at planning), rather than the operator's command losing a
// variable without a word. A command run's command is the operator's own and keeps every
// value, as it keeps every mount; its snapshot records the same plan.
import { isEnforcing, type LabelSpec } from '../config/cfc-schema.js';
import type { Profile } from '../config/profile-schema.js';
import { label } from './label.js';
import { CfcPlanError, withholdReason, type CfcPlan, type EnvLabel } from './label-map.js';

/** The `--label` target prefix that names an environment value. */
export const ENV_TARGET_PREFIX = 'env:';

export interface EnvLabelOptions {
  /** The names `--env`/`--env-file` gave (their values never come here). */
  readonly commandEnv: readonly string[];
  /** `--label env:NAME=...`, by NAME. */
  readonly flags: ReadonlyMap<string, LabelSpec>;
}

/**
 * `--label` values split by what they name: `env:NAME` ones by NAME, the rest (mount
 * targets) as given, for planCfc.
 */
export function splitEnvLabels<T extends { readonly target: string }>(
  labels: readonly (T & { readonly label: LabelSpec })[],
): { env: Map<string, LabelSpec>; mounts: T[] } {
  const env = new Map<string, LabelSpec>();
  const mounts: T[] = [];
  for (const l of labels)
    if (l.target.startsWith(ENV_TARGET_PREFIX))
      env.set(l.target.slice(ENV_TARGET_PREFIX.length), l.label);
    else mounts.push(l);
  return { env, mounts };
}

/**
 * The environment values that are sources, sorted: every command-line one, and each of the
 * profile's `env:` the operator labels (in `cfc.envLabels` or with `--label env:NAME`).
 * A `--label env:NAME` naming no value the run has is refused, as a `--label` naming no
 * mount is; a profile label naming none is not (a profile labels what it may be given).
 */
export function envSources(profile: Profile, options: EnvLabelOptions): string[] {
  const command = new Set(options.commandEnv);
  const labelled = (name: string): boolean =>
    name in profile.cfc.envLabels || options.flags.has(name);
  const fromProfile = Object.keys(profile.env).filter((n) => !command.has(n) && labelled(n));
  for (const name of options.flags.keys())
    if (!command.has(name) && !(name in profile.env))
      throw new CfcPlanError(
        `--label env:${name}: the run has no environment value ${name} (give it with --env, --env-file or the profile's env:)`,
      );
  return [...command, ...fromProfile].sort();
}

/**
 * `plan` with its environment sources: each labelled (flag over profile), withheld under an
 * enforce mode when a sink exec reaches is not cleared for it, and each without a label
 * listed in `unlabelled` (`env NAME`).
 */
export function withEnvLabels(plan: CfcPlan, profile: Profile, options: EnvLabelOptions): CfcPlan {
  const env = envSources(profile, options).map((name): EnvLabel => {
    const flagged = options.flags.get(name);
    const spec = flagged ?? profile.cfc.envLabels[name];
    const l = spec === undefined ? undefined : label(spec);
    const why =
      l === undefined || !isEnforcing(plan.mode)
        ? undefined
        : withholdReason(
            { target: `env ${name}`, label: l },
            plan.mounts,
            plan.destinations,
            plan.network,
          );
    const base = {
      name,
      label: l,
      labelSource: flagged === undefined ? 'profile' : 'flag',
    } as const;
    return why === undefined
      ? { ...base, inWorkload: true }
      : { ...base, inWorkload: false, withheldBecause: why };
  });
  return {
    ...plan,
    env,
    unlabelled: [
      ...plan.unlabelled,
      ...env.filter((e) => e.label === undefined).map((e) => `env ${e.name}`),
    ],
  };
}

/** The names withheld from exec's container's environment. */
export function withheldEnv(plan: CfcPlan): string[] {
  return (plan.env ?? []).filter((e) => !e.inWorkload).map((e) => e.name);
}
