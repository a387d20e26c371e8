// From the flags of `sandbox run` to one typed request of its kind. A flag that does not
// land in the kind given (an agent flag without --prompt, a command flag with it) is
// refused, naming every such flag, so nothing the user typed is silently ignored.
import { ConfigError } from '../../errors.js';
import type { AgentRunRequest, CommandRunRequest, RunRequest } from '../commands/run-args.js';
import { givenFlags, longName, readFlags, type FlagTable } from './flag.js';
import { BUDGET_RUN_FLAGS, RUN_FLAGS, budgetOverrides } from './run-flags.js';

function refuseMisplaced(raw: Readonly<Record<string, unknown>>, kind: 'command' | 'agent'): void {
  const other = kind === 'agent' ? 'command' : 'agent';
  const tables: FlagTable[] = [RUN_FLAGS, BUDGET_RUN_FLAGS];
  const misplaced = tables.flatMap((table) => {
    const only: FlagTable = Object.fromEntries(
      Object.entries(table).filter(([, def]) => def.lands === other),
    );
    return givenFlags(only, raw).map((flag) => {
      const def = Object.values(only).find((d) => longName(d) === flag);
      return { flag, hint: def?.hint };
    });
  });
  if (misplaced.length === 0) return;
  const names = misplaced.map((m) => m.flag).join(', ');
  if (kind === 'command') {
    throw new ConfigError(
      'agent_option_without_prompt',
      `${names}: only for agent runs; give --prompt TEXT`,
      { field: misplaced[0]?.flag },
    );
  }
  const hint = misplaced.find((m) => m.hint !== undefined)?.hint;
  throw new ConfigError(
    'command_option_with_prompt',
    `${names}: not for agent runs${hint === undefined ? '; give a COMMAND after -- instead of --prompt' : `; ${hint}`}`,
    { field: misplaced[0]?.flag },
  );
}

/** The request of the run kind the flags ask for, or a ConfigError naming what is wrong. */
export function runRequestOf(
  raw: Readonly<Record<string, unknown>>,
  command: readonly string[],
): RunRequest {
  const o = readFlags(RUN_FLAGS, raw);
  const budgets = budgetOverrides(readFlags(BUDGET_RUN_FLAGS, raw));
  const common = {
    profile: o.profile,
    workspace: o.workspace,
    workspaceMode: o.workspaceMode,
    hostObeyed: o.hostObeyed,
    mounts: o.mount,
    user: o.user,
    timeout: o.timeout,
    memory: o.memory,
    cpus: o.cpus,
    pids: o.pids,
    runtime: o.runtime,
    image: o.image,
    network: o.network,
    allow: o.allow,
    deny: o.deny,
    caBundle: o.caBundle,
    cfc: o.cfc,
    labels: o.label,
    artifactRoot: o.artifactRoot,
    json: o.json,
    events: o.events,
    env: o.env,
    envFiles: o.envFile,
  };
  if (o.events !== undefined && o.json) {
    // Both would be stdout; the --json result's fields are in report.json and the last events.
    throw new ConfigError(
      'events_and_json',
      '--events: not with --json (both are written to stdout); give one',
      { field: '--events' },
    );
  }
  if (o.prompt === undefined) {
    refuseMisplaced(raw, 'command');
    const request: CommandRunRequest = {
      ...common,
      kind: 'command',
      command,
      interactive: o.interactive,
      tty: o.tty,
    };
    return request;
  }
  if (command.length > 0) {
    throw new ConfigError(
      'prompt_and_command',
      'command: give either --prompt or a COMMAND after --, not both',
      { field: 'command' },
    );
  }
  refuseMisplaced(raw, 'agent');
  const request: AgentRunRequest = {
    ...common,
    kind: 'agent',
    prompt: o.prompt,
    context: o.context,
    quote: o.quote,
    script: o.script,
    provider: o.provider,
    model: o.model,
    baseUrl: o.baseUrl,
    toolLifetime: o.toolLifetime,
    toolTimeout: o.toolTimeout,
    budgets,
    plan: o.plan,
    fromPlan: o.fromPlan,
    approve: o.approve,
    approvals: o.approvals,
    nonInteractive: o.nonInteractive,
    failOnBlocked: o.failOnBlocked,
  };
  return request;
}
