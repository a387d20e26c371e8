// snapshot.json (cfh.snapshot/1): the run-start configuration, written before any container
// exists. Its schema is where AH-INV-2's list lives: the selected model and adapter (or
// `null`, stated, for a command run), credential by reference, workspace and working
// directory, enabled tools and child profiles, resource bounds, policy profile, prompt
// slots, mounts with their modes (AH-CONT-2) and the network posture (AH-CONT-4).
// Parts owned by other layers (the resolved profile, labels) are kept open (looseObject):
// the schema names what the audit relies on, not every field those layers add.
import { z } from 'zod';
import {
  PermissionPolicy,
  ResourceScope,
  RiskClass,
  SideEffectClass,
} from '../../config/vocabulary.js';
import { Count, IsoTime, PrefixedSha256, RunIdString, Sha256Hex } from './common.js';
import { LabelRecord } from './events-cfc.js';
import { ResumedFrom } from './resume.js';
import { NetworkMode } from '../../config/postures.js';

export const SNAPSHOT_SCHEMA = 'cfh.snapshot/1';

const Digested = z.strictObject({ chars: Count, digest: PrefixedSha256 });

export const SnapshotModel = z.looseObject({
  adapter: z.string().min(1),
  /** Provider and credential source by reference (`env:ANTHROPIC_API_KEY`, `none`). */
  route: z.record(z.string(), z.string()),
  languageModel: z.boolean(),
  notice: z.string().optional(),
});

export const SnapshotMount = z.looseObject({
  source: z.string(),
  target: z.string(),
  mode: z.enum(['ro', 'rw']),
});

export const SnapshotContainerSpec = z.looseObject({
  name: z.string(),
  image: z.string(),
  user: z.string(),
  workingDir: z.string(),
  mounts: z.array(SnapshotMount),
  readOnlyRootfs: z.boolean(),
  capDrop: z.array(z.string()),
  capAdd: z.array(z.string()),
  noNewPrivileges: z.boolean(),
  init: z.boolean(),
  privileged: z.boolean(),
  /** 'none', or the guard container whose network namespace it joins. */
  networkMode: z.union([z.literal('none'), z.strictObject({ join: z.string() })]),
  limits: z.record(z.string(), z.number()),
  envNames: z.array(z.string()),
  seccomp: z.looseObject({ sha256: Sha256Hex, enforcement: z.string() }),
});

export const SnapshotIo = z.strictObject({
  stdin: z.enum(['null', 'forwarded']),
  tty: z.boolean(),
});

/** `hmac-sha256:<key id>:<hex>` under the machine's digest key, or `unavailable`. */
const KeyedDigest = z.union([
  z.string().regex(/^hmac-sha256:[0-9a-f]{16}:[0-9a-f]{64}$/),
  z.literal('unavailable'),
]);

const CommandEnvRecord = z.discriminatedUnion('from', [
  z.strictObject({ from: z.literal('flag'), digest: KeyedDigest }),
  z.strictObject({ from: z.literal('host'), digest: KeyedDigest }),
  z.strictObject({
    from: z.literal('file'),
    file: z.string(),
    line: z.number().int().positive(),
    digest: KeyedDigest,
  }),
]);

export const SnapshotNetwork = z.looseObject({
  mode: NetworkMode,
  allow: z.array(z.string()),
  deny: z.array(z.string()),
  /** `--ca-bundle` / `network.caBundle`: the certificates mounted, by digest (AH-INV-2). */
  caBundle: z
    .strictObject({
      source: z.string(),
      real: z.string(),
      file: z.string(),
      target: z.string(),
      env: z.array(z.string()),
      sha256: Sha256Hex,
      sourceSha256: Sha256Hex,
      certificates: z.number().int().positive(),
      fingerprints: z.array(Sha256Hex),
    })
    .optional(),
  /** `no-interface`: `lo` alone (`loopback: true` since loopback sockets are allowed). */
  enforcement: z.looseObject({
    kind: z.enum(['no-interface', 'egress-gateway']),
    loopback: z.boolean().optional(),
  }),
});

/**
 * A registered runtime binary that is gVisor's (`runsc`, `/usr/bin/runsc`, `runsc-2022`):
 * the engine's registration, not the runtime name a profile asks for, makes a run `strong`.
 */
export function isGvisorBinary(binary: string): boolean {
  return /^runsc([-_.][A-Za-z0-9._-]*)?$/.test(binary.split('/').pop() ?? '');
}

/** `reduced` < `standard` < `strong` (gVisor); docs/operators.md "Assurance levels". */
export const SnapshotAssurance = z.strictObject({
  level: z.enum(['standard', 'reduced', 'strong']),
  notes: z.array(z.string()),
  /** Each reason the level is reduced (AH-DIAG-2); absent in runs recorded before it. */
  reasons: z
    .array(
      z.strictObject({
        code: z.enum([
          'seccomp-not-applied',
          'seccomp-widened',
          'root-user',
          'host-tools',
          'runtime-not-gvisor',
          // CFC observe: diagnostic, never enforcement (AH-CFC-15).
          'cfc-observe',
        ]),
        detail: z.string(),
      }),
    )
    .optional(),
  /** The isolation the level rests on, as the engine was found to apply it; absent before it. */
  basis: z
    .array(z.strictObject({ code: z.enum(['container', 'gvisor']), detail: z.string() }))
    .optional(),
});

export const SnapshotBudgets = z.looseObject({
  maxModelTurns: z.number(),
  maxToolCalls: z.number(),
  maxParallelToolCalls: z.number(),
  maxWallTimeSeconds: z.number(),
  maxInputTokens: z.number(),
  maxOutputTokens: z.number(),
  maxTotalCost: z.number().optional(),
  maxToolResultChars: z.number(),
  maxRetriesPerModelCall: z.number(),
  maxRetriesPerToolCall: z.number(),
});

export const PromptSlotsRecord = z.strictObject({
  directCommand: Digested,
  context: z.array(Digested),
  quoted: z.array(Digested),
});

/**
 * Who proposes the calls of an agent run when it is not cfh's model gateway: an MCP client
 * (`cfh mcp`), as its initialize request named itself. Its text carries no prompt authority:
 * such a run has no direct command (AH-CFC-3).
 */
export const SnapshotModelSide = z.strictObject({
  kind: z.literal('mcp-client'),
  transport: z.literal('stdio'),
  /** As the client said in `initialize`: a claim, not an authenticated identity. */
  client: z.strictObject({ name: z.string(), version: z.string() }),
  protocolVersion: z.string().nullable(),
  directCommand: z.null(),
});
export type SnapshotModelSide = z.infer<typeof SnapshotModelSide>;

/** An approved plan a run executes (`--from-plan`): the planning run and plan.md's digest. */
export const FromPlan = z.strictObject({ runId: RunIdString, sha256: Sha256Hex }).nullable();

/** Who may answer an approval and how (the mediator's approval setup). */
export const ApprovalSetupRecord = z.strictObject({
  user: z.string(),
  interactive: z.boolean(),
  notInteractiveBecause: z.string().nullable(),
  preApprovedRules: z.array(z.string()),
  file: z.strictObject({ path: z.string(), sha256: z.string(), calls: Count }).nullable(),
  surfaces: z.array(z.string()),
});

/**
 * The run's CFC configuration (AH-CFC-14/15): the mode, where it came from, any fallback
 * (with owner and retirement condition when it reduces assurance), and the labels planning
 * gave each source and sink. Every run records it, command runs too.
 */
export const SnapshotCfc = z.strictObject({
  mode: z.enum(['disabled', 'observe', 'enforce-explicit', 'enforce-strict']),
  modeSource: z.enum(['profile', 'flag', 'default']),
  fallback: z
    .strictObject({ from: z.string(), to: z.string(), owner: z.string(), retireWhen: z.string() })
    .nullable(),
  modelClearance: z.array(z.string()),
  mounts: z.array(
    z.strictObject({
      target: z.string(),
      writable: z.boolean(),
      label: z
        .strictObject({ confidentiality: z.array(z.string()), integrity: z.array(z.string()) })
        .nullable(),
      clearance: z.array(z.string()),
      /**
       * `flag`: `--label` replaced the profile's label; `parent`: a child run's, raised to
       * its delegating run's label of the same host tree (absent before it was recorded);
       * `written`: raised to what earlier runs wrote into the tree (cfc/written-labels.ts).
       */
      labelSource: z.enum(['profile', 'flag', 'parent', 'written']).optional(),
      /** `written`: the runs whose writes raised it (the latest 16 of each tree). */
      writtenBy: z.array(z.string()).optional(),
      /** Raised by what runs wrote: the label and clearance of the configuration alone. */
      configured: z
        .strictObject({
          label: z
            .strictObject({
              confidentiality: z.array(z.string()),
              integrity: z.array(z.string()),
            })
            .nullable(),
          clearance: z.array(z.string()),
        })
        .optional(),
      inWorkload: z.boolean(),
      withheldBecause: z.string().optional(),
    }),
  ),
  destinations: z.array(
    z.strictObject({
      destination: z.string(),
      label: z.strictObject({
        confidentiality: z.array(z.string()),
        integrity: z.array(z.string()),
      }),
      clearance: z.array(z.string()),
      requires: z.array(z.string()),
    }),
  ),
  sinks: z.record(z.string(), z.unknown()),
  /**
   * The workload's environment values that are sources (cfc/env-labels.ts): every
   * `--env`/`--env-file` one and each profile `env:` one labelled; names and labels, never
   * a value. Absent before it was recorded.
   */
  env: z
    .array(
      z.strictObject({
        name: z.string(),
        label: z
          .strictObject({ confidentiality: z.array(z.string()), integrity: z.array(z.string()) })
          .nullable(),
        labelSource: z.enum(['profile', 'flag']),
        /** False: kept out of exec's container's environment (enforce modes). */
        inWorkload: z.boolean(),
        withheldBecause: z.string().optional(),
      }),
    )
    .optional(),
  unlabelled: z.array(z.string()),
  /** The input-capture record of the direct command (agent runs), or null. */
  promptCapture: z.string().nullable(),
});
export type SnapshotCfc = z.infer<typeof SnapshotCfc>;

/** A host tool's CFC labels as the flow decision judges it (cfc/label-map.ts HostToolLabels). */
export const HostToolLabelsRecord = z.strictObject({
  /** null: the operator gave its result no label (`unlabelled`). */
  result: LabelRecord.nullable(),
  clearance: z.array(z.string()),
  requires: z.array(z.string()),
  readsBeforeWrite: z.boolean(),
  /** The operator declared it a declassifier (its result carries resultLabel alone). */
  declassifies: z.boolean().default(false),
});
export type HostToolLabelsRecord = z.infer<typeof HostToolLabelsRecord>;

/** One tool as the mediator decides it: what policy and the flow decision read of it. */
export const MediationTool = z.strictObject({
  name: z.string(),
  executor: z.enum(['sandbox', 'host']),
  riskClass: RiskClass,
  sideEffectClass: SideEffectClass,
  resourceScope: ResourceScope,
  permissionPolicy: PermissionPolicy,
  /** A host tool's labels (and `delegate`'s); null for a sandbox tool. */
  cfc: HostToolLabelsRecord.nullable(),
});
export type MediationTool = z.infer<typeof MediationTool>;

/**
 * What the mediator decides with (agent runs), fixed before the first call, so the audit
 * re-derives each permission decision and flow decision with the same functions
 * (audit/checks-policy.ts, checks-cfc-derive.ts): the run's facts as policy reads them, the
 * contract of every tool known at the start (the built-ins on the surface, `delegate`, exec
 * host tools, the MCP tools a profile names), and, per MCP entry exposing `*`, the labels of
 * a tool it does not name (such a tool's contract is its `host_tools_listed` record).
 */
export const SnapshotMediation = z.strictObject({
  facts: z.strictObject({
    mode: z.enum(['run', 'plan']),
    workspaceMode: z.enum(['direct', 'draft']),
    network: NetworkMode,
    rwMounts: z.boolean(),
    /** Planning mode: a FIFO a mount holds, through which a command could reach the host. */
    mountChannel: z.string().nullable(),
    fromPlan: z.boolean(),
  }),
  tools: z.array(MediationTool),
  unnamedMcpLabels: z.record(z.string(), HostToolLabelsRecord),
});
export type SnapshotMediation = z.infer<typeof SnapshotMediation>;

/** Context compaction of an agent run (AH-LIFE-7): threshold, state, provider support. */
export const SnapshotContext = z.strictObject({
  compactAt: z.union([z.literal('disabled'), z.number().positive()]),
  windowTokens: z.number().int().positive().nullable(),
  windowSource: z.enum(['profile', 'model', 'unknown']),
  thresholdTokens: z.number().int().positive().nullable(),
  state: z.enum(['armed', 'disabled', 'unavailable']),
  mechanism: z.enum(['summary-request']).nullable(),
  keepRecentTurns: z.number().int().positive(),
  provider: z.strictObject({
    adapter: z.string(),
    native: z.array(z.string()),
    used: z.literal(false),
    why: z.string(),
  }),
});
/**
 * An interactive session (`cfh serve --stdio`): its id, how turns run, the authority it was
 * opened with (what a restore must match, AH-INT-4), and the run it continues, if restored.
 */
export const SnapshotSession = z.strictObject({
  id: RunIdString,
  transport: z.enum(['stdio']),
  turns: z.literal('serial'),
  authority: z.record(z.string(), z.unknown()),
  restoredFrom: z
    .strictObject({ runId: RunIdString, lastSeq: Count, lastHash: Sha256Hex })
    .nullable(),
});
export type SnapshotSession = z.infer<typeof SnapshotSession>;

export const Snapshot = z.strictObject({
  schema: z.literal(SNAPSHOT_SCHEMA),
  cfhVersion: z.string(),
  runId: RunIdString,
  createdAt: IsoTime,
  kind: z.enum(['sandbox-command', 'agent']),
  caller: z.looseObject({
    host: z.string(),
    pid: z.number().int(),
    start: z.string(),
    uid: z.number().int().optional(),
    gid: z.number().int().optional(),
    user: z.string().optional(),
  }),
  /** null: no model takes part (a command run), said rather than left out. */
  model: SnapshotModel.nullable(),
  profile: z.strictObject({
    name: z.string(),
    sources: z.array(z.string()),
    digest: z.string(),
    overrides: z.record(z.string(), z.unknown()),
    resolved: z.looseObject({ name: z.string(), tools: z.array(z.string()).optional() }),
  }),
  image: z.strictObject({ ref: z.string(), id: z.string() }),
  engine: z.strictObject({ serverVersion: z.string(), apiVersion: z.string() }),
  runtime: z.strictObject({
    requested: z.string(),
    engineRuntime: z.string(),
    runtimeArgs: z.array(z.string()).optional(),
    /** The binary the engine registered for each runtime name the run uses (non-runc). */
    binaries: z.record(z.string(), z.string()).optional(),
  }),
  sandboxUser: z.strictObject({ user: z.string(), reason: z.string() }),
  workspace: z.strictObject({
    hostPath: z.string(),
    target: z.string(),
    /** `draft`: the run works on a copy (mounted rw) and leaves a patch (draft mode). */
    mode: z.enum(['ro', 'rw', 'draft']),
    draft: z
      .looseObject({
        dir: z.string(),
        source: z.string(),
        baseline: z.looseObject({ file: z.string(), sha256: Sha256Hex }),
      })
      .optional(),
  }),
  /**
   * Class 9 (src/host-obeyed.ts): `ro`, the host-obeyed entries at the top of each rw mount
   * (`guarded`: their targets) were mounted read-only at `readOnly`; `rw`, the operator named
   * them writable. Absent only in runs recorded before it.
   */
  hostObeyed: z
    .strictObject({
      mode: z.enum(['ro', 'rw']),
      readOnly: z.array(z.string()),
      guarded: z.array(z.string()),
    })
    .optional(),
  workingDir: z.string(),
  /** The command of a command run; null for an agent run (its tools run commands). */
  command: z.array(z.string()).nullable(),
  /** `-i`/`-t`: the command's stdin (cfh's, or empty) and whether it had a TTY. */
  io: SnapshotIo.optional(),
  /** `--env`/`--env-file`: per name its source and a keyed digest, never the value. */
  commandEnv: z.record(z.string(), CommandEnvRecord).optional(),
  network: SnapshotNetwork,
  limits: z.record(z.string(), z.number()),
  containerSpec: SnapshotContainerSpec,
  mountChecks: z.looseObject({ method: z.string() }),
  seccomp: z.looseObject({
    file: z.literal('seccomp.json'),
    sha256: Sha256Hex,
    source: z.string(),
    enforcement: z.string(),
  }),
  assurance: SnapshotAssurance,
  tools: z.array(z.string()),
  childProfiles: z.array(z.unknown()),
  promptSlots: PromptSlotsRecord.optional(),
  /** Agent runs whose calls an MCP client proposes (`cfh mcp`); absent: cfh's own model. */
  modelSide: SnapshotModelSide.optional(),
  /** Absent only in runs recorded before CFC. */
  cfc: SnapshotCfc.optional(),
  budgets: SnapshotBudgets.optional(),
  /** Host tools of the run (AH-TOOL-7): their channels and bounded authority; open here. */
  hostTools: z.array(z.unknown()).optional(),
  /** Agent runs: `plan` blocks every mutation (planning mode); `run` executes. */
  mode: z.enum(['run', 'plan']).optional(),
  fromPlan: FromPlan.optional(),
  /** `cfh sandbox resume`: the run this one continues (AH-ART-4/5). */
  resumedFrom: ResumedFrom.optional(),
  /** A child run (AH-DEL-5): the parent run and call that started it, and how deep it is. */
  delegatedBy: z
    .strictObject({
      runId: RunIdString,
      callId: z.string(),
      profile: z.string(),
      depth: z.number().int().positive(),
      /** How many levels of delegation are still allowed below this child. */
      depthLeft: z.number().int().nonnegative(),
    })
    .optional(),
  approvals: ApprovalSetupRecord.optional(),
  /** Agent runs: what every decision is made with (absent in runs recorded before it). */
  mediation: SnapshotMediation.optional(),
  toolContainer: z
    .strictObject({
      lifetime: z.enum(['per-run', 'per-call']),
      name: z.string(),
      fileToolName: z.string(),
      /** The file-tool container's image, cfh's sandbox image (absent in older logs). */
      fileToolImage: z.string().optional(),
      timeoutCapSeconds: z.number().nullable(),
      /** Issue 21: per-call's warm pools (null or absent: none). */
      pool: z
        .strictObject({
          size: z.number().int().positive(),
          kinds: z.array(
            z.strictObject({
              kind: z.enum(['workload', 'file-tool']),
              specDigest: z.string().regex(/^[0-9a-f]{64}$/),
            }),
          ),
        })
        .nullable()
        .optional(),
    })
    .optional(),
  context: SnapshotContext.optional(),
  session: SnapshotSession.optional(),
});
export type Snapshot = z.infer<typeof Snapshot>;
