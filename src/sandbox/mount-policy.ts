// Which host paths may enter a sandbox, and where. Every source is resolved once, to the
// object the kernel opens (source-resolution.ts), before any check, so a symlink cannot
// smuggle in a forbidden location and the identity every later container is held to is
// that of the object checked (AH-CONT-1, AH-CONT-2). A source named through a symlink
// anyone but root could have made is refused: a sandbox (writing as cfh's own user, or as
// any other non-root uid) could have left it, and would choose what is mounted.
import { existsSync, lstatSync, realpathSync, type BigIntStats } from 'node:fs';
import path from 'node:path';
import { ConfigError, ContainmentError } from '../errors.js';
import { keyPaths } from '../evidence/signing.js';
import type { MountMode } from '../config/profile-schema.js';
import type { MountIdentity, SpecMount } from '../substrate/container-spec.js';
import { ResolutionError, resolveObject, type ResolvedObject } from './source-resolution.js';
import { firstPlantableLink, plantedLinkText } from '../path-trust.js';
import type { SourceTrees } from '../host-trees.js';
import { sourceTreesOf, type MountEntry } from './mount-table.js';

/** Host trees that never enter a sandbox, directly or through a symlink. */
export const FORBIDDEN_HOST_TREES: readonly string[] = [
  '/proc',
  '/sys',
  '/dev',
  '/run',
  '/var/run',
  '/boot',
  '/etc',
];

/** Engine sockets, refused wherever they live. */
export const ENGINE_SOCKETS: readonly string[] = [
  '/var/run/docker.sock',
  '/run/docker.sock',
  '/run/containerd/containerd.sock',
];

/**
 * Paths inside the container that cfh owns. The image's system directories are among them:
 * the built-in tools run their binaries, interpreter, libraries and loader from there, by
 * absolute path, so no mount may replace that code (AH-CONT-1; tools/tool-container.ts).
 */
const RESERVED_TARGETS: readonly string[] = [
  '/',
  '/tmp',
  '/proc',
  '/sys',
  '/dev',
  '/etc',
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
];

export const WORKSPACE_TARGET = '/workspace';

export interface MountRequest {
  readonly source: string;
  readonly target: string;
  readonly mode: MountMode;
  /** Where the request came from, to name it in errors: `--mount`, `profile mounts[0]`. */
  readonly origin: string;
}

export function isWithin(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  // `..b` is a child named `..b`, not a way out: only `..` and `../…` leave the parent.
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !path.isAbsolute(rel));
}

function resolveSource(request: MountRequest): ResolvedObject {
  let object: ResolvedObject;
  try {
    object = resolveObject(request.source);
  } catch (error) {
    if (error instanceof ResolutionError && error.reason === 'changed') {
      throw new ContainmentError(
        'mount_source_changed',
        `${request.origin}: source ${error.message}; refusing to mount it`,
        { source: request.source },
      );
    }
    if (error instanceof ResolutionError && error.reason === 'unnamable') {
      throw new ConfigError('mount_source_invalid', `${request.origin}: source ${error.message}`, {
        field: request.origin,
        value: request.source,
      });
    }
    // The workspace is refused in its own words: it is what the run is about.
    const workspace = request.target === WORKSPACE_TARGET;
    throw new ConfigError(
      workspace ? 'workspace_missing' : 'mount_source_missing',
      `${request.origin}: ${workspace ? '' : 'source '}'${request.source}' does not exist`,
      { field: request.origin, value: request.source },
      workspace
        ? 'give an existing directory (without --workspace: the current directory)'
        : 'give an existing file or directory as SRC of SRC:DST',
    );
  }
  const real = object.real;
  for (const forbidden of FORBIDDEN_HOST_TREES) {
    // Compare against the realpath of the tree too: /var/run is a symlink to /run here.
    const trees = [forbidden, safeRealpath(forbidden)];
    if (trees.some((t) => t !== undefined && isWithin(real, t))) {
      throw new ConfigError(
        'mount_source_forbidden',
        `${request.origin}: source '${request.source}' resolves to '${real}', inside ${forbidden}, which never enters a sandbox`,
        { field: request.origin, value: request.source },
      );
    }
  }
  if (object.pseudoFileSystem !== undefined) {
    // By file system, not only by name: a procfs or sysfs mounted anywhere else.
    throw new ConfigError(
      'mount_source_forbidden',
      `${request.origin}: source '${request.source}' lies on the kernel's ${object.pseudoFileSystem} file system, which never enters a sandbox`,
      { field: request.origin, value: request.source },
    );
  }
  if (object.kind === 'other') {
    throw new ConfigError(
      'mount_source_forbidden',
      `${request.origin}: source '${request.source}' is neither a directory nor a regular file (a device, a FIFO)`,
      { field: request.origin, value: request.source },
    );
  }
  const sockets = ENGINE_SOCKETS.map((s) => safeRealpath(s) ?? s);
  if (sockets.includes(real) || object.kind === 'socket') {
    throw new ConfigError(
      'mount_source_forbidden',
      `${request.origin}: source '${request.source}' is a socket (engine sockets never enter a sandbox)`,
      { field: request.origin, value: request.source },
    );
  }
  refusePlantableLink(request, object);
  if (real === '/') {
    throw new ConfigError(
      'mount_source_forbidden',
      `${request.origin}: the host root never enters a sandbox`,
      {
        field: request.origin,
        value: request.source,
      },
    );
  }
  return object;
}

/**
 * A mount source is resolved through no symbolic link that anyone but root could have made
 * (AH-CONT-1; path-trust.ts, firstPlantableLink): a sandbox given an rw directory, in this
 * run or an earlier one, writes as a non-root uid, often cfh's own, and a link it left
 * there (`cache -> ~/.ssh`) would choose what this run mounts. There is no flag to follow
 * such a link: cfh cannot tell who made it, and an operator who did can name its target.
 * Checked after the forbidden trees, so a link into /etc is refused as what it reaches.
 */
function refusePlantableLink(request: MountRequest, object: ResolvedObject): void {
  const planted = firstPlantableLink(object.links, object.entries);
  if (planted === undefined) return;
  const { link, maker } = planted;
  throw new ConfigError(
    'mount_source_link',
    `${request.origin}: source '${request.source}' goes through ${plantedLinkText(link, maker, object.targets.get(link))}; cfh follows no such link; name the path without links (if you made the link, name where it points yourself)`,
    { field: request.origin, value: request.source, link },
  );
}

/**
 * Device and inode of a source cfh made itself (a draft copy), as every later container
 * must find them; never through a symlink.
 */
export function identityOf(source: string): MountIdentity {
  const s = lstatSync(source, { bigint: true });
  return { dev: String(s.dev), ino: String(s.ino) };
}

/**
 * The owner of a checked source, read from the object checked: a path that names another
 * object by now (a directory renamed and replaced) is refused, not asked who owns it.
 */
export function ownerOf(mount: SpecMount): { readonly uid: number; readonly gid: number } {
  let s: BigIntStats | undefined;
  try {
    s = lstatSync(mount.source, { bigint: true });
  } catch {
    s = undefined;
  }
  if (
    s === undefined ||
    mount.identity === undefined ||
    String(s.dev) !== mount.identity.dev ||
    String(s.ino) !== mount.identity.ino
  ) {
    throw new ContainmentError(
      'mount_source_changed',
      `mount source '${mount.source}' (at ${mount.target}) is no longer the object cfh checked; refusing to plan the run`,
      { source: mount.source, target: mount.target },
    );
  }
  return { uid: Number(s.uid), gid: Number(s.gid) };
}

function checkTarget(request: MountRequest): string {
  const target = request.target;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(target)) {
    throw new ConfigError(
      'mount_target_invalid',
      `${request.origin}: target ${JSON.stringify(target)} contains a control character`,
      { field: request.origin, value: target },
    );
  }
  if (!path.isAbsolute(target)) {
    throw new ConfigError(
      'mount_target_relative',
      `${request.origin}: target '${target}' is not an absolute path`,
      {
        field: request.origin,
        value: target,
      },
    );
  }
  const normal = path.posix.normalize(target).replace(/\/+$/, '') || '/';
  if (normal !== target.replace(/\/+$/, '') || target.includes('..')) {
    throw new ConfigError(
      'mount_target_invalid',
      `${request.origin}: target '${target}' is not a normalized path`,
      {
        field: request.origin,
        value: target,
      },
    );
  }
  for (const reserved of RESERVED_TARGETS) {
    if (normal === reserved || (reserved !== '/' && isWithin(normal, reserved))) {
      throw new ConfigError(
        'mount_target_reserved',
        `${request.origin}: target '${target}' is reserved by cfh`,
        {
          field: request.origin,
          value: target,
        },
      );
    }
  }
  return normal;
}

/** The checked mounts of a run and, for each, the host trees it reaches (host-trees.ts). */
export interface ResolvedMounts {
  readonly mounts: SpecMount[];
  readonly trees: SourceTrees[];
}

/**
 * Resolves and checks a mount table. The workspace comes first; a duplicate target, or a
 * target nested inside another, is refused (nesting would let one mount's mode override
 * another's silently). Each source is then placed in the host's mount table, read once after
 * every source is resolved, from what its resolution read (mount-table.ts).
 */
export function resolveMounts(
  requests: readonly MountRequest[],
  table?: readonly MountEntry[],
): ResolvedMounts {
  const resolved: { mount: SpecMount; object: ResolvedObject; origin: string }[] = [];
  for (const request of requests) {
    const object = resolveSource(request);
    const target = checkTarget(request);
    if (target === WORKSPACE_TARGET && object.kind !== 'directory') {
      // Judged on the object resolved here, the one mounted: not on an earlier look.
      throw new ConfigError(
        'workspace_not_directory',
        `${request.origin}: '${request.source}' is not a directory`,
        { field: request.origin, value: request.source },
      );
    }
    for (const prior of resolved) {
      if (prior.mount.target === target) {
        throw new ConfigError(
          'mount_target_duplicate',
          `${request.origin}: target '${target}' is already mounted by ${prior.origin}`,
          {
            field: request.origin,
            value: target,
          },
        );
      }
      if (isWithin(target, prior.mount.target) || isWithin(prior.mount.target, target)) {
        throw new ConfigError(
          'mount_target_nested',
          `${request.origin}: target '${target}' nests with '${prior.mount.target}' from ${prior.origin}`,
          { field: request.origin, value: target },
        );
      }
    }
    const mount = { source: object.real, target, mode: request.mode, identity: object.identity };
    resolved.push({ mount, object, origin: request.origin });
  }
  return {
    mounts: resolved.map((r) => r.mount),
    trees: sourceTreesOf(resolved, table),
  };
}

/**
 * AH-CONT-5 / AH-ART-3: the sandbox must not be able to read the evidence. Refuse an
 * artifact root inside any mount source, and any mount source inside the artifact root.
 */
export function checkArtifactRoot(artifactRoot: string, mounts: readonly SpecMount[]): void {
  for (const m of mounts) {
    if (isWithin(artifactRoot, m.source) || isWithin(m.source, artifactRoot)) {
      throw new ConfigError(
        'artifact_root_exposed',
        `artifact root '${artifactRoot}' would be readable in the sandbox through the mount of '${m.source}' at ${m.target}; choose another --artifact-root or workspace`,
        { field: 'artifactRoot', value: artifactRoot },
      );
    }
  }
}

/**
 * The operator's key directory stays outside every mount and artifact root: a sandbox that
 * could read the signing key (`cfh keys init`) could sign a forged log, and one that could
 * read the credential-digest key could test guesses against a host tool's credential
 * digest. Checked only when a key exists, or when the run will make the digest key (it has
 * host-tool credentials), so a workspace of $HOME is refused only where a key would be
 * exposed.
 */
export function checkSigningKey(
  keyDir: string,
  artifactRoot: string,
  mounts: readonly SpecMount[],
  makesDigestKey = false,
): void {
  const files = keyPaths(keyDir);
  if (!makesDigestKey && !existsSync(files.privateKey) && !existsSync(files.digestKey)) return;
  let real: string;
  try {
    real = realpathSync(keyDir);
  } catch {
    real = path.resolve(keyDir);
  }
  const exposedBy = mounts.find((m) => isWithin(real, m.source) || isWithin(m.source, real));
  if (exposedBy !== undefined || isWithin(real, artifactRoot)) {
    throw new ConfigError(
      'signing_key_exposed',
      exposedBy === undefined
        ? `the operator key directory '${real}' is inside the artifact root '${artifactRoot}'; move it (CFH_KEY_DIR) or choose another --artifact-root`
        : `the operator key directory '${real}' would be readable in the sandbox through the mount of '${exposedBy.source}' at ${exposedBy.target}; move it (CFH_KEY_DIR) or choose another workspace`,
      { field: 'keyDir', value: real },
    );
  }
}

/**
 * AH-LIFE-3: `cfh reap` signals the process groups the host-process ledger names, so no
 * sandbox may reach it (a forged record would aim reap at a host process), as the artifact
 * root and the signing key: refuse the ledger directory inside any mount source, and any
 * mount source inside it, whether or not the directory exists yet.
 */
export function checkHostProcessLedger(
  ledgerDir: string,
  mounts: readonly SpecMount[],
  what = 'host-process ledger',
): void {
  const real = realpathOfNearest(ledgerDir);
  const exposedBy = mounts.find((m) => isWithin(real, m.source) || isWithin(m.source, real));
  if (exposedBy !== undefined) {
    throw new ConfigError(
      'state_dir_exposed',
      `the ${what} '${real}' would be reachable in the sandbox through the mount of '${exposedBy.source}' at ${exposedBy.target}; move it (CFH_STATE_DIR) or choose another workspace`,
      { field: 'stateDir', value: real },
    );
  }
}

/** The real path of `p`, through its nearest existing ancestor when it does not exist. */
export function realpathOfNearest(p: string): string {
  const absolute = path.resolve(p);
  const real = safeRealpath(absolute);
  if (real !== undefined) return real;
  const parent = path.dirname(absolute);
  return parent === absolute
    ? absolute
    : path.join(realpathOfNearest(parent), path.basename(absolute));
}

/** Parses `SRC:DST[:ro|:rw]` from the command line; a relative SRC is taken from `cwd`. */
export function parseMountFlag(value: string, index: number, cwd = process.cwd()): MountRequest {
  const origin = `--mount[${index}]`;
  const parts = value.split(':');
  let mode: MountMode = 'ro';
  if (parts.length === 3) {
    const m = parts[2];
    if (m !== 'ro' && m !== 'rw') {
      throw new ConfigError(
        'mount_flag_invalid',
        `${origin}: mode '${m ?? ''}' in '${value}' is not ro or rw`,
        {
          field: origin,
          value,
        },
      );
    }
    mode = m;
  } else if (parts.length !== 2) {
    throw new ConfigError('mount_flag_invalid', `${origin}: '${value}' is not SRC:DST[:ro|:rw]`, {
      field: origin,
      value,
    });
  }
  const [source = '', target = ''] = parts;
  if (source === '' || target === '') {
    throw new ConfigError('mount_flag_invalid', `${origin}: '${value}' is not SRC:DST[:ro|:rw]`, {
      field: origin,
      value,
    });
  }
  return { source: path.resolve(cwd, source), target, mode, origin };
}

function safeRealpath(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}
