// The profile: everything a sandbox is allowed, as data. Strict objects throughout, so an
// unknown key is an error that names the key.
import { z } from 'zod';
import { ImageSource } from './image-schema.js';
import { HostTools } from './host-tools-schema.js';
import { PolicyRule } from './policy-schema.js';
import { AtomList, CfcSection, LabelSpec } from './cfc-schema.js';
import { ContextSection } from './context-schema.js';
import { ModelSection } from './model-schema.js';
import { NetworkMode } from './postures.js';

export const MountMode = z.enum(['ro', 'rw']);
export type MountMode = z.infer<typeof MountMode>;

// The workspace is mounted read-only, read-write, or as `draft`: the sandbox works on a
// private copy and the run leaves a patch that `cfh runs apply` commits to the host
// (governance extension, "Draft vs commit policy").
export const WorkspaceMode = z.enum(['ro', 'rw', 'draft']);
export type WorkspaceMode = z.infer<typeof WorkspaceMode>;

/**
 * How far each workspace mode reaches the host workspace: read-only, a copy written back
 * only when a person applies it, written in place. What may narrow a run (a resume, a
 * child) compares by this one order.
 */
export const WORKSPACE_REACH: Readonly<Record<WorkspaceMode, number>> = { ro: 0, draft: 1, rw: 2 };

const sizeField = z.union([z.string().min(1), z.number().int().positive()]);

export const ProfileMount = z.strictObject({
  source: z.string().min(1),
  target: z.string().min(1),
  mode: MountMode.default('ro'),
  // AH-CFC-2: what is read from it carries this label; none is `unlabelled` (cfc/label-map.ts).
  label: LabelSpec.optional(),
  // Confidentiality atoms a write into it may carry, beyond its own label's.
  clearance: AtomList.optional(),
});
export type ProfileMount = z.infer<typeof ProfileMount>;

// AH-CONT-4: the final shape of the network posture. Only `disabled` is enforced by this
// release; the others are refused at validation until the egress gateway lands.
export const NetworkPosture = z.strictObject({
  mode: NetworkMode,
  allow: z.array(z.string().min(1)).default([]),
  deny: z.array(z.string().min(1)).default([]),
  // A PEM file of CA certificates the sandbox trusts instead of the image's bundle (a proxy
  // that re-signs TLS); only its certificates are mounted (sandbox/ca-bundle.ts).
  caBundle: z.string().min(1).optional(),
  // CFC (cfc/label-map.ts): the label of data from a destination (default integrity
  // `network`), the confidentiality atoms it may receive (default none), and the integrity
  // atoms every influence on a call that can reach it must have.
  labels: z.record(z.string().min(1), LabelSpec).default({}),
  clearance: z.record(z.string().min(1), AtomList).default({}),
  requires: z.record(z.string().min(1), AtomList).default({}),
});
export type NetworkPosture = z.infer<typeof NetworkPosture>;

export const Limits = z.strictObject({
  memory: sizeField,
  cpus: z.number().positive().max(1024),
  pids: z.number().int().min(8).max(1_000_000),
  wallTimeSeconds: z
    .number()
    .positive()
    .max(7 * 24 * 3600),
  outputBytes: sizeField,
  tmpfs: sizeField,
});

// Issue 4: explicit, recorded grants on top of the default-deny filter. The flags are
// optional so an explicit `false` can be told from "not said" (a contradiction check).
export const SeccompGrantsSchema = z.strictObject({
  allowPtrace: z.boolean().optional(),
  allowIoUring: z.boolean().optional(),
  allowUserNamespaces: z.boolean().optional(),
  // The i386 and x32 ABIs (32-bit programs). Without it a syscall through either kills
  // the calling thread (SIGSYS); refused with network disabled and under runsc.
  allow32BitAbis: z.boolean().optional(),
  allow: z.array(z.string().min(1)).default([]),
});

// Issue 5: hard limits of an agent run (AH-LIFE-4), overridable from the CLI.
export const AgentBudgets = z.strictObject({
  maxModelTurns: z.number().int().positive().default(20),
  maxToolCalls: z.number().int().positive().default(50),
  maxParallelToolCalls: z.number().int().positive().default(4),
  // Bounded like limits.wallTimeSeconds: the deadline is a timer, and a longer one would not
  // be armed at all (a run's timer takes at most 2^32-1 ms).
  maxWallTimeSeconds: z
    .number()
    .positive()
    .max(7 * 24 * 3600)
    .default(900),
  maxInputTokens: z.number().int().positive().default(500_000),
  maxOutputTokens: z.number().int().positive().default(50_000),
  maxTotalCost: z.number().positive().optional(),
  maxToolResultChars: z.number().int().positive().default(20_000),
  maxRetriesPerModelCall: z.number().int().nonnegative().default(2),
  maxRetriesPerToolCall: z.number().int().nonnegative().default(1),
  // AH-DEL-*: how many children of this run may run side by side (each child profile's own
  // maxParallel bounds it further), and how deep delegation may go below this run.
  maxParallelChildren: z.number().int().positive().max(16).default(4),
  maxDelegationDepth: z.number().int().min(0).max(4).default(2),
});

export const Workspace = z.strictObject({
  mode: WorkspaceMode,
  label: LabelSpec.optional(),
  clearance: AtomList.optional(),
});

// Class 9 (src/host-obeyed.ts): in an rw mount, the paths a tool on the host obeys later
// (`.git`, `.envrc`, `.vscode`, ...) stay read-only (`ro`) unless the operator names them
// writable (`rw`, or `--host-obeyed rw`).
export const HostObeyedMode = z.enum(['ro', 'rw']);
export type HostObeyedMode = z.infer<typeof HostObeyedMode>;

export const ToolLifetime = z.enum(['per-run', 'per-call']);
export type ToolLifetime = z.infer<typeof ToolLifetime>;

/** The most warm containers one kind's pool may hold: each idles with the run's limits. */
export const MAX_POOL_SIZE = 8;
export const DEFAULT_POOL_SIZE = 2;

// Issue 21: under `toolLifetime: per-call`, how many pristine containers of each kind the
// tools use are created and started ahead (src/tools/tool-pool.ts); 0 creates each at its
// call. Unused under per-run: no pool exists.
export const ToolPool = z.strictObject({
  size: z
    .number({ error: 'pool.size must be a whole number from 0 to 8' })
    .int('pool.size must be a whole number from 0 to 8')
    .min(0, 'pool.size must be a whole number from 0 to 8 (0 disables the pool)')
    .max(
      MAX_POOL_SIZE,
      `pool.size must be at most ${MAX_POOL_SIZE}: each warm container idles with the run's limits`,
    )
    .default(DEFAULT_POOL_SIZE),
});
export type ToolPool = z.infer<typeof ToolPool>;

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a valid environment name');

const ProfileBase = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'lower-case letters, digits, . _ -'),
  description: z.string(),
  // A local reference, a toolchain or a Dockerfile (image-schema.ts): only the rootfs; the
  // user, seccomp, mounts and limits are the profile's whatever the image says.
  image: ImageSource,
  runtime: z.enum(['runc', 'runsc']),
  // `auto`: the invoking user, or an unprivileged uid when cfh runs as root. uid 0 inside
  // only when written here literally.
  user: z
    .string()
    .regex(/^(auto|(0|[1-9]\d{0,9}):(0|[1-9]\d{0,9}))$/, "'auto' or 'UID:GID' in decimal"),
  workspace: Workspace,
  hostObeyed: HostObeyedMode.default('ro'),
  mounts: z.array(ProfileMount),
  network: NetworkPosture,
  limits: Limits,
  env: z.record(envName, z.string()),
  seccomp: SeccompGrantsSchema.default({ allow: [] }),
  // Issue 5: the parent tool surface of an agent run is exactly this list (AH-TOOL-1).
  tools: z.array(z.string().regex(/^[a-z][a-z0-9_]*$/)).default(['read_file', 'list_dir', 'grep']),
  budgets: AgentBudgets.default(AgentBudgets.parse({})),
  // Issue 5: the tool container lives for the whole run (created at first use, reused) or
  // is created fresh for every call; either way it is removed before the run ends.
  toolLifetime: ToolLifetime.default('per-run'),
  pool: ToolPool.default(ToolPool.parse({})),
  // Caps every tool's own timeout (seconds); the lower of the two applies.
  toolTimeoutSeconds: z
    .number()
    .positive()
    .max(24 * 3600)
    .optional(),
  // The mediator's rules for this profile, before the tool contracts and the built-in
  // defaults (src/mediator/policy.ts).
  policy: z.array(PolicyRule).max(1000).default([]),
  // Trusted tools on the host, outside every container (src/config/host-tools-schema.ts):
  // their tools join this profile's surface, and only this profile's (AH-CONT-3).
  hostTools: HostTools.default([]),
  // An agent run whose calls were denied or left unapproved ends `failed`
  // (`blocked_calls`, exit 1) instead of `completed`: CI notices the agent was blocked.
  failOnBlocked: z.boolean().default(false),
  // Information flow control (CFC integration profile): the mode, the model's clearance and
  // per-tool sink requirements (src/config/cfc-schema.ts, src/cfc/).
  cfc: CfcSection.default(CfcSection.parse({})),
  // Context compaction (AH-LIFE-6/7): when the model context is summarised (context-schema.ts).
  context: ContextSection.default(ContextSection.parse({})),
  // The model route of agent runs (model-schema.ts); absent: chosen from flags and the
  // environment as without a profile.
  model: ModelSection.optional(),
});

/** A profile layer's own fields, every one optional so `extends` can fill the rest. */
const layerFields = {
  extends: z.string().min(1).optional(),
  name: ProfileBase.shape.name.optional(),
  description: z.string().optional(),
  image: ImageSource.optional(),
  runtime: ProfileBase.shape.runtime.optional(),
  user: ProfileBase.shape.user.optional(),
  workspace: ProfileBase.shape.workspace.optional(),
  hostObeyed: HostObeyedMode.optional(),
  mounts: z.array(ProfileMount).optional(),
  network: z
    .strictObject({
      mode: NetworkPosture.shape.mode.optional(),
      allow: z.array(z.string().min(1)).optional(),
      deny: z.array(z.string().min(1)).optional(),
      caBundle: NetworkPosture.shape.caBundle,
      labels: z.record(z.string().min(1), LabelSpec).optional(),
      clearance: z.record(z.string().min(1), AtomList).optional(),
      requires: z.record(z.string().min(1), AtomList).optional(),
    })
    .optional(),
  limits: Limits.partial().optional(),
  env: z.record(envName, z.string()).optional(),
  seccomp: SeccompGrantsSchema.partial().optional(),
  tools: z.array(z.string().regex(/^[a-z][a-z0-9_]*$/)).optional(),
  budgets: AgentBudgets.partial().optional(),
  toolLifetime: ToolLifetime.optional(),
  pool: ToolPool.partial().optional(),
  toolTimeoutSeconds: ProfileBase.shape.toolTimeoutSeconds,
  policy: z.array(PolicyRule).max(1000).optional(),
  hostTools: HostTools.optional(),
  failOnBlocked: z.boolean().optional(),
  cfc: CfcSection.partial().optional(),
  context: ContextSection.partial().optional(),
  model: ModelSection.optional(),
};

/** A child profile's name: what the model passes to `delegate` as `profile`. */
export const ChildName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,39}$/, 'lower-case letters, digits, _ -, at most 40');

// AH-DEL-4: the structured return a child's final answer must be (a JSON Schema, checked
// before the parent sees it), and the most characters the parent's channel carries.
export const ChildReturns = z.strictObject({
  schema: z.record(z.string(), z.unknown()).optional(),
  maxChars: z.number().int().positive().max(100_000).default(4000),
});

/**
 * A child profile (AH-DEL-1/2, AH-CFC-12/12a): a profile layer of its own (the full
 * vocabulary; `extends` names its base, the built-in `default` when absent; never the
 * parent's: nothing transfers implicitly), plus what delegation adds.
 */
export const ChildEntry = z.strictObject({
  ...layerFields,
  returns: ChildReturns.default(ChildReturns.parse({})),
  // AH-CFC-12a: the confidentiality the child may observe at most (its model's clearance
  // and every labelled source it reads are held under it). Absent: its own profile's.
  ceiling: z.strictObject({ confidentiality: AtomList }).optional(),
  maxParallel: z.number().int().positive().max(16).default(2),
});
export type ChildEntry = z.infer<typeof ChildEntry>;

export const Children = z.record(ChildName, ChildEntry);

export const Profile = ProfileBase.extend({
  // AH-DEL-*: the child profiles a run of this profile may delegate to (the `delegate`
  // tool is on its surface only when there is one); resolved by child-profiles.ts.
  children: Children.default({}),
});
export type Profile = z.infer<typeof Profile>;

/** A profile file as written: every field optional so `extends` can fill the rest. */
export const ProfileFile = z.strictObject({ ...layerFields, children: Children.optional() });
export type ProfileFile = z.infer<typeof ProfileFile>;
