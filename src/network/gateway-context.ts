// What every part of the egress gateway shares for one run: the policy, the resolver, the
// run's resolutions and name budget, and where events go. `lookUp` is the one way a name
// reaches the upstream resolver, for the sandbox's queries and the gateway's own needs
// alike, so the name budget and the record of answers cannot be bypassed by either path.
import type { EgressEvent, GatewayReason } from './egress-event.js';
import { foldName } from './destination.js';
import { isHostName, type EgressDecision, type EgressPolicy } from './egress-policy.js';
import type { DeniedNameAddresses } from './denied-addresses.js';
import type { RunResolutions } from './run-resolutions.js';

export type Resolve = (name: string) => Promise<string[]>;

export interface GatewayContext {
  readonly policy: EgressPolicy;
  readonly resolve: Resolve;
  readonly resolutions: RunResolutions;
  /** The addresses of the run's exact-name denies, which a connection may not reach. */
  readonly deniedNames: DeniedNameAddresses;
  readonly onEvent: (event: EgressEvent) => void;
}

/** Resolves an allowed name upstream, within the run's name budget, and records the answer. */
export async function lookUp(
  name: string,
  decision: EgressDecision,
  ctx: GatewayContext,
): Promise<
  | { addresses: string[] }
  | { refusal: Extract<GatewayReason, 'name-rate-exceeded' | 'resolve-failed'> }
> {
  // Only a host name reaches the resolver, whatever decided before (defence in depth: a
  // resolver library may read a name with a NUL in it as a shorter one).
  if (!isHostName(foldName(name))) return { refusal: 'resolve-failed' };
  if (decision.bySuffix === true && !ctx.resolutions.admit(name))
    return { refusal: 'name-rate-exceeded' };
  let addresses: string[];
  try {
    addresses = await ctx.resolve(name);
  } catch {
    return { refusal: 'resolve-failed' };
  }
  ctx.resolutions.record(name, addresses);
  return { addresses };
}
