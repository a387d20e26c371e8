// The flags of `cfh mcp`: the run options of `cfh sandbox run` that make sense for a run
// whose model side is an MCP client (no prompt, script or provider: the client proposes the
// calls; no -i/-t or --events: stdin and stdout carry the protocol), each declared once, in
// run-flags.ts.
import type { FlagDef } from './flag.js';
import { BUDGET_RUN_FLAGS, RUN_FLAGS } from './run-flags.js';

const R = RUN_FLAGS;

export const MCP_FLAGS = {
  profile: R.profile,
  workspace: R.workspace,
  workspaceMode: R.workspaceMode,
  hostObeyed: R.hostObeyed,
  mount: R.mount,
  user: R.user,
  memory: R.memory,
  cpus: R.cpus,
  pids: R.pids,
  runtime: R.runtime,
  image: R.image,
  network: R.network,
  allow: R.allow,
  deny: R.deny,
  caBundle: R.caBundle,
  cfc: R.cfc,
  label: R.label,
  artifactRoot: R.artifactRoot,
  env: R.env,
  envFile: R.envFile,
  toolLifetime: R.toolLifetime,
  toolTimeout: R.toolTimeout,
  approve: R.approve,
  approvals: R.approvals,
  failOnBlocked: R.failOnBlocked,
} as const satisfies Readonly<Record<string, FlagDef>>;

export { BUDGET_RUN_FLAGS as MCP_BUDGET_FLAGS };
