// Host-tool processes and their whole trees (AH-LIFE-3). Every process cfh starts for a host
// tool gets its own process group and a marker variable (`CFH_HOST_PROCESS=<id>`) that its
// descendants inherit, and a ledger record (written before the spawn, completed with pid and
// start time after it) that names the cfh process owning it, the way owner labels name a
// container's owner (src/sandbox/owner.ts). Stopping one ends its group and then every
// process the process table shows carrying its marker, so a child that left the group
// (setsid) goes too; after a SIGKILL of cfh, `cfh reap` does the same from the ledger.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { processStart, type OwnerIdentity } from '../../sandbox/owner.js';

export const HOST_PROCESS_MARKER = 'CFH_HOST_PROCESS';

/** What a host process starts with besides its declared env: nothing else of cfh's. */
export const HOST_BASE_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  LANG: 'C.UTF-8',
};

export const HostProcessRecord = z.strictObject({
  schema: z.literal('cfh.host-process/1'),
  runId: z.string(),
  tool: z.string(),
  marker: z.string().regex(/^[A-Za-z0-9._-]+$/),
  owner: z.strictObject({ pid: z.number().int(), start: z.string(), host: z.string() }),
  command: z.string(),
  startedAt: z.string(),
  pid: z.number().int().positive().optional(),
  start: z.string().optional(),
});
export type HostProcessRecord = z.infer<typeof HostProcessRecord>;

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

  /** Every record, parsed; a file that is not one is skipped (and left alone). */
  static async list(dir: string): Promise<{ file: string; record: HostProcessRecord }[]> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return [];
    }
    const out: { file: string; record: HostProcessRecord }[] = [];
    for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
      const file = path.join(dir, name);
      try {
        const parsed = HostProcessRecord.safeParse(JSON.parse(await readFile(file, 'utf8')));
        if (parsed.success) out.push({ file, record: parsed.data });
      } catch {
        // unreadable or half-written: not a record
      }
    }
    return out;
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
    const tmp = `${this.file}.tmp`;
    await writeFile(tmp, `${JSON.stringify(this.record)}\n`, { mode: 0o600 });
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

/** Pids of the live processes whose environment carries `marker` (the process table). */
export async function processesWithMarker(marker: string): Promise<number[]> {
  const wanted = `${HOST_PROCESS_MARKER}=${marker}`;
  const pids: number[] = [];
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const environ = await readFile(`/proc/${name}/environ`, 'latin1');
      if (environ.split('\0').includes(wanted)) pids.push(pid);
    } catch {
      // gone, or another user's: not ours
    }
  }
  return pids;
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
 * `pid` is checked against its recorded start time so a reused pid is never signalled.
 */
export async function stopTree(
  pid: number | undefined,
  start: string | undefined,
  marker: string,
  graceMs: number,
): Promise<TreeStop> {
  const ours = pid !== undefined && (start === undefined || processStart(pid) === start);
  if (ours && groupAlive(pid)) {
    signal(-pid, 'SIGTERM');
    const until = Date.now() + graceMs;
    while (groupAlive(pid) && Date.now() < until) await sleep(20);
    signal(-pid, 'SIGKILL');
  }
  let strays = 0;
  for (let round = 0; round < 50; round += 1) {
    const left = await processesWithMarker(marker);
    if (left.length === 0) break;
    strays += left.length;
    for (const p of left) {
      // A stray may lead a group of its own (setsid): end that group too.
      signal(-p, 'SIGKILL');
      signal(p, 'SIGKILL');
    }
    await sleep(20);
  }
  return { strays };
}
