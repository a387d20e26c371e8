// The identity of the cfh process that owns engine objects, written into their labels so a
// later `cfh reap` can tell a live owner from a dead one, even after pid reuse: the pid is
// paired with the kernel boot id and the process start time.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

export const LABEL_RUN_ID = 'cfh.run-id';
export const LABEL_OWNER_PID = 'cfh.owner-pid';
export const LABEL_OWNER_START = 'cfh.owner-start';
export const LABEL_OWNER_HOST = 'cfh.owner-host';
export const LABEL_STARTED_AT = 'cfh.started-at';
export const LABEL_VERSION = 'cfh.version';

export interface OwnerIdentity {
  readonly pid: number;
  /** `<boot id>/<start ticks>`: unique for a process across pid reuse and reboots. */
  readonly start: string;
  readonly host: string;
}

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown-boot';
  }
}

/** Field 22 of /proc/PID/stat, read after the parenthesised command name. */
export function processStartTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

/** `<boot id>/<start ticks>` of a live process, or undefined when there is none. */
export function processStart(pid: number): string | undefined {
  const ticks = processStartTicks(pid);
  return ticks === undefined ? undefined : `${bootId()}/${ticks}`;
}

export function currentOwner(): OwnerIdentity {
  return {
    pid: process.pid,
    start: processStart(process.pid) ?? `${bootId()}/unknown`,
    host: hostname(),
  };
}

export type OwnerStatus = 'alive' | 'gone' | 'foreign-host';

export function ownerStatus(labels: Readonly<Record<string, string>>): OwnerStatus {
  if (labels[LABEL_OWNER_HOST] !== hostname()) return 'foreign-host';
  const pid = Number(labels[LABEL_OWNER_PID]);
  if (!Number.isInteger(pid) || pid <= 0) return 'gone';
  const ticks = processStartTicks(pid);
  if (ticks === undefined) return 'gone';
  return labels[LABEL_OWNER_START] === `${bootId()}/${ticks}` ? 'alive' : 'gone';
}

export function ownerLabels(
  runId: string,
  owner: OwnerIdentity,
  version: string,
): Record<string, string> {
  return {
    [LABEL_RUN_ID]: runId,
    [LABEL_OWNER_PID]: String(owner.pid),
    [LABEL_OWNER_START]: owner.start,
    [LABEL_OWNER_HOST]: owner.host,
    [LABEL_STARTED_AT]: new Date().toISOString(),
    [LABEL_VERSION]: version,
  };
}
