// The decision for one TCP destination the gateway relays to (AH-CONT-4): by
// address alone when the client stated no name; by name otherwise, the address being one
// the gateway resolved for that name during the run (or listed in its own right); and in
// every case never an address of a denied name (denied-addresses.ts).
import type { EgressEvent, Outcome } from './egress-event.js';
import { canonicalAddress, type EgressDecision } from './egress-policy.js';
import { lookUp, type GatewayContext } from './gateway-context.js';

export interface Destination {
  readonly protocol: EgressEvent['protocol'];
  readonly via: EgressEvent['via'];
  readonly name: string | undefined;
  readonly address: string | undefined;
  readonly port: number;
}

/**
 * The decision for a destination. A name with no address is resolved here (within the
 * run's name budget) and the first allowed address used. A name paired with an address the
 * client chose (the catch-all's conntrack address, an address CONNECT target) passes only
 * if the gateway resolved that address for that name during the run, or it is listed.
 */
export async function decide(
  dest: Destination,
  ctx: GatewayContext,
): Promise<{ decision: Outcome; address?: string | undefined }> {
  const decided = await decideByPolicy(dest, ctx);
  const { decision, address } = decided;
  if (!decision.allowed || address === undefined) return decided;
  // Deny wins over allow for a denied name's addresses too, unless the connection is to a
  // name the gateway resolved to this address (names share addresses: a CDN serves the
  // allowed and the denied alike) or the profile lists the address by itself.
  if (dest.name !== undefined && ctx.resolutions.resolvedFor(dest.name, address)) return decided;
  if (ctx.policy.listedAddress(address, dest.port) !== undefined) return decided;
  const rule = await ctx.deniedNames.denying(ctx.policy, address, dest.port);
  if (rule === undefined) return decided;
  return { decision: { allowed: false, reason: 'denylisted', rule }, address };
}

async function decideByPolicy(
  dest: Destination,
  ctx: GatewayContext,
): Promise<{ decision: Outcome; address?: string | undefined }> {
  if (dest.name === undefined) {
    const address = dest.address ?? '';
    return { decision: ctx.policy.decideConnection({ address, port: dest.port }), address };
  }
  const name = dest.name;
  const byName = ctx.policy.decideName(name, dest.port);
  if (!byName.allowed)
    return {
      decision: byName.reason === 'dns-refused' ? { ...byName, reason: 'not-allowlisted' } : byName,
      address: dest.address,
    };
  const refused = (reason: 'name-rate-exceeded' | 'resolve-failed'): Outcome => ({
    allowed: false,
    reason,
    rule: byName.rule,
  });
  if (dest.address !== undefined) {
    const address = dest.address;
    const check = (resolvedForName: boolean): EgressDecision =>
      ctx.policy.decideConnection({ name, address, port: dest.port, resolvedForName });
    let decision: Outcome = check(ctx.resolutions.resolvedFor(name, address));
    if (decision.reason === 'address-not-resolved-for-name') {
      // Not among the run's answers for this name: ask again (the answer may have moved).
      const found = await lookUp(name, byName, ctx);
      if ('refusal' in found) decision = refused(found.refusal);
      else if (found.addresses.some((a) => canonicalAddress(a) === canonicalAddress(address)))
        decision = check(true);
    }
    return { decision, address };
  }
  const found = await lookUp(name, byName, ctx);
  if ('refusal' in found) return { decision: refused(found.refusal) };
  if (found.addresses.length === 0) return { decision: refused('resolve-failed') };
  let first: EgressDecision | undefined;
  for (const address of found.addresses) {
    const d = ctx.policy.decideConnection({
      name,
      address,
      port: dest.port,
      resolvedForName: true,
    });
    if (d.allowed) return { decision: d, address };
    first ??= d;
  }
  return {
    decision: first ?? { allowed: false, reason: 'not-allowlisted' },
    address: found.addresses[0],
  };
}
