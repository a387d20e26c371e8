// Events of a run's egress posture (allowlist / open; AH-CONT-4): the gateway and guard it
// set up, every connection attempt, refused request and DNS query, and their removal.
import { z } from 'zod';
import { Count, IsoTime, Milliseconds } from './common.js';

/** Every reason an egress decision can give (src/network: policy and gateway). */
export const EgressReason = z.enum([
  'allowlisted',
  'open',
  'denylisted',
  'not-allowlisted',
  'dns-refused',
  'loopback-address',
  'link-local-address',
  'metadata-address',
  'private-address',
  'host-address',
  'multicast-address',
  'unspecified-address',
  'no-destination',
  'address-not-resolved-for-name',
  'name-too-deep',
  'name-too-long',
  'invalid-name',
  'unjudgeable-address',
  'resolve-failed',
  'connect-failed',
  'bad-request',
  'conflicting-host',
  'name-rate-exceeded',
  'query-type-refused',
]);

/** Reasons that allow: everything else refuses. */
export const ALLOWING_REASONS: readonly string[] = ['allowlisted', 'open'];

export const EgressAttempt = z.strictObject({
  protocol: z.enum(['dns', 'http', 'tls', 'tcp']),
  via: z.enum(['resolver', 'transparent', 'proxy']),
  name: z.string().optional(),
  address: z.string().optional(),
  port: z.number().int().min(0).max(65535).optional(),
  queryType: z.string().optional(),
  allowed: z.boolean(),
  reason: EgressReason,
  rule: z.string().optional(),
  bytesOut: Count,
  bytesIn: Count,
  startedAt: IsoTime,
  durationMs: Milliseconds,
  /** Identical attempts after the first within the repeat window: this many, until lastAt. */
  count: z.number().int().positive().optional(),
  lastAt: IsoTime.optional(),
});

/** The bound on egress evidence (src/network/egress-evidence.ts). */
const EgressEvidenceBound = z.strictObject({
  maxEvents: Count,
  burst: Count,
  perSecond: Count,
  repeatWindowMs: Milliseconds,
  summaryIntervalMs: Milliseconds,
});

export const networkEvents = {
  egress: EgressAttempt,
  egress_ready: z.strictObject({
    mode: z.enum(['allowlist', 'open']),
    networkId: z.string(),
    network: z.string(),
    subnet: z.string(),
    guardId: z.string(),
    gateway: z.strictObject({
      kind: z.literal('in-process'),
      pid: z.number().int(),
      address: z.string(),
      dnsPort: z.number().int(),
      interceptPorts: z.record(z.string(), z.number().int()),
      pinned: z.array(
        z.strictObject({ address: z.string(), port: z.number().int(), listen: z.number().int() }),
      ),
    }),
    /** The bound on this run's egress evidence (absent in logs written before it). */
    evidenceBound: EgressEvidenceBound.optional(),
  }),
  egress_closed: z.strictObject({ network: z.string(), guardId: z.string() }),
  /**
   * Attempts past the bound (the rate, or the run's cap of `egress` events), counted, not
   * written one by one: how many between `from` and `to`, per protocol, decision and reason.
   */
  egress_summarised: z.strictObject({
    bound: EgressEvidenceBound,
    capReached: z.boolean(),
    from: IsoTime,
    to: IsoTime,
    attempts: z.number().int().positive(),
    outcomes: z.array(
      z.strictObject({
        protocol: z.enum(['dns', 'http', 'tls', 'tcp']),
        allowed: z.boolean(),
        reason: EgressReason,
        count: z.number().int().positive(),
        bytesOut: Count,
        bytesIn: Count,
      }),
    ),
    final: z.boolean(),
  }),
} as const;
