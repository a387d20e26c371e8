// Everything a sandbox run needs, resolved and validated before any side effect
// (AH-INV-4): profile and overrides, mount table, user, artifact root, container spec.
// Pure apart from reading profiles and resolving host paths (sandbox/source-resolution.ts).
import { createHash } from 'node:crypto';
import path from 'node:path';
import {
  isBuiltinReference,
  loadProfile,
  type LoadedProfile,
} from '../../config/profile-loader.js';
import { resolveChildren } from '../../config/child-profiles.js';
import type { Profile } from '../../config/profile-schema.js';
import { parseSize } from '../../config/size.js';
import type { CfhEnvironment } from '../../config/env.js';
import { resolveCommandEnv, type CommandEnvSource } from '../../config/command-env.js';
import { ConfigError, errorMessage } from '../../errors.js';
import { canonicalJson } from '../../evidence/canonical-json.js';
import { newRunId } from '../../evidence/run-id.js';
import { resolveImage, type ResolvedImage } from '../../image/source.js';
import { parseDestinations } from '../../network/destination.js';
import { HOSTS_FILE, deriveContainerSpec } from '../../sandbox/derive-spec.js';
import {
  WORKSPACE_TARGET,
  checkArtifactRoot,
  checkHostProcessLedger,
  checkSigningKey,
  parseMountFlag,
  resolveMounts,
  type MountRequest,
} from '../../sandbox/mount-policy.js';
import { egressNames, type EgressNames } from '../../sandbox/egress-sandbox.js';
import { CA_BUNDLE_FILE, loadCaBundle, type CaBundle } from '../../sandbox/ca-bundle.js';
import {
  checkNotInsideWritableMount,
  checkClearOfAncestors,
  checkSwappable,
  checkWorkspaceWrittenOnlyByMode,
} from '../../sandbox/mount-trust.js';
import { planDraft, type DraftPlan } from '../../sandbox/draft-root.js';
import { holdHostObeyed, type HostObeyedPlan } from '../../sandbox/host-obeyed-mounts.js';
import { spelledWorkingDirectory } from '../../sandbox/source-resolution.js';
import { resolveArtifactRoot } from './artifact-root.js';
import { applyOverrides, type ProfileFlags } from './profile-overrides.js';
import {
  checkEngineSockets,
  engineSockets,
  type SocketCheck,
} from '../../sandbox/engine-sockets.js';
import { checkWritableMounts } from '../../sandbox/writable.js';
import { findFifos, type SpecialFileCheck } from '../../sandbox/special-files.js';
import { ownerLabels, type OwnerIdentity } from '../../sandbox/owner.js';
import {
  resolveSandboxUser,
  type HostIdentity,
  type SandboxUser,
} from '../../sandbox/sandbox-user.js';
import type { ContainerSpec } from '../../substrate/container-spec.js';
import { BUILTIN_TOOLS } from '../../tools/builtins.js';
import { ToolRegistry } from '../../tools/contract.js';
import { CFH_VERSION } from '../../version.js';
import { credentialDigest, digestKey } from '../../tools/host/credentials.js';
import { policyFor, runFactsOf } from '../ops/policy-explain.js';
import type { CfcPlan } from '../../cfc/label-map.js';
import type { InheritedLabels } from '../../cfc/inherited-labels.js';
import type { SourceTrees } from '../../host-trees.js';
import { planRunCfc } from '../cfc/cfc-plan.js';
import { readWrittenRecords } from '../../cfc/written-store.js';
import { checkHostToolSharing } from '../cfc/host-tool-sharing.js';
import { checkStoreRecords, storeTrees, type StoreTree } from '../cfc/host-tool-stores.js';
import {
  promptFileContexts,
  type PlannedPromptFile,
  type PromptFile,
} from '../cfc/prompt-files.js';
import { movedRecords } from '../cfc/written-moved.js';
import { hasEgress } from '../../config/postures.js';

/** What a sandbox run is asked (the CLI's flags, parsed): the profile's flags beside. */
export interface SandboxRunOptions extends ProfileFlags {
  readonly profile?: string | undefined;
  /** A child run's profile, resolved by its parent (child-profiles.ts): not loaded again. */
  readonly loaded?: LoadedProfile | undefined;
  readonly workspace?: string | undefined;
  readonly mounts?: readonly string[] | undefined;
  readonly artifactRoot?: string | undefined;
  /**
   * A child run: host paths of the runs that delegated it, which no mount of it may hold or
   * lie in (their run directories, their draft copies: childGuard).
   */
  readonly ancestors?: readonly string[] | undefined;
  /**
   * `profiles show --resolved`: the plan is shown, never run, so an rw mount the sandbox
   * user cannot write is not refused (nothing will write it).
   */
  readonly describing?: boolean | undefined;
  /** `--user UID[:GID]`, over the profile's `user`; uid 0 only as a literal `0`. */
  readonly user?: string | undefined;
  /** `--plan`: no unix sockets in the sandbox, and the mounts searched for FIFOs. */
  readonly planning?: boolean | undefined;
  /** `-i`: cfh's stdin is streamed into the command's; without it the command's is empty. */
  readonly interactive?: boolean | undefined;
  /** `-t`: the command runs on a pseudo-terminal. */
  readonly tty?: boolean | undefined;
  /** `--env K=V` / `--env K`, in order. */
  readonly env?: readonly string[] | undefined;
  /** `--env-file FILE`, in order (before every --env). */
  readonly envFiles?: readonly string[] | undefined;
  /** `--cfc MODE`, over the profile's `cfc.mode`. */
  readonly cfc?: string | undefined;
  /** `--label TARGET=ATOM,...`, over the label of the mount at TARGET (repeatable). */
  readonly labels?: readonly string[] | undefined;
  /** A child run's: the labels its parent holds the trees it hands on under (AH-CFC-12). */
  readonly inherited?: InheritedLabels | undefined;
  /** An agent run's `--context`/`--quote` files: sources of its model context (AH-CFC-7). */
  readonly promptFiles?: readonly PromptFile[] | undefined;
  readonly command: readonly string[];
}

export interface PlannedImage extends Pick<ResolvedImage, 'kind' | 'ref' | 'buildCommand'> {
  /** The egress guard's image (cfh's sandbox image), when the posture has network. */
  readonly guard: Pick<ResolvedImage, 'ref' | 'buildCommand'> | undefined;
  /**
   * The file-tool container's image, always cfh's sandbox image: that container holds every
   * mount, withheld ones included, so nothing of the workload's image may run in it
   * (agent-tool-setup.ts toolSpecs). Preflight asks for it when the profile names a file
   * tool (`fileToolsUsed`).
   */
  readonly fileTools: Pick<ResolvedImage, 'ref' | 'buildCommand'>;
  readonly fileToolsUsed: boolean;
}
/** What the evidence keeps of one `--env`/`--env-file` variable: never its value. */
export type CommandEnvRecord = CommandEnvSource & { readonly digest: string };

export interface RunPlan {
  readonly runId: string;
  /** The runs that delegated to it, the nearest last (none for a top run): written-leases.ts. */
  readonly ancestry: readonly string[];
  readonly profile: Profile;
  readonly profileSources: readonly string[];
  readonly profileDigest: string;
  /** CLI flags that changed the profile, recorded in the snapshot. */
  readonly overrides: Readonly<Record<string, string>>;
  readonly workspace: string;
  /**
   * `direct`: the host workspace is mounted (`ro` or `rw`). `draft`: the sandbox works on a
   * private copy and the run leaves a patch; the host tree is only read (governance
   * extension, "Draft vs commit policy"). Until the run session makes the copy, the spec
   * mounts the host workspace read-only in its place, so a plan used before that never
   * writes the host.
   */
  readonly workspaceMode: 'direct' | 'draft';
  /** A child run's delegating runs' paths no mount touches (SandboxRunOptions.ancestors). */
  readonly ancestors?: readonly string[] | undefined;
  /** Where the draft is made and who gets it; set in `draft` mode only. */
  readonly draft: DraftPlan | undefined;
  readonly artifactRoot: string;
  readonly sandboxUser: SandboxUser;
  readonly wallTimeMs: number;
  readonly outputBytes: number;
  readonly spec: ContainerSpec;
  /** The image the spec names, how it was chosen, and the command that builds it. */
  readonly image: PlannedImage;
  /** Names of the egress network, guard and config, when the posture has network. */
  readonly egress: EgressNames | undefined;
  /** The CA bundle's certificates, read and checked now; the session writes them. */
  readonly caBundle: CaBundle | undefined;
  /** What planning found about the mounts: who else could replace a source, socket search. */
  readonly mountChecks: {
    readonly swappable: ReturnType<typeof checkSwappable>;
    readonly engineSockets: SocketCheck;
    /** Planning mode: FIFOs in the mounts, a channel out that `ro` does not close. */
    readonly specialFiles?: SpecialFileCheck | undefined;
  };
  /**
   * The variables `--env`/`--env-file` gave (their values are in `spec.env` only): name →
   * source and a digest keyed with the machine's digest key, so a value is never guessable
   * from the evidence (tools/host/credentials.ts).
   */
  readonly commandEnv: Readonly<Record<string, CommandEnvRecord>>;
  /** Where labels come from and may go (cfc/label-map.ts); made for every run (AH-CFC-15). */
  readonly cfc: CfcPlan;
  /** The host tree each mount source reaches, by identity: what a child's mounts are compared with. */
  readonly hostTrees: readonly SourceTrees[];
  /** The trees cleared host tools may keep what they receive in (engine/cfc/host-tool-stores.ts). */
  readonly storeTrees: readonly StoreTree[];
  /** The prompt files as labelled, before they are read (engine/cfc/prompt-files.ts). */
  readonly promptFiles: readonly PlannedPromptFile[];
  /** Class 9: the paths a host tool obeys, held read-only at the top of each rw mount. */
  readonly hostObeyed: HostObeyedPlan;
}

export function planSandboxRun(
  options: SandboxRunOptions,
  env: CfhEnvironment,
  host: HostIdentity,
  owner: OwnerIdentity,
): RunPlan {
  if (options.command.length === 0) {
    throw new ConfigError('command_missing', 'command: nothing to run (write it after --)', {
      field: 'command',
    });
  }
  // The start gate hands the command to `env -i`, which would read NAME=VALUE as a variable.
  if (options.command[0]?.includes('=') === true) {
    throw new ConfigError(
      'command_name_invalid',
      `command: '${options.command[0]}' contains '='; give the program's path`,
      { field: 'command', value: options.command[0] },
    );
  }
  // Relative paths are the operator's: taken from the working directory as the shell
  // spelled it, so a link on the way there is walked like any other (AH-CONT-1).
  const cwd = spelledWorkingDirectory(env.workingDirectory);
  // Only where the spelling differs from the kernel's name, so errors keep the name typed.
  const spelled = (p: string): string => (cwd === process.cwd() ? p : path.resolve(cwd, p));
  const profileRef = options.profile ?? 'default';
  // A profile file's relative mounts are relative to it: found from the same directory.
  const loaded =
    options.loaded ??
    loadProfile(isBuiltinReference(profileRef) ? profileRef : spelled(profileRef));
  const { profile, overrides } = applyOverrides(loaded.profile, options, spelled);
  checkProfileTools(profileRef, profile);
  // AH-DEL-2: every child profile resolves (its ceiling, its own children to the depth
  // bound) before anything exists; a child's own plan is checked by its parent's runner.
  if (options.loaded === undefined) {
    resolveChildren(profile, profile.budgets.maxDelegationDepth);
    // One host tool state, one clearance, across the run and every child it may delegate to.
    checkHostToolSharing(profile, profile.budgets.maxDelegationDepth, env.credentialSource.PATH);
  }
  // The policy compiles (unique ids, valid regexes) before anything exists (AH-INV-4).
  policyFor(profile, runFactsOf(profile));
  // Every destination is parsed now, whatever the mode, so a typo fails before any run.
  parseDestinations('network.allow', profile.network.allow);
  parseDestinations('network.deny', profile.network.deny);
  // Validate every size now, not when the spec is derived.
  const outputBytes = parseSize('limits.outputBytes', profile.limits.outputBytes);
  const commandEnv = resolveCommandEnv(options, env.credentialSource, cwd);
  const hasCommandEnv = Object.keys(commandEnv.values).length > 0;

  // Resolved, once, with the other mount sources: a missing workspace or one that is not a
  // directory is refused there, on the object that would be mounted.
  const workspaceName = path.resolve(cwd, options.workspace ?? '.');
  const draftMode = profile.workspace.mode === 'draft';
  const requests: MountRequest[] = [
    {
      source: workspaceName,
      target: WORKSPACE_TARGET,
      // Draft: a placeholder the session replaces with the copy (see RunPlan.workspaceMode).
      mode: profile.workspace.mode === 'draft' ? 'ro' : profile.workspace.mode,
      origin: '--workspace',
    },
    ...profile.mounts.map((m, i) => ({ ...m, origin: `profile mounts[${i}]` })),
    ...(options.mounts ?? []).map((m, i) => parseMountFlag(m, i, cwd)),
  ];
  const { mounts, trees } = resolveMounts(requests);
  // The workspace is the object its mount resolved to: one resolution, one answer.
  const workspaceMount = mounts.find((m) => m.target === WORKSPACE_TARGET);
  if (workspaceMount === undefined) throw new Error('the workspace mount was not resolved');
  const workspace = workspaceMount.source;
  // Mount exactly what was checked, in every container of the run (AH-CONT-1).
  // Compared by identity, not spelling: a bind mount is another name of one tree.
  checkNotInsideWritableMount(mounts, trees);
  checkWorkspaceWrittenOnlyByMode(mounts, trees, workspaceMount, profile.workspace.mode);
  checkClearOfAncestors(mounts, options.ancestors ?? []);
  // What earlier runs wrote into host trees stays in their labels (cfc/written-labels.ts),
  // the stores of this run's host tools among them.
  const written = readWrittenRecords(env.writtenLabelsDir);
  checkStoreRecords(profile.hostTools, written);
  // AH-CFC-14: a bad --cfc/--label, or enforce-strict with an unlabelled source, is refused
  // here, before any container exists.
  const cfc = planRunCfc(profile, mounts, trees, WORKSPACE_TARGET, {
    mode: options.cfc,
    labels: options.labels,
    describing: options.describing,
    inherited: options.inherited,
    written,
    commandEnv: Object.keys(commandEnv.values),
  });
  // A file the host executes or obeys later (`.git/hooks`, `.envrc`) is not the sandbox's
  // to write: held read-only at the top of each rw mount (draft: the copy is the sandbox's,
  // and an apply writes such a path only when named). Checked like every other source.
  const hostObeyed = holdHostObeyed(mounts, profile.hostObeyed);
  // Draft: the host workspace is never mounted; the session checks the copy it mounts.
  const mounted = draftMode ? mounts.filter((m) => m.target !== WORKSPACE_TARGET) : mounts;
  const swappable = checkSwappable([...mounted, ...hostObeyed.mounts], profile.runtime, host.uid);

  const artifactRoot = resolveArtifactRoot(spelled(options.artifactRoot ?? env.artifactRoot), host);
  checkArtifactRoot(artifactRoot, mounts);
  // Host-tool credentials get a digest keyed with the machine's digest key (made on first use).
  const makesDigestKey =
    hasCommandEnv ||
    profile.hostTools.some((t) => Object.values(t.env).some((v) => !('value' in v)));
  checkSigningKey(env.keyDir, artifactRoot, mounts, makesDigestKey);
  checkHostProcessLedger(env.hostProcessDir, mounts);
  checkHostProcessLedger(env.writtenLabelsDir, mounts, 'written-labels records');

  const sandboxUser = resolveSandboxUser(profile.user, workspaceMount, host, options.user);
  if (options.user !== undefined) overrides.user = options.user;
  const draft = draftMode
    ? planDraft(
        workspaceMount,
        env.draftRoot,
        mounts,
        artifactRoot,
        sandboxUser,
        host,
        env.draftMaxBytes,
        env.draftPatchMaxBytes,
      )
    : undefined;
  const sockets = checkEngineSockets(mounts, sandboxUser.user, engineSockets(env.dockerHost));
  // After the containment refusals, which say more: every rw mount the sandbox would fail
  // to write is refused now, with the fixes, rather than every write inside failing with
  // EACCES (draft: the copy is the sandbox user's).
  if (options.describing !== true) checkWritableMounts(mounts, sandboxUser.user, host);
  const specialFiles = options.planning === true ? findFifos(mounted) : undefined;
  // Read now, once: a missing or wrong file fails before anything exists (AH-INV-4).
  const caBundle =
    profile.network.caBundle === undefined
      ? undefined
      : loadCaBundle(
          profile.network.caBundle,
          options.caBundle === undefined ? 'profile network.caBundle' : '--ca-bundle',
        );
  const runId = newRunId();
  const egress = hasEgress(profile.network.mode) ? egressNames(runId) : undefined;
  const image = resolveImage(profile.image, {
    baseDir: cwd,
    profileRef: options.image === undefined ? profileRef : undefined,
  });
  const spec = deriveContainerSpec({
    profile,
    imageRef: image.ref,
    user: sandboxUser.user,
    mounts: [...mounts, ...hostObeyed.mounts],
    command: options.command,
    containerName: `cfh-${runId}`,
    labels: ownerLabels(runId, owner, CFH_VERSION),
    usageGroup: runId,
    planning: options.planning === true,
    commandEnv: commandEnv.values,
    stdin: options.interactive === true ? 'forwarded' : 'null',
    tty: options.tty === true,
    egress:
      egress === undefined
        ? undefined
        : { guard: egress.guard, resolvConf: path.join(egress.configDir, 'resolv.conf') },
    // Written into the run directory by the session, before any container exists.
    caBundle: caBundle === undefined ? undefined : path.join(artifactRoot, runId, CA_BUNDLE_FILE),
    hosts: egress === undefined ? path.join(artifactRoot, runId, HOSTS_FILE) : undefined,
  });
  return {
    runId,
    ancestry: options.inherited?.ancestry ?? [],
    profile,
    profileSources: loaded.sources,
    profileDigest: createHash('sha256').update(canonicalJson(profile)).digest('hex'),
    overrides,
    workspace,
    workspaceMode: draftMode ? 'draft' : 'direct',
    ...(options.ancestors === undefined ? {} : { ancestors: options.ancestors }),
    draft,
    artifactRoot,
    sandboxUser,
    wallTimeMs: Math.round(profile.limits.wallTimeSeconds * 1000),
    outputBytes,
    spec,
    image: {
      kind: image.kind,
      ref: image.ref,
      buildCommand: image.buildCommand,
      // The egress guard runs as root with NET_ADMIN and execs iptables from its image: it
      // is always cfh's own sandbox image, never the workload's (a local image's iptables
      // could install nothing).
      guard: egress === undefined ? undefined : resolveImage('builtin:sandbox', { baseDir: cwd }),
      fileTools: resolveImage('builtin:sandbox', { baseDir: cwd }),
      fileToolsUsed: usesFileTools(profile.tools),
    },
    egress,
    caBundle,
    mountChecks: { swappable, engineSockets: sockets, specialFiles },
    commandEnv: recordCommandEnv(commandEnv, env.credentialSource),
    cfc,
    hostTrees: trees,
    storeTrees: storeTrees(profile.hostTools),
    // Most runs name no prompt file: the search for moved trees (a bounded walk) only then.
    promptFiles:
      options.promptFiles === undefined || options.promptFiles.length === 0
        ? []
        : promptFileContexts(options.promptFiles, {
            runId,
            cfc,
            trees,
            written: [...written, ...movedRecords(written, trees)],
          }),
    hostObeyed,
  };
}

/** Whether a tool the profile names runs in the file-tool container (builtins.ts runsIn). */
function usesFileTools(tools: readonly string[]): boolean {
  return BUILTIN_TOOLS.some((t) => t.runsIn === 'file-tool' && tools.includes(t.name));
}

/** Names, sources and keyed digests; the key is read (or made) only when there is a value. */
function recordCommandEnv(
  commandEnv: ReturnType<typeof resolveCommandEnv>,
  hostEnv: NodeJS.ProcessEnv,
): Record<string, CommandEnvRecord> {
  const names = Object.keys(commandEnv.values).sort();
  if (names.length === 0) return {};
  const key = digestKey(hostEnv);
  return Object.fromEntries(
    names.map((name) => {
      const source = commandEnv.sources[name] ?? { from: 'flag' as const };
      return [name, { ...source, digest: credentialDigest(key, commandEnv.values[name] ?? '') }];
    }),
  );
}

/**
 * The profile's `tools` allowlist, checked now by the registry the agent run will build, so
 * an unknown name is a configuration error before any side effect, not a failure mid-run.
 */
export function checkProfileTools(ref: string, profile: Profile): void {
  try {
    new ToolRegistry(BUILTIN_TOOLS, profile.tools);
  } catch (error) {
    const unknown = profile.tools.find((name) => !BUILTIN_TOOLS.some((t) => t.name === name));
    // Every name is known: the built-in tool set itself is broken, which no profile can fix.
    if (unknown === undefined) throw error;
    throw new ConfigError('unknown_tool', `profile ${ref}: ${errorMessage(error)}`, {
      profile: ref,
      field: 'tools',
      value: unknown,
    });
  }
}

/**
 * What a child of `parent` may not mount, in any mode (AH-DEL-1, AH-DEL-3): the paths its
 * parent's own ancestors hold, the parent's run directory (its evidence, and the children's
 * under it) and, in draft mode, the parent's copy, which a child writing it would make the
 * parent's change. `parent` is the plan the parent runs with (its draft copy mounted).
 */
export function childGuard(parent: RunPlan, parentDir: string): readonly string[] {
  const copy =
    parent.workspaceMode === 'draft'
      ? parent.spec.mounts.find((m) => m.target === WORKSPACE_TARGET)?.source
      : undefined;
  return [
    ...(parent.ancestors ?? []),
    parentDir,
    ...(copy === undefined || copy === parent.workspace ? [] : [path.dirname(copy)]),
  ];
}
