// A container cfh makes lives no longer than the cfh that made it (AH-LIFE-3), however cfh
// ends. cfh's signal handlers stop its containers, but a cfh that is SIGKILLed, OOM-killed
// or crashes runs no handler. So every container this process creates is held by a host
// process: a small child (substrate/docker/host-tether-main.ts) in a session of its own (a signal to
// cfh's process group or terminal does not reach it) that reads a pipe from cfh. However cfh
// ends, the kernel closes the pipe; the child then SIGKILLs every container still held,
// through the engine's API, and exits. Nothing in a container can reach it: it is a host
// process outside every namespace of the container, which is what the in-container tether
// (engine/command/command-tether.ts, run as the command's own user) cannot be.
//
// The set of held ids lives here; a child that ends while cfh lives (someone killed it) is
// replaced at the next hold or release, and the replacement is told the whole set.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** How the child reaches the engine: what dockerode was given. */
export type EngineAddress =
  { readonly socketPath: string } | { readonly host: string; readonly port: number };

const PROGRAM = fileURLToPath(new URL('./host-tether-main.js', import.meta.url));

export class HostTether {
  readonly #address: EngineAddress;
  readonly #held = new Set<string>();
  #child: ChildProcess | undefined;

  constructor(address: EngineAddress) {
    this.#address = address;
  }

  /** The container `id` is killed when this process ends without releasing it. */
  hold(id: string): void {
    this.#held.add(id);
    this.#send(`+${id}\n`);
  }

  /** The container is gone (removed): nothing to kill for it any more. */
  release(id: string): void {
    if (!this.#held.delete(id)) return;
    this.#send(`-${id}\n`);
  }

  /** Whether `id` is held (for the release that does not know which tether holds it). */
  holds(id: string): boolean {
    return this.#held.has(id);
  }

  #send(line: string): void {
    // A new child is told the whole set (this change included) as it starts.
    if (this.#child === undefined) {
      this.#spawn();
      return;
    }
    // A pipe write goes to the kernel at once when nothing is queued (libuv writes before it
    // queues), so a hold made before a container starts is the child's to read even if cfh
    // is killed the next instant.
    this.#child.stdin?.write(line);
  }

  #spawn(): void {
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, [PROGRAM, JSON.stringify(this.#address)], {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
        cwd: '/',
        env: {},
      });
    } catch {
      // No process could be made (out of pids): the in-container tether is the line then;
      // the next hold tries again.
      return;
    }
    this.#child = child;
    const gone = (): void => {
      if (this.#child !== child) return;
      this.#child = undefined;
    };
    child.on('error', gone);
    child.on('exit', gone);
    // An EPIPE from a child that just ended is its exit, seen above.
    child.stdin?.on('error', () => undefined);
    // Neither keeps cfh alive: the child is for when cfh is gone.
    child.unref();
    (child.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null)?.unref?.();
    // The whole set: the first hold, or what a child that ended held.
    const replay = [...this.#held].map((id) => `+${id}\n`).join('');
    if (replay !== '') child.stdin?.write(replay);
  }
}

const tethers = new Map<string, HostTether>();

/** The one tether of this process for the engine at `address`. */
export function hostTether(address: EngineAddress): HostTether {
  const key = JSON.stringify(address);
  let tether = tethers.get(key);
  if (tether === undefined) {
    tether = new HostTether(address);
    tethers.set(key, tether);
  }
  return tether;
}

/** Lets go of `id` in whichever tether holds it (a removal that knows only the id). */
export function releaseHeld(id: string): void {
  for (const tether of tethers.values()) if (tether.holds(id)) tether.release(id);
}
