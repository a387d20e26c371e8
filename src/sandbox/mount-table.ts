// The host's mount table as the kernel shows it to cfh (/proc/self/mountinfo), and each
// resolved mount source placed in it (AH-CONT-1; host-trees.ts says why): the mount its
// descriptor lay on is the one the kernel named for that descriptor (its mount id, read
// while it was open: source-resolution.ts), never one guessed from the path; its place is
// that mount's root in its file system joined with the rest of the path; the trees mounted
// beneath it are the table's mount points below its path. Read once per plan, after every
// source is resolved: a mount made since is seen, one gone since refuses the plan.
import { readFileSync } from 'node:fs';
import path from 'node:path/posix';
import { z } from 'zod';
import { ContainmentError } from '../errors.js';
import type { MountedTree, SourceTrees, TreePlace } from '../host-trees.js';
import type { SpecMount } from '../substrate/container-spec.js';
import type { ResolvedObject } from './source-resolution.js';

export interface MountEntry {
  readonly id: number;
  readonly parent: number;
  /** `major:minor` of the file system. */
  readonly device: string;
  /** Where in its file system the mounted tree starts. */
  readonly root: string;
  /** Where it is mounted, as this process names paths. */
  readonly mountPoint: string;
}

/** The five leading fields of a mountinfo line (proc(5)); the rest says nothing of place. */
const MountInfoLine = z
  .string()
  .regex(/^(\d+) (\d+) (\d+:\d+) (\S+) (\S+)(?: |$)/)
  .transform((line): MountEntry => {
    const [id = '', parent = '', device = '', root = '', mountPoint = ''] = line.split(' ');
    return {
      id: Number(id),
      parent: Number(parent),
      device,
      root: unescape(root),
      mountPoint: unescape(mountPoint),
    };
  });

/** mountinfo writes space, tab, newline and backslash in paths as `\ooo`. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(parseInt(octal, 8)),
  );
}

export function parseMountInfo(text: string): MountEntry[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const parsed = MountInfoLine.safeParse(line);
      if (!parsed.success)
        throw new ContainmentError(
          'mount_table_unreadable',
          `the host mount table has a line cfh cannot read (${JSON.stringify(line.slice(0, 120))}); cfh cannot tell which trees the mounts reach, refusing to plan the run`,
          { line: line.slice(0, 120) },
        );
      return parsed.data;
    });
}

export function readMountTable(): MountEntry[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch (error) {
    throw new ContainmentError(
      'mount_table_unreadable',
      `cannot read the host mount table /proc/self/mountinfo (${error instanceof Error ? error.message : String(error)}); cfh cannot tell which trees the mounts reach, refusing to plan the run`,
      {},
    );
  }
  return parseMountInfo(text);
}

function within(child: string, parent: string): boolean {
  const prefix = parent.endsWith('/') ? parent : `${parent}/`;
  return child === parent || child.startsWith(prefix);
}

/** What a placement needs of a resolved source: its descriptor's name, mount and kind. */
export type PlacedObject = Pick<ResolvedObject, 'real' | 'mountId' | 'names' | 'kind'>;

/**
 * The place of `object` and the trees mounted beneath it. A mount stacked on the source's
 * own mount at its path (mounted over it since) counts as beneath: what later containers
 * would mount by that path is then another tree.
 */
export function placeObject(
  object: PlacedObject,
  table: readonly MountEntry[],
): { readonly place: TreePlace; readonly beneath: readonly MountedTree[] } {
  const own = table.find((e) => e.id === object.mountId);
  if (own === undefined || !within(object.real, own.mountPoint)) {
    throw new ContainmentError(
      'mount_source_changed',
      `'${object.real}' lay on a mount (id ${object.mountId}) the host mount table no longer lists there; refusing to mount it`,
      { source: object.real },
    );
  }
  const place = {
    device: own.device,
    path: path.join(own.root, path.relative(own.mountPoint, object.real)),
  };
  const byId = new Map(table.map((e) => [e.id, e]));
  const stackedOnOwn = (e: MountEntry): boolean => {
    // Follow parents: a mount over the source's own has it as an ancestor; one it covers not.
    const seen = new Set<number>();
    for (let p = byId.get(e.parent); p !== undefined && !seen.has(p.id); p = byId.get(p.parent)) {
      if (p.id === own.id) return true;
      seen.add(p.id);
    }
    return false;
  };
  const beneath = table
    .filter((e) =>
      e.mountPoint === object.real
        ? e.id !== own.id && stackedOnOwn(e)
        : within(e.mountPoint, object.real),
    )
    .map((e) => ({ at: e.mountPoint, place: { device: e.device, path: e.root } }));
  return { place, beneath };
}

/** Each resolved source by identity (host-trees.ts), placed in one reading of the table. */
export function sourceTreesOf(
  sources: readonly { readonly mount: SpecMount; readonly object: PlacedObject }[],
  table: readonly MountEntry[] = readMountTable(),
): SourceTrees[] {
  return sources.map(({ mount, object }) => {
    if (mount.identity === undefined || (object.kind !== 'directory' && object.kind !== 'file'))
      throw new Error(`mount ${mount.target}: a resolved source has an identity and a kind`);
    return {
      target: mount.target,
      source: mount.source,
      identity: mount.identity,
      kind: object.kind,
      names: object.names,
      ...placeObject(object, table),
    };
  });
}
