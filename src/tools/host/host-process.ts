// Host-tool processes and their whole trees (AH-LIFE-3). Every process cfh starts for a host
// tool gets its own process group and a marker variable (`CFH_HOST_PROCESS=<id>`) that its
// descendants inherit, and a ledger record (written before the spawn, completed with pid and
// start time after it) that names the cfh process owning it, the way owner labels name a
// container's owner (src/sandbox/owner.ts). Stopping one ends its group and then every
// process the process table shows carrying its marker, so a child that left the group
// (setsid) goes too; after a SIGKILL of cfh, `cfh reap` does the same from the ledger.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { HostToolError } from '../../errors.js';
import { processStart, type OwnerIdentity } from '../../sandbox/owner.js';
import {
  ledgerDirProblem,
  listLedger,
  type HostProcessRecord,
  type LedgerListing,
} from './ledger-trust.js';

export { HostProcessRecord } from './ledger-trust.js';

export const HOST_PROCESS_MARKER = 'CFH_HOST_PROCESS';

/** What a host process starts with besides its declared env: nothing else of cfh's. */
export const HOST_BASE_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  LANG: 'C.UTF-8',
};

/** The ledger directory's entries: one file per process, removed when it is stopped. */
export class HostProcessLedger {
  readonly dir: string;
  #seq = 0;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** A record for a process about to start, and its marker value. */
  async open(
    runId: string,
    tool: string,
    owner: OwnerIdentity,
    command: string,
  ): Promise<LedgerEntry> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    // A record `cfh reap` would not believe (ledger-trust.ts) could not stop this process
    // after a SIGKILL of cfh: refuse to start it rather than leave it unreapable.
    const problem = ledgerDirProblem(this.dir);
    if (problem !== undefined) {
      throw new HostToolError(
        'host_ledger_untrusted',
        `host-process ledger '${this.dir}' ${problem}; give CFH_STATE_DIR a directory only cfh's user can write`,
        { dir: this.dir },
      );
    }
    this.#seq += 1;
    const marker = `${runId}.${tool}.${this.#seq}.${randomBytes(8).toString('hex')}`;
    const record: HostProcessRecord = {
      schema: 'cfh.host-process/1',
      runId,
      tool,
      marker,
      owner: { pid: owner.pid, start: owner.start, host: owner.host },
      command,
      startedAt: new Date().toISOString(),
    };
    const entry = new LedgerEntry(path.join(this.dir, `${marker}.json`), record);
    await entry.write();
    return entry;
  }

  /** Every record cfh can believe, and every file it does not (ledger-trust.ts). */
  static async list(dir: string): Promise<LedgerListing> {
    return listLedger(dir);
  }
}

export class LedgerEntry {
  readonly file: string;
  record: HostProcessRecord;

  constructor(file: string, record: HostProcessRecord) {
    this.file = file;
    this.record = record;
  }

  async write(): Promise<void> {
    // Created afresh (never through a link or a file left there), and 0600 whatever the
    // umask: the only shape of record `cfh reap` believes (ledger-trust.ts).
    const tmp = `${this.file}.tmp`;
    await unlink(tmp).catch(() => undefined);
    const handle = await open(
      tmp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      await handle.chmod(0o600);
      await handle.writeFile(`${JSON.stringify(this.record)}\n`);
    } finally {
      await handle.close();
    }
    await rename(tmp, this.file);
  }

  async started(pid: number): Promise<void> {
    const start = processStart(pid);
    this.record = { ...this.record, pid, ...(start === undefined ? {} : { start }) };
    await this.write();
  }

  async close(): Promise<void> {
    await unlink(this.file).catch(() => undefined);
  }
}

/** A live process as the kernel names it: pid and `<boot id>/<start ticks>`. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly start: string;
}

/** The live processes whose environment carries `marker` (the process table). */
export async function processesWithMarker(marker: string): Promise<ProcessIdentity[]> {
  const wanted = `${HOST_PROCESS_MARKER}=${marker}`;
  const found: ProcessIdentity[] = [];
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    // The start time before and after the environment: the same process throughout.
    const before = processStart(pid);
    if (before === undefined) continue;
    try {
      const environ = await readFile(`/proc/${name}/environ`, 'latin1');
      if (environ.split('\0').includes(wanted) && processStart(pid) === before) {
        found.push({ pid, start: before });
      }
    } catch {
      // gone, or another user's: not ours
    }
  }
  return found;
}

function signal(target: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(target, sig);
    return true;
  } catch {
    return false;
  }
}

function groupAlive(pgid: number): boolean {
  return signal(-pgid, 0);
}

// Not unref'd: cfh awaits these while it stops a tree, and an unref'd timer would let the
// process exit mid-stop when nothing else holds the event loop (a child already reaped).
const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

export interface TreeStop {
  /** Processes still found by marker after the group was ended (and then killed). */
  readonly strays: number;
}

/**
 * Ends a host process and its whole tree: SIGTERM to its group, SIGKILL after `graceMs`,
 * then SIGKILL to every process still carrying its marker, until none is left (bounded).
 * A pid is signalled only while it is the process cfh recorded (AH-LIFE-3): the group only
 * when the leader's start time was recorded and /proc shows the same one now, each stray
 * only while its start time is the one it had when its environment showed the marker. A
 * record without a start time (a tool that was gone before cfh read it) names no process
 * anymore; its tree is found by marker alone. The check and the signal are two system
 * calls apart: a pid freed and reused within that gap is not seen (Node has no pidfd).
 */
export async function stopTree(
  pid: number | undefined,
  start: string | undefined,
  marker: string,
  graceMs: number,
): Promise<TreeStop> {
  const leader = pid !== undefined && start !== undefined ? { pid, start } : undefined;
  const isLeader = (): boolean => leader !== undefined && processStart(leader.pid) === leader.start;
  if (leader !== undefined && isLeader() && groupAlive(leader.pid)) {
    signal(-leader.pid, 'SIGTERM');
    const until = Date.now() + graceMs;
    while (isLeader() && groupAlive(leader.pid) && Date.now() < until) await sleep(20);
    if (isLeader()) signal(-leader.pid, 'SIGKILL');
  }
  let strays = 0;
  for (let round = 0; round < 50; round += 1) {
    const left = await processesWithMarker(marker);
    if (left.length === 0) break;
    strays += left.length;
    for (const p of left) {
      if (processStart(p.pid) !== p.start) continue;
      // A stray may lead a group of its own (setsid): end that group too.
      signal(-p.pid, 'SIGKILL');
      signal(p.pid, 'SIGKILL');
    }
    await sleep(20);
  }
  return { strays };
}
