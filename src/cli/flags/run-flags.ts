// The flags of `cfh sandbox run`, each declared once. `lands` says which run kind takes it:
// `command` (a COMMAND after --), `agent` (--prompt), or `any`; a flag given to the other
// kind is refused by run-request.ts, so a mistyped invocation never silently drops it.
import { z } from 'zod';
import { BUDGET_FLAGS } from '../../config/budget-flags.js';
import { listFlag, switchFlag, valueFlag, type FlagDef } from './flag.js';
import { ARTIFACT_ROOT_FLAG, JSON_FLAG, PROFILE_FLAG } from './common-flags.js';
import { NETWORK_MODES } from '../../config/postures.js';

export const RUN_FLAGS = {
  profile: PROFILE_FLAG,
  workspace: valueFlag(
    '--workspace <dir>',
    'host directory mounted at /workspace (default: current directory)',
  ),
  workspaceMode: valueFlag(
    '--workspace-mode <mode>',
    "ro, rw, or draft: work on a copy and leave a patch for `cfh runs apply` (default: the profile's)",
    { choices: ['ro', 'rw', 'draft'] },
  ),
  hostObeyed: valueFlag(
    '--host-obeyed <mode>',
    "ro: in rw mounts the paths your tools obey (.git, .envrc, .vscode, ...) stay read-only; rw: the sandbox may write them (default: the profile's, else ro)",
    { choices: ['ro', 'rw'] },
  ),
  mount: listFlag(
    '--mount <src:dst[:ro|:rw]>',
    'extra bind mount, read-only unless :rw (repeatable)',
  ),
  user: valueFlag(
    '--user <uid[:gid]>',
    "run the sandbox as this numeric uid (gid: the same number unless given), over the profile's user; uid 0 only as --user 0",
  ),
  timeout: valueFlag('--timeout <seconds>', 'wall-time limit in seconds', {
    lands: 'command',
    // limits.wallTimeSeconds bounds a command's container; an agent run is bounded by its
    // budgets, so --timeout would be silently ignored there.
    hint: 'use --max-wall-time-seconds (the whole run) or --tool-timeout (each tool call)',
  }),
  memory: valueFlag('--memory <size>', 'memory limit, e.g. 512m or 2g'),
  cpus: valueFlag('--cpus <n>', 'CPU limit, e.g. 0.5 or 2'),
  pids: valueFlag('--pids <n>', 'process limit'),
  runtime: valueFlag('--runtime <runtime>', 'container runtime', { choices: ['runc', 'runsc'] }),
  image: valueFlag(
    '--image <ref>',
    "the image (default: the profile's): any local image, or toolchain:SET,... (cfh image build --with); never pulled",
  ),
  network: valueFlag('--network <mode>', "network posture (default: the profile's)", {
    choices: NETWORK_MODES,
  }),
  allow: listFlag(
    '--allow <dest>',
    'allow egress to DEST: host, host:port, *.domain, ip, ip/prefix (repeatable)',
  ),
  deny: listFlag('--deny <dest>', 'deny egress to DEST; deny wins over allow (repeatable)'),
  caBundle: valueFlag(
    '--ca-bundle <file>',
    "PEM file of CA certificates the sandbox trusts instead of the image's (a TLS-intercepting proxy); only its certificates are mounted",
  ),
  cfc: valueFlag(
    '--cfc <mode>',
    "information flow control: disabled, observe (record only), enforce-explicit, enforce-strict (refuse unlabelled sources) (default: the profile's cfc.mode)",
  ),
  label: listFlag(
    '--label <target=atoms>',
    'CFC label of the mount at TARGET: ATOM or c:ATOM confidentiality, i:ATOM integrity, comma-separated, e.g. /secrets=secret (repeatable)',
  ),
  artifactRoot: ARTIFACT_ROOT_FLAG,
  json: { ...JSON_FLAG, help: 'capture output and print one JSON result' },
  interactive: switchFlag(
    '-i, --interactive',
    "forward cfh's stdin to the command until its end (without -i the command's stdin is empty, /dev/null)",
    {
      lands: 'command',
      // The model is an agent run's only input: there is no stdin to forward to it.
      hint: "drop -i and -t (an agent run's model has no stdin)",
    },
  ),
  tty: switchFlag(
    '-t, --tty',
    'run the command on a pseudo-terminal (needs one on stdin; -it for an interactive shell); its output passes to the terminal unfiltered',
    { lands: 'command', hint: "drop -i and -t (an agent run's model has no stdin)" },
  ),
  env: listFlag(
    '-e, --env <name[=value]>',
    "set NAME in the sandbox's environment; NAME alone takes cfh's own value (repeatable; values are kept out of the evidence)",
  ),
  envFile: listFlag(
    '--env-file <file>',
    "read NAME=VALUE lines (docker's env-file syntax) into the sandbox's environment (repeatable)",
  ),
  prompt: valueFlag(
    '--prompt <text>',
    'agent run: the direct command to the model (instead of COMMAND)',
    { lands: 'agent' },
  ),
  context: listFlag('--context <file>', 'agent run: context material (repeatable)', {
    lands: 'agent',
  }),
  quote: listFlag(
    '--quote <file>',
    'agent run: quoted or retrieved material, never instructions (repeatable)',
    { lands: 'agent' },
  ),
  script: valueFlag(
    '--script <file>',
    'agent run: replay model turns from FILE (the scripted gateway)',
    { lands: 'agent' },
  ),
  provider: valueFlag(
    '--provider <name>',
    "agent run: the model provider, over the profile's model.provider",
    { choices: ['scripted', 'anthropic', 'openai-compatible'], lands: 'agent' },
  ),
  model: valueFlag(
    '--model <id>',
    "agent run: the model, over the profile's model.model and CFH_MODEL",
    { lands: 'agent' },
  ),
  baseUrl: valueFlag(
    '--base-url <url>',
    "agent run: the provider's endpoint, over the profile's model.baseUrl and OPENAI_BASE_URL / ANTHROPIC_BASE_URL",
    { lands: 'agent' },
  ),
  toolLifetime: valueFlag(
    '--tool-lifetime <lifetime>',
    "agent run: tool containers (default: the profile's)",
    { choices: ['per-run', 'per-call'], lands: 'agent' },
  ),
  toolTimeout: valueFlag('--tool-timeout <seconds>', "agent run: cap every tool's timeout", {
    lands: 'agent',
  }),
  plan: switchFlag(
    '--plan',
    'agent run: planning mode (every change denied; the answer kept as plan.md)',
    { lands: 'agent' },
  ),
  fromPlan: valueFlag(
    '--from-plan <runId>',
    'agent run: execute the plan of a completed planning run (as context; risky calls ask)',
    { lands: 'agent' },
  ),
  approve: listFlag(
    '--approve <ruleId>',
    'agent run: approve every call this policy rule asks about, for this run (repeatable)',
    { lands: 'agent' },
  ),
  approvals: valueFlag(
    '--approvals <file>',
    'agent run: YAML list of exact calls approved {rule, tool, argsDigest}',
    { lands: 'agent' },
  ),
  nonInteractive: switchFlag(
    '--non-interactive',
    'agent run: never prompt for approval, even on a terminal',
    { lands: 'agent' },
  ),
  failOnBlocked: switchFlag(
    '--fail-on-blocked',
    "agent run: exit 1 (failed, blocked_calls) when any call was denied or left unapproved (default: the profile's failOnBlocked)",
    { lands: 'agent' },
  ),
  events: {
    spec: '--events <format>',
    help: "stream the run's event records to stdout as they are appended, the same lines as events.jsonl; the command's output and the agent's answer then go only to the evidence (not with --json)",
    schema: z.enum(['jsonl']).optional(),
    choices: ['jsonl'],
  },
} as const satisfies Readonly<Record<string, FlagDef>>;

const camel = (flag: string): string =>
  flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

/** One `--max-…` flag per agent budget (config/budget-flags.ts names them). */
export const BUDGET_RUN_FLAGS: Readonly<Record<string, FlagDef<z.ZodOptional<z.ZodString>>>> =
  Object.fromEntries(
    BUDGET_FLAGS.map((b) => [
      camel(b.flag),
      valueFlag(`--${b.flag} <n>`, `agent run budget: ${b.help}`, { lands: 'agent' }),
    ]),
  );

/** The budget flags given, by budget field. */
export function budgetOverrides(
  values: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const b of BUDGET_FLAGS) {
    const value = values[camel(b.flag)];
    if (value !== undefined) out[b.field] = value;
  }
  return out;
}
