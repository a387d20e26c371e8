// Planning mode's other channel out of a read-only mount (governance extension, "Planning
// mode"; AH-CONT-1): a FIFO. A read-only mount refuses writes to files, not to a FIFO: its
// bytes go to whichever host process reads it, so a plan-mode `exec` could tell a host
// service in the workspace to act. Unix sockets need no search: planning's seccomp filter
// makes none (seccomp/argument-rules.ts). Device nodes need none either: the container's
// device cgroup admits only its own /dev nodes (runc), and gVisor opens no host device.
// The search is bounded like the engine-socket one; one that hits its bound cannot prove
// the mounts FIFO-free, and counts as holding one. Only the tree each bind shows is
// searched (cfh's binds are non-recursive: a file system mounted below is not in it).
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { SpecMount } from '../substrate/container-spec.js';

const ENTRY_LIMIT = 200_000;
const TIME_LIMIT_MS = 5_000;
const REPORTED = 5;

export interface SpecialFileCheck {
  /** FIFOs found, as the sandbox would see them (target paths), at most a few. */
  readonly fifos: readonly string[];
  /** False when the bound was hit before every tree was searched. */
  readonly complete: boolean;
  readonly entries: number;
}

export function findFifos(
  mounts: readonly SpecMount[],
  now: () => number = () => performance.now(),
): SpecialFileCheck {
  const deadline = now() + TIME_LIMIT_MS;
  const fifos: string[] = [];
  let entries = 0;
  for (const m of mounts) {
    let root: Stats;
    try {
      root = lstatSync(m.source);
    } catch {
      continue;
    }
    if (root.isFIFO()) fifos.push(m.target);
    if (!root.isDirectory()) continue;
    const stack: [string, string][] = [[m.source, m.target]];
    for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
      const [dir, seen] = next;
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        entries += 1;
        if (entries > ENTRY_LIMIT || now() > deadline)
          return { fifos: fifos.slice(0, REPORTED), complete: false, entries };
        let s: Stats;
        try {
          s = lstatSync(path.join(dir, name));
        } catch {
          continue;
        }
        if (s.isFIFO()) fifos.push(path.posix.join(seen, name));
        else if (s.isDirectory() && s.dev === root.dev)
          stack.push([path.join(dir, name), path.posix.join(seen, name)]);
      }
    }
  }
  return { fifos: fifos.slice(0, REPORTED), complete: true, entries };
}
