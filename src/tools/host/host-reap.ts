// `cfh reap` for host-tool processes (AH-LIFE-3): a ledger record whose owning cfh is gone
// (pid and start time, as for container owner labels) names a process tree nobody will stop:
// its group and every process carrying its marker are killed, then the record is removed.
// Only records cfh can believe are acted on (ledger-trust.ts); any other file in the ledger
// is reported as `ignored` and left where it is.
import { unlink } from 'node:fs/promises';
import {
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_START,
  ownerStatus,
  type OwnerStatus,
} from '../../sandbox/owner.js';
import { HostProcessLedger, stopTree, type HostProcessRecord } from './host-process.js';
import type { UntrustedLedgerFile } from './ledger-trust.js';

export interface HostProcessReap {
  readonly record: HostProcessRecord;
  readonly owner: OwnerStatus;
  readonly action: 'removed' | 'would-remove' | 'kept' | 'failed';
  readonly killed: number;
  readonly error?: string;
}

export interface HostProcessReapResult {
  readonly reaped: readonly HostProcessReap[];
  /** Ledger files (or the directory) not believed, never acted on, whatever run they name. */
  readonly ignored: readonly UntrustedLedgerFile[];
}

export async function reapHostProcesses(
  dir: string,
  options: { dryRun: boolean; runIds?: ReadonlySet<string> | undefined },
): Promise<HostProcessReapResult> {
  const out: HostProcessReap[] = [];
  const { records, untrusted } = await HostProcessLedger.list(dir);
  for (const { file, record } of records) {
    if (options.runIds !== undefined && !options.runIds.has(record.runId)) continue;
    const owner = ownerStatus({
      [LABEL_OWNER_PID]: String(record.owner.pid),
      [LABEL_OWNER_START]: record.owner.start,
      [LABEL_OWNER_HOST]: record.owner.host,
    });
    if (owner !== 'gone') {
      out.push({ record, owner, action: 'kept', killed: 0 });
      continue;
    }
    if (options.dryRun) {
      out.push({ record, owner, action: 'would-remove', killed: 0 });
      continue;
    }
    try {
      const { strays } = await stopTree(record.pid, record.start, record.marker, 1000);
      await unlink(file);
      out.push({ record, owner, action: 'removed', killed: strays });
    } catch (error) {
      out.push({
        record,
        owner,
        action: 'failed',
        killed: 0,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return { reaped: out, ignored: untrusted };
}
