// The flags of `cfh sandbox resume RUN_ID`: the new direct command, the scripted stand-in,
// approvals given afresh, and the run options a resume may narrow (each checked by
// engine/resume/resume-narrowing.ts; one that broadens is refused with 125). Declared by picking
// `sandbox run`'s own definitions, so a flag means the same in both.
import { listFlag, valueFlag } from './flag.js';
import { BUDGET_RUN_FLAGS, RUN_FLAGS } from './run-flags.js';

const R = RUN_FLAGS;

export const RESUME_FLAGS = {
  prompt: valueFlag(
    '--prompt <text>',
    'a new direct command for the resumed run (captured afresh); without it the run continues under no prompt authority',
  ),
  script: R.script,
  provider: R.provider,
  model: R.model,
  baseUrl: R.baseUrl,
  artifactRoot: R.artifactRoot,
  json: R.json,
  events: R.events,
  network: R.network,
  allow: R.allow,
  deny: R.deny,
  memory: R.memory,
  cpus: R.cpus,
  pids: R.pids,
  runtime: R.runtime,
  workspaceMode: R.workspaceMode,
  mount: R.mount,
  cfc: R.cfc,
  toolLifetime: R.toolLifetime,
  toolTimeout: R.toolTimeout,
  tool: listFlag('--tool <name>', 'keep only these tools of the run (repeatable): fewer tools'),
  approve: R.approve,
  approvals: R.approvals,
  nonInteractive: R.nonInteractive,
  failOnBlocked: R.failOnBlocked,
} as const;

export const RESUME_BUDGET_FLAGS = BUDGET_RUN_FLAGS;
