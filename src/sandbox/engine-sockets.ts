// The engine's sockets must be unreachable through any mount: by name, hard link or bind
// (AH-CONT-1). By name: a socket as a mount source is refused (mount-policy.ts). By bind:
// cfh's bind mounts are non-recursive, so a socket bind-mounted somewhere below a source
// does not come along. By hard link: a hard link is the same inode, so cfh looks for the
// engine sockets' device and inode in each mounted tree — when it matters: connecting to a
// unix socket needs write permission on it, and the engine's sockets are root:docker 0660
// (containerd's root 0600), so a sandbox user that is not uid 0, not the socket's owner and
// not in its group cannot use one even when it sees it. Only for a sandbox user that could
// is the tree searched, bounded; a search that hits its bound refuses the run (it cannot
// prove the socket absent). A hard link made after the check by another host process is
// not seen (docs/operators.md): such a process already holds the engine's access.
import { lstatSync, readdirSync, statSync, type BigIntStats } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';
import type { SpecMount } from '../substrate/container-spec.js';

export interface SocketIdentity {
  readonly path: string;
  readonly dev: bigint;
  readonly ino: bigint;
  readonly uid: number;
  readonly gid: number;
  readonly mode: number;
}

/** Where engines keep their sockets; anything under these directories counts. */
const SOCKET_FILES = ['/var/run/docker.sock', '/run/docker.sock'];
const SOCKET_DIRS = ['/run/containerd', '/var/run/containerd', '/run/docker', '/var/run/docker'];
const SCAN_ENTRY_LIMIT = 200_000;
const SCAN_TIME_LIMIT_MS = 5_000;
const DIR_DEPTH_LIMIT = 4;

/** The sockets of the engine and its runtime on this host, by identity. */
export function engineSockets(dockerHost: string | undefined): SocketIdentity[] {
  const files = [...SOCKET_FILES];
  const host = dockerHost?.replace(/^unix:\/\//, '');
  if (host?.startsWith('/') === true) files.push(host);
  const found = new Map<string, SocketIdentity>();
  const add = (p: string, s: BigIntStats): void => {
    if (!s.isSocket()) return;
    found.set(`${s.dev}:${s.ino}`, {
      path: p,
      dev: s.dev,
      ino: s.ino,
      uid: Number(s.uid),
      gid: Number(s.gid),
      mode: Number(s.mode),
    });
  };
  for (const f of files) {
    try {
      add(f, statSync(f, { bigint: true }));
    } catch {
      // absent here
    }
  }
  for (const d of SOCKET_DIRS) walkSockets(d, DIR_DEPTH_LIMIT, add);
  return [...found.values()];
}

function walkSockets(dir: string, depth: number, add: (p: string, s: BigIntStats) => void): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const p = path.join(dir, name);
    let s: BigIntStats;
    try {
      s = lstatSync(p, { bigint: true });
    } catch {
      continue;
    }
    if (s.isSocket()) add(p, s);
    else if (s.isDirectory() && depth > 0) walkSockets(p, depth - 1, add);
  }
}

/** Could a process with this uid:gid (no supplementary groups) connect to the socket? */
export function canConnect(user: { uid: number; gid: number }, socket: SocketIdentity): boolean {
  if (user.uid === 0) return true;
  if (user.uid === socket.uid) return (socket.mode & 0o200) !== 0;
  if (user.gid === socket.gid) return (socket.mode & 0o020) !== 0;
  return (socket.mode & 0o002) !== 0;
}

export interface SocketCheck {
  /** Whether the trees were searched (only when the sandbox user could use a socket). */
  readonly searched: boolean;
  readonly entries: number;
  readonly ms: number;
}

/**
 * Refuses a mount table through which the sandbox user could reach an engine socket by a
 * hard link. `user` is the sandbox's `uid:gid`.
 */
export function checkEngineSockets(
  mounts: readonly SpecMount[],
  user: string,
  sockets: readonly SocketIdentity[],
  now: () => number = () => performance.now(),
): SocketCheck {
  const [uid = NaN, gid = NaN] = user.split(':').map(Number);
  const reachable = sockets.filter((s) => canConnect({ uid, gid }, s));
  if (reachable.length === 0) return { searched: false, entries: 0, ms: 0 };
  const started = now();
  const wanted = new Map(reachable.map((s) => [`${s.dev}:${s.ino}`, s]));
  const budget = { entries: 0, deadline: started + SCAN_TIME_LIMIT_MS };
  for (const m of mounts) {
    const hit = findSocket(m.source, wanted, budget, now);
    if (hit === 'incomplete') {
      throw new ConfigError(
        'mount_scan_incomplete',
        `the sandbox user ${user} could use the engine socket, and the mount at ${m.target} ('${m.source}') is too large to prove it holds no hard link of it (searched ${budget.entries} entries); use a non-root sandbox user or a smaller mount`,
        { field: 'mounts', value: m.source },
      );
    }
    if (hit !== undefined) {
      throw new ConfigError(
        'mount_holds_engine_socket',
        `the mount at ${m.target} ('${m.source}') holds '${hit.found}', a hard link of the engine socket ${hit.socket.path}: the sandbox user ${user} could control the engine through it`,
        { field: 'mounts', value: hit.found },
      );
    }
  }
  return { searched: true, entries: budget.entries, ms: Math.round(now() - started) };
}

function findSocket(
  root: string,
  wanted: ReadonlyMap<string, SocketIdentity>,
  budget: { entries: number; deadline: number },
  now: () => number,
): { found: string; socket: SocketIdentity } | 'incomplete' | undefined {
  const stack = [root];
  for (let dir = stack.pop(); dir !== undefined; dir = stack.pop()) {
    let s: BigIntStats;
    try {
      s = lstatSync(dir, { bigint: true });
    } catch {
      continue;
    }
    budget.entries += 1;
    if (budget.entries > SCAN_ENTRY_LIMIT || now() > budget.deadline) return 'incomplete';
    if (s.isSocket()) {
      const socket = wanted.get(`${s.dev}:${s.ino}`);
      if (socket !== undefined) return { found: dir, socket };
      continue;
    }
    if (!s.isDirectory()) continue;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      // A directory cfh cannot read may still be readable to the sandbox user.
      return 'incomplete';
    }
    for (const name of names) stack.push(path.join(dir, name));
  }
  return undefined;
}
