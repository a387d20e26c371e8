// The flags of every command but `sandbox run` (run-flags.ts), one table per command.
import { ARTIFACT_ROOT_FLAG, JSON_FLAG, PROFILE_FLAG } from './common-flags.js';
import { defaultedFlag, listFlag, switchFlag, valueFlag, type FlagDef } from './flag.js';
import { RUN_FLAGS } from './run-flags.js';

type Table = Readonly<Record<string, FlagDef>>;

export const PROFILES_LIST_FLAGS = { json: JSON_FLAG } as const satisfies Table;

export const PROFILES_SHOW_FLAGS = {
  resolved: switchFlag('--resolved', 'resolve extends and derive the container spec'),
  workspace: valueFlag(
    '--workspace <dir>',
    'workspace to derive the spec for (default: current directory)',
  ),
  seccompOut: valueFlag(
    '--seccomp-out <file>',
    'write the derived seccomp filter (the exact engine JSON) to FILE',
  ),
} as const satisfies Table;

export const IMAGE_BUILD_FLAGS = {
  method: defaultedFlag(
    '--method <auto|offline|pull>',
    'auto tries a registry, then builds offline from Debian packages',
    'auto',
  ),
  offline: switchFlag('--offline', 'same as --method offline'),
  force: switchFlag('--force', 'rebuild even when the content tag is present'),
  with: listFlag(
    '--with <sets>',
    'a toolchain: the sandbox image plus these package sets (node, make, gcc, cxx, python-dev, pytest, go, rust)',
  ),
  packages: listFlag(
    '--packages <pkgs>',
    'a toolchain: plus these Debian packages (a,b or repeated)',
  ),
  dockerfile: valueFlag(
    '--dockerfile <file>',
    'build FILE through the engine (no network, nothing pulled: FROM a local image)',
  ),
  context: valueFlag('--context <dir>', "the Dockerfile's build context (default: its directory)"),
  buildArg: listFlag('--build-arg <name=value>', "a Dockerfile ARG's value (repeatable)"),
  profile: valueFlag('--profile <name|file>', "build whatever the profile's image: names"),
  json: JSON_FLAG,
} as const satisfies Table;

export const IMAGE_LS_FLAGS = { json: JSON_FLAG } as const satisfies Table;

export const IMAGE_RM_FLAGS = {
  all: switchFlag('--all', 'every image cfh image ls lists'),
  json: JSON_FLAG,
} as const satisfies Table;

export const POLICY_EXPLAIN_FLAGS = {
  profile: PROFILE_FLAG,
  plan: switchFlag('--plan', 'as in planning mode'),
  fromPlan: switchFlag('--from-plan', 'as in a run executing an approved plan'),
  workspaceMode: valueFlag('--workspace-mode <mode>', 'direct or draft'),
  cfc: valueFlag(
    '--cfc <mode>',
    "the CFC mode to judge the flow under (default: the profile's cfc.mode)",
  ),
  influence: valueFlag(
    '--influence <json>',
    'the label the call is proposed under, e.g. \'{"confidentiality":["secret"],"integrity":[]}\' (default: a fresh run\'s, integrity prompt:direct)',
  ),
  json: JSON_FLAG,
} as const satisfies Table;

export const CAPABILITIES_FLAGS = {
  json: { ...JSON_FLAG, help: 'JSON (the only format)' },
  profile: valueFlag(
    '--profile <name|file>',
    "also list the profile's host tools and their authority",
  ),
} as const satisfies Table;

export const DOCTOR_FLAGS = {
  json: JSON_FLAG,
  profile: valueFlag(
    '--profile <name|file>',
    "also check the profile's host tools (starts each one)",
  ),
} as const satisfies Table;

export const REAP_FLAGS = {
  dryRun: switchFlag('--dry-run', 'list what would be removed'),
  run: listFlag('--run <runId>', "only this run's objects (repeatable)"),
  json: JSON_FLAG,
} as const satisfies Table;

/** `runs list`, `runs show`, `runs diff`: where the runs are, and the format. */
export const RUNS_READ_FLAGS = {
  artifactRoot: ARTIFACT_ROOT_FLAG,
  json: JSON_FLAG,
} as const satisfies Table;

/** Class 9 (src/host-obeyed.ts): a held-back path an apply writes only when named. */
const HOST_OBEYED_PATH_FLAG = listFlag(
  '--host-obeyed <path>',
  'also write this held-back path your tools obey (.git/..., .envrc, ...), or everything below it (repeatable)',
);

export const RUNS_DIFF_FLAGS = {
  ...RUNS_READ_FLAGS,
  binary: switchFlag(
    '--binary',
    'a patch git apply takes whole: binary changes as git binary patches, from the kept contents',
  ),
  hostObeyed: {
    ...HOST_OBEYED_PATH_FLAG,
    help: 'with --binary: also carry this held-back path your tools obey, or everything below it (repeatable)',
  },
} as const satisfies Table;

export const RUNS_PRUNE_FLAGS = {
  olderThan: valueFlag('--older-than <duration>', 'age, from the run id: 90s, 30m, 12h, 7d, 2w'),
  keep: valueFlag('--keep <n>', 'always keep the N newest runs'),
  dryRun: switchFlag('--dry-run', 'list what would be removed'),
  artifactRoot: ARTIFACT_ROOT_FLAG,
  json: JSON_FLAG,
} as const satisfies Table;

export const RUNS_EXPORT_FLAGS = {
  format: defaultedFlag('--format <format>', 'otlp-json', 'otlp-json', { choices: ['otlp-json'] }),
  out: valueFlag(
    '--out <file>',
    'write it to FILE (default: stdout, never a terminal; - is stdout)',
  ),
  artifactRoot: ARTIFACT_ROOT_FLAG,
} as const satisfies Table;

export const RUNS_REPORT_FLAGS = {
  out: valueFlag(
    '--out <file>',
    'write it to FILE (default: stdout, never a terminal; - is stdout)',
  ),
  artifactRoot: ARTIFACT_ROOT_FLAG,
  json: JSON_FLAG,
} as const satisfies Table;

export const RUNS_APPLY_FLAGS = {
  yes: switchFlag('--yes', 'approve without a prompt (recorded as the approval surface)'),
  // commander reads `--3way` as `3way`.
  '3way': switchFlag(
    '--3way',
    'merge the host changes to a touched file where they do not overlap the run; else refuse, showing the conflicts',
  ),
  hostObeyed: HOST_OBEYED_PATH_FLAG,
  artifactRoot: ARTIFACT_ROOT_FLAG,
  json: JSON_FLAG,
} as const satisfies Table;

export const KEYS_INIT_FLAGS = { json: JSON_FLAG } as const satisfies Table;

/** `labels`, `labels forget`: what runs wrote into host trees. */
export const LABELS_FLAGS = { json: JSON_FLAG } as const satisfies Table;

export const AUDIT_FLAGS = {
  artifactRoot: ARTIFACT_ROOT_FLAG,
  json: JSON_FLAG,
  strict: switchFlag('--strict', 'a warn or an inconclusive check fails too'),
  requireSignature: switchFlag(
    '--require-signature',
    'every unsigned run fails, also one that started before the key was made',
  ),
  expected: valueFlag(
    '--expected <file>',
    'expected-failures ledger (conformance/expected-failures.yaml)',
  ),
  publicKey: valueFlag(
    '--public-key <file>',
    "the operator's public key (default: the key directory's)",
  ),
  manifest: switchFlag('--manifest', 'print the conformance manifest reconciled with the checks'),
  markdown: switchFlag(
    '--markdown',
    'with --manifest: the generated blocks docs/conformance.md holds',
  ),
} as const satisfies Table;

/**
 * `cfh serve --stdio`: the defaults every session of this process is opened with (the
 * params of session/open may name a profile, workspace, workspace mode, CFC mode and rules).
 */
export const SERVE_FLAGS = {
  stdio: switchFlag('--stdio', 'JSON-RPC 2.0 on stdin/stdout, one message a line (logs on stderr)'),
  profile: RUN_FLAGS.profile,
  workspace: RUN_FLAGS.workspace,
  workspaceMode: RUN_FLAGS.workspaceMode,
  hostObeyed: RUN_FLAGS.hostObeyed,
  mount: RUN_FLAGS.mount,
  network: RUN_FLAGS.network,
  allow: RUN_FLAGS.allow,
  deny: RUN_FLAGS.deny,
  cfc: RUN_FLAGS.cfc,
  artifactRoot: ARTIFACT_ROOT_FLAG,
  script: { ...RUN_FLAGS.script, help: 'replay model turns from FILE (the scripted gateway)' },
  provider: { ...RUN_FLAGS.provider, help: "the model provider, over the profile's" },
  model: { ...RUN_FLAGS.model, help: "the model, over the profile's and CFH_MODEL" },
  baseUrl: { ...RUN_FLAGS.baseUrl, help: "the provider's endpoint, over the profile's" },
  toolLifetime: { ...RUN_FLAGS.toolLifetime, help: "tool containers (default: the profile's)" },
  approve: {
    ...RUN_FLAGS.approve,
    help: 'approve every call this policy rule asks about, in every session (repeatable)',
  },
} as const satisfies Table;
