// One `egress` event per connection attempt, refused request or DNS query
// (AH-CONT-4): where it was going, what decided, and the bytes it carried.
import type { EgressReason } from './egress-policy.js';

/** Reasons only the gateway gives: the policy never sees these attempts whole. */
export type GatewayReason =
  | 'resolve-failed'
  | 'connect-failed'
  /** Unparseable, or framed so an upstream could read it another way (HTTP, DNS). */
  | 'bad-request'
  /** A Host, target or server name that differs from the one the connection was allowed for. */
  | 'conflicting-host'
  /** A new name under a `*.domain` entry past the run's budget of distinct names. */
  | 'name-rate-exceeded'
  /** A DNS query of a type other than A/AAAA: answered empty, never forwarded. */
  | 'query-type-refused';

export interface EgressEvent {
  readonly protocol: 'dns' | 'http' | 'tls' | 'tcp';
  readonly via: 'resolver' | 'transparent' | 'proxy';
  readonly name?: string | undefined;
  readonly address?: string | undefined;
  readonly port?: number | undefined;
  /** DNS: the question's type (A, AAAA, TXT, ... or TYPE<n>). */
  readonly queryType?: string | undefined;
  readonly allowed: boolean;
  readonly reason: EgressReason | GatewayReason;
  readonly rule?: string | undefined;
  readonly bytesOut: number;
  readonly bytesIn: number;
  readonly startedAt: string;
  readonly durationMs: number;
}

export interface Where {
  readonly name?: string | undefined;
  readonly address?: string | undefined;
  readonly port?: number | undefined;
  readonly queryType?: string | undefined;
}

export interface Outcome {
  readonly allowed: boolean;
  readonly reason: EgressEvent['reason'];
  readonly rule?: string | undefined;
}

export function egressEvent(
  protocol: EgressEvent['protocol'],
  via: EgressEvent['via'],
  where: Where,
  outcome: Outcome,
  started: number,
): EgressEvent {
  return {
    protocol,
    via,
    name: where.name,
    address: where.address,
    port: where.port,
    ...(where.queryType === undefined ? {} : { queryType: where.queryType }),
    allowed: outcome.allowed,
    reason: outcome.reason,
    rule: outcome.rule,
    bytesOut: 0,
    bytesIn: 0,
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
  };
}
