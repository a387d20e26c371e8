// The network postures (AH-CONT-4), one record each. What cfh does differently per posture
// (whether the sandbox gets an interface and the egress gateway, what the gateway judges,
// how the snapshot says it is enforced, what the default policy says of open-world tools)
// is read from the record, never from the mode's name in another file: a new posture is a
// record here, and the places that must decide something new about it fail to compile.
import { z } from 'zod';

export const NETWORK_MODES = ['disabled', 'allowlist', 'open'] as const;
export const NetworkMode = z.enum(NETWORK_MODES);
export type NetworkMode = z.infer<typeof NetworkMode>;

export interface Posture {
  /** An interface and the egress gateway (a guard namespace); else only loopback. */
  readonly egress: boolean;
  /** How the snapshot says the posture is enforced (`network.enforcement.kind`). */
  readonly enforcement: 'no-interface' | 'egress-gateway';
  /** What the gateway lets through: nothing, the allow list, or all but the deny list. */
  readonly passes: 'nothing' | 'allowed' | 'all-but-denied';
  /** How far it reaches, in the one order a resume may only narrow (0: loopback only). */
  readonly reach: number;
}

export const POSTURES = {
  disabled: { egress: false, enforcement: 'no-interface', passes: 'nothing', reach: 0 },
  allowlist: { egress: true, enforcement: 'egress-gateway', passes: 'allowed', reach: 1 },
  open: { egress: true, enforcement: 'egress-gateway', passes: 'all-but-denied', reach: 2 },
} as const satisfies Readonly<Record<NetworkMode, Posture>>;

/** The postures with an egress gateway, as their records say (not by name). */
export type EgressMode = {
  [K in NetworkMode]: (typeof POSTURES)[K]['egress'] extends true ? K : never;
}[NetworkMode];

/** Whether a run in `mode` reaches anything beyond its own loopback. */
export function hasEgress(mode: NetworkMode): mode is EgressMode {
  return POSTURES[mode].egress;
}
