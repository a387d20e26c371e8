// What every host-tool process of a run is started with: who owns it (for the ledger and
// `cfh reap`), where its evidence goes, and the run's credential scrubber.
import type { EventInput, EventType } from '../../evidence/schema/registry.js';
import type { OwnerIdentity } from '../../sandbox/owner.js';
import type { HostProcessLedger } from './host-process.js';
import type { Scrubber } from './scrub.js';

export interface HostToolSink {
  /** One event of the registry (src/evidence/schema/registry.ts), of its type's shape. */
  event<T extends EventType>(type: T, data: EventInput<T>, durable?: boolean): Promise<void>;
  /** Keeps operator-only output under outputs/; returns its reference. */
  output(name: string, data: Buffer): Promise<string>;
}

export interface HostLaunch {
  readonly runId: string;
  readonly owner: OwnerIdentity;
  readonly ledger: HostProcessLedger;
  readonly scrubber: Scrubber;
  readonly sink: HostToolSink;
}
