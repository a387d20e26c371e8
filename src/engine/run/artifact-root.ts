// Where a run's evidence goes (AH-ART-3): the artifact root, resolved at planning. It may
// not exist yet; its nearest existing ancestor is resolved once (source-resolution.ts) and
// must be an ordinary directory nobody but root and cfh's user could change.
import { lstatSync, readlinkSync, statSync } from 'node:fs';
import path from 'node:path';
import { pseudoFileSystemAt, pseudoTreeOf } from '../../config/pseudo-fs.js';
import { ConfigError, errorMessage } from '../../errors.js';
import { firstPlantableLink, firstSwapper, plantedLinkText } from '../../path-trust.js';
import type { HostIdentity } from '../../sandbox/sandbox-user.js';
import {
  ResolutionError,
  resolveObject,
  type ResolvedObject,
} from '../../sandbox/source-resolution.js';

/**
 * The artifact root may not exist yet: resolve its nearest existing ancestor, which must be
 * a directory on an ordinary file system. Under /proc, /sys or /dev, or on any kernel pseudo
 * file system (checked with statfs on that ancestor, so a symlink into one is caught too),
 * evidence cannot be kept: procfs answers mkdir with ENOENT, on which Node's recursive mkdir
 * spins for ever, and a directory made in cgroupfs is a new cgroup.
 */
export function resolveArtifactRoot(root: string, host: HostIdentity): string {
  const absolute = path.resolve(root);
  let existing = absolute;
  const rest: string[] = [];
  for (;;) {
    let object: ResolvedObject | undefined;
    try {
      object = resolveObject(existing);
    } catch (error) {
      if (!(error instanceof ResolutionError && error.reason === 'missing')) {
        throw new ConfigError(
          'artifact_root_unusable',
          `artifact root '${root}': ${errorMessage(error)}; choose another --artifact-root`,
          { field: 'artifactRoot', value: root },
        );
      }
    }
    if (object !== undefined) {
      const resolved = path.join(object.real, ...rest);
      checkArtifactFileSystem(root, absolute, resolved, object.real);
      checkArtifactRootTrust(root, object, rest, host);
      return resolved;
    }
    refuseDanglingLink(root, existing);
    const parent = path.dirname(existing);
    if (parent === existing) return absolute;
    rest.unshift(path.basename(existing));
    existing = parent;
  }
}

/**
 * cfh writes the evidence with its own authority, so nobody else may be able to replace the
 * run directory it makes or any directory above it (a link there would take root's writes
 * anywhere): the artifact root, or its nearest existing ancestor when cfh creates the rest,
 * is judged with what its resolution read, the entry cfh will make counted as cfh's own.
 * RunDirectory.create judges the made directory again (AH-ART-3).
 */
function checkArtifactRootTrust(
  root: string,
  object: ResolvedObject,
  rest: readonly string[],
  host: HostIdentity,
): void {
  // A link a sandbox could have left on the way (AH-CONT-1's rule for mount sources) would
  // choose where the evidence goes: into a mount, or anywhere cfh may write.
  const planted = firstPlantableLink(object.links, object.entries);
  if (planted !== undefined) {
    throw new ConfigError(
      'artifact_root_shared',
      `artifact root '${root}' goes through ${plantedLinkText(planted.link, planted.maker, object.targets.get(planted.link))}; cfh follows no such link; give an --artifact-root without links`,
      { field: 'artifactRoot', value: root },
    );
  }
  // The entry cfh makes next: the first missing component, or the run directory itself.
  const made = path.join(object.real, rest[0] ?? 'run');
  const seen = new Map(object.entries);
  seen.set(made, { uid: host.uid, gid: host.gid, mode: 0o40750 });
  const swapper = firstSwapper([made], host.uid, seen)?.swapper;
  if (swapper !== undefined) {
    throw new ConfigError(
      'artifact_root_shared',
      `artifact root '${root}': ${swapper.who} could replace entries of '${swapper.directory}', and with them the evidence cfh writes; choose an --artifact-root only root and you can change (or in a sticky directory like /tmp)`,
      { field: 'artifactRoot', value: root },
    );
  }
}

/**
 * A component that exists but does not resolve is a symbolic link to nothing: where it
 * points (perhaps into /proc) cannot be checked, and creating the run directory would fail
 * only after preflight.
 */
function refuseDanglingLink(root: string, component: string): void {
  let target: string;
  try {
    if (!lstatSync(component).isSymbolicLink()) return;
    target = readlinkSync(component);
  } catch {
    return;
  }
  throw new ConfigError(
    'artifact_root_unusable',
    `artifact root '${root}' goes through '${component}', a symbolic link to '${target}', which does not exist; choose another --artifact-root, on an ordinary file system`,
    { field: 'artifactRoot', value: root },
  );
}

function checkArtifactFileSystem(
  root: string,
  absolute: string,
  resolved: string,
  existing: string,
): void {
  const refuse = (why: string): ConfigError =>
    new ConfigError(
      'artifact_root_unusable',
      `artifact root '${root}' ${why}; choose another --artifact-root, on an ordinary file system`,
      { field: 'artifactRoot', value: root },
    );
  const tree = pseudoTreeOf(resolved);
  if (tree !== undefined) {
    throw refuse(`${resolved === absolute ? 'is' : `resolves to '${resolved}',`} inside ${tree}`);
  }
  if (!statSync(existing).isDirectory()) {
    throw refuse(`cannot be created: '${existing}' is not a directory`);
  }
  const pseudo = pseudoFileSystemAt(existing);
  if (pseudo !== undefined) {
    throw refuse(`is on the kernel's ${pseudo} file system (at '${existing}')`);
  }
}
