// The command line's flags over a profile (`--timeout`, `--network`, `--max-model-turns`...):
// each one applied, recorded as an override for the snapshot, and the result parsed as a
// profile again, so an out-of-range flag is refused naming the flag the user typed.
import path from 'node:path';
import { BUDGET_FLAGS, parseBudgetFlag } from '../../config/budget-flags.js';
import { Profile } from '../../config/profile-schema.js';
import { parsePositiveNumber, parseSize } from '../../config/size.js';
import { describeIssues } from '../../config/zod-issues.js';
import { checkEngineLimits } from '../../config/engine-limits.js';
import { ConfigError } from '../../errors.js';

/** The flags that change the profile a run is planned from. */
export interface ProfileFlags {
  readonly timeout?: string | undefined;
  readonly memory?: string | undefined;
  readonly cpus?: string | undefined;
  readonly pids?: string | undefined;
  readonly runtime?: string | undefined;
  readonly network?: string | undefined;
  readonly allow?: readonly string[] | undefined;
  readonly deny?: readonly string[] | undefined;
  /** Agent runs: budget field → the flag's text (`--max-model-turns 3`). */
  readonly budgets?: Readonly<Partial<Record<string, string>>> | undefined;
  readonly toolLifetime?: string | undefined;
  readonly toolTimeout?: string | undefined;
  /** `--workspace-mode ro|rw|draft`, over the profile's `workspace.mode`. */
  readonly workspaceMode?: string | undefined;
  /** `--host-obeyed ro|rw`, over the profile's `hostObeyed` (src/host-obeyed.ts). */
  readonly hostObeyed?: string | undefined;
  /** `--image REF`, over the profile's `image` (any local image; cfh never pulls). */
  readonly image?: string | undefined;
  /** `--fail-on-blocked`: over the profile's `failOnBlocked` (agent runs). */
  readonly failOnBlocked?: boolean | undefined;
  /** `--ca-bundle FILE`, over the profile's `network.caBundle`. */
  readonly caBundle?: string | undefined;
}

export function applyOverrides(
  base: Profile,
  options: ProfileFlags,
  spelled: (p: string) => string,
): { profile: Profile; overrides: Record<string, string> } {
  const overrides: Record<string, string> = {};
  const limits = { ...base.limits };
  if (options.timeout !== undefined) {
    limits.wallTimeSeconds = parsePositiveNumber('--timeout', options.timeout, false);
    overrides.timeout = options.timeout;
  }
  if (options.memory !== undefined) {
    parseSize('--memory', options.memory);
    limits.memory = options.memory;
    overrides.memory = options.memory;
  }
  if (options.cpus !== undefined) {
    limits.cpus = parsePositiveNumber('--cpus', options.cpus, false);
    overrides.cpus = options.cpus;
  }
  if (options.pids !== undefined) {
    limits.pids = parsePositiveNumber('--pids', options.pids, true);
    overrides.pids = options.pids;
  }
  let runtime: string = base.runtime;
  if (options.runtime !== undefined) {
    runtime = options.runtime;
    overrides.runtime = options.runtime;
  }
  const network = { ...base.network };
  if (options.network !== undefined) {
    network.mode = options.network as Profile['network']['mode'];
    overrides.network = options.network;
  }
  if (options.allow !== undefined && options.allow.length > 0) {
    network.allow = [...network.allow, ...options.allow];
    overrides.allow = options.allow.join(' ');
  }
  if (options.deny !== undefined && options.deny.length > 0) {
    network.deny = [...network.deny, ...options.deny];
    overrides.deny = options.deny.join(' ');
  }
  if (options.caBundle !== undefined) {
    // Relative to where cfh was started, as the shell spelled it (like --mount).
    network.caBundle = path.resolve(spelled(options.caBundle));
    overrides['ca-bundle'] = options.caBundle;
  }
  const budgets = { ...base.budgets };
  for (const flag of BUDGET_FLAGS) {
    const text = options.budgets?.[flag.field];
    if (text === undefined) continue;
    budgets[flag.field] = parseBudgetFlag(flag, text);
    overrides[flag.flag] = text;
  }
  let toolLifetime: string = base.toolLifetime;
  if (options.toolLifetime !== undefined) {
    toolLifetime = options.toolLifetime;
    overrides['tool-lifetime'] = options.toolLifetime;
  }
  let toolTimeoutSeconds = base.toolTimeoutSeconds;
  if (options.toolTimeout !== undefined) {
    toolTimeoutSeconds = parsePositiveNumber('--tool-timeout', options.toolTimeout, false);
    overrides['tool-timeout'] = options.toolTimeout;
  }
  let workspace = base.workspace;
  if (options.workspaceMode !== undefined) {
    workspace = { ...base.workspace, mode: options.workspaceMode as Profile['workspace']['mode'] };
    overrides['workspace-mode'] = options.workspaceMode;
  }
  let hostObeyed: string = base.hostObeyed;
  if (options.hostObeyed !== undefined) {
    hostObeyed = options.hostObeyed;
    overrides['host-obeyed'] = options.hostObeyed;
  }
  let image = base.image;
  if (options.image !== undefined) {
    image = options.image;
    overrides.image = options.image;
  }
  let failOnBlocked = base.failOnBlocked;
  if (options.failOnBlocked === true) {
    failOnBlocked = true;
    overrides['fail-on-blocked'] = 'true';
  }
  const candidate = {
    ...base,
    image,
    failOnBlocked,
    workspace,
    hostObeyed,
    runtime,
    limits,
    network,
    budgets,
    toolLifetime,
    toolTimeoutSeconds,
  };
  const parsed = Profile.safeParse(candidate);
  if (!parsed.success) {
    throw new ConfigError(
      'invalid_override',
      flagNames(describeIssues(parsed.error, { schema: Profile, commandLine: candidate })),
      {},
    );
  }
  // What the engine would refuse at create or start (memory, CPUs, tmpfs) fails now.
  checkEngineLimits(parsed.data.limits, {
    memory: options.memory === undefined ? undefined : '--memory',
    cpus: options.cpus === undefined ? undefined : '--cpus',
  });
  return { profile: parsed.data, overrides };
}

const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  'limits.wallTimeSeconds': '--timeout',
  'limits.memory': '--memory',
  'limits.cpus': '--cpus',
  'limits.pids': '--pids',
  runtime: '--runtime',
  'network.mode': '--network',
  'workspace.mode': '--workspace-mode',
  hostObeyed: '--host-obeyed',
  toolLifetime: '--tool-lifetime',
  toolTimeoutSeconds: '--tool-timeout',
  ...Object.fromEntries(BUDGET_FLAGS.map((f) => [`budgets.${f.field}`, `--${f.flag}`])),
};

/** Override errors name the flag the user typed, not the profile field behind it. */
function flagNames(message: string): string {
  return message.replace(
    /(^|; )(limits\.\w+|budgets\.\w+|runtime|network\.mode|workspace\.mode|hostObeyed|toolLifetime|toolTimeoutSeconds)(?=:)/g,
    (_m, sep: string, field: string) => `${sep}${FLAG_OF_FIELD[field] ?? field}`,
  );
}
