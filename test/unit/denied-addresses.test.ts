// A name deny holds for the name's addresses too (AH-CONT-4): a connection that dials a
// denied name's address without the name, or with another name the gateway never resolved
// to it, is refused with the deny entry as its rule. Names that share the address and that
// the gateway resolved to it, and addresses listed by themselves, still pass.
import { describe, expect, it } from 'vitest';
import { DeniedNameAddresses } from '../../src/network/denied-addresses.js';
import { parseDestinations } from '../../src/network/destination.js';
import { EgressPolicy, type EgressMode } from '../../src/network/egress-policy.js';
import type { GatewayContext } from '../../src/network/gateway-context.js';
import { decide, type Destination } from '../../src/network/gateway-decide.js';
import { RunResolutions } from '../../src/network/run-resolutions.js';

const DENIED = '192.0.2.10';
const ELSEWHERE = '192.0.2.20';

function context(
  mode: EgressMode,
  allow: string[],
  deny: string[],
  answers: Record<string, string[]>,
): { ctx: GatewayContext; asked: string[] } {
  const asked: string[] = [];
  const resolve = (name: string): Promise<string[]> => {
    asked.push(name);
    const found = answers[name];
    return found === undefined ? Promise.reject(new Error('NXDOMAIN')) : Promise.resolve(found);
  };
  const ctx: GatewayContext = {
    policy: new EgressPolicy({
      mode,
      allow: parseDestinations('allow', allow),
      deny: parseDestinations('deny', deny),
      hostAddresses: [],
    }),
    resolve,
    resolutions: new RunResolutions(),
    deniedNames: new DeniedNameAddresses(resolve),
    onEvent: () => undefined,
  };
  return { ctx, asked };
}

const http = (name: string | undefined, address: string | undefined, port = 8080): Destination => ({
  protocol: 'http',
  via: 'transparent',
  name,
  address,
  port,
});

describe('a name deny under open', () => {
  const answers = {
    'blocked.test': [DENIED],
    'shared.test': [DENIED],
    'other.test': [ELSEWHERE],
  };

  it("refuses the denied name's address dialled without a name", async () => {
    const { ctx } = context('open', [], ['blocked.test'], answers);
    expect(await decide(http(undefined, DENIED), ctx)).toEqual({
      decision: { allowed: false, reason: 'denylisted', rule: 'blocked.test' },
      address: DENIED,
    });
    expect((await decide(http(undefined, ELSEWHERE), ctx)).decision).toMatchObject({
      allowed: true,
      reason: 'open',
    });
  });

  it('refuses it paired with a name the gateway never resolved to it', async () => {
    const { ctx } = context('open', [], ['blocked.test'], answers);
    expect((await decide(http('made-up.test', DENIED), ctx)).decision).toEqual({
      allowed: false,
      reason: 'denylisted',
      rule: 'blocked.test',
    });
    // other.test is a real name, but not of this address.
    ctx.resolutions.record('other.test', [ELSEWHERE]);
    expect((await decide(http('other.test', DENIED), ctx)).decision.allowed).toBe(false);
  });

  it('lets a name the gateway resolved to the shared address through', async () => {
    const { ctx } = context('open', [], ['blocked.test'], answers);
    ctx.resolutions.record('shared.test', [DENIED]);
    expect((await decide(http('shared.test', DENIED), ctx)).decision).toMatchObject({
      allowed: true,
    });
    // Resolved by the gateway's own lookup, when the client gave a name and no address.
    const { ctx: fresh } = context('open', [], ['blocked.test'], answers);
    expect(await decide(http('shared.test', undefined), fresh)).toMatchObject({
      decision: { allowed: true },
      address: DENIED,
    });
  });

  it('lets an address the profile lists by itself through', async () => {
    const { ctx } = context('open', [`${DENIED}:8080`], ['blocked.test'], answers);
    expect((await decide(http(undefined, DENIED), ctx)).decision).toMatchObject({
      allowed: true,
      rule: `${DENIED}:8080`,
    });
    expect((await decide(http(undefined, DENIED, 9090), ctx)).decision.allowed).toBe(false);
  });

  it('applies a deny with a port only on that port', async () => {
    const { ctx } = context('open', [], ['blocked.test:443'], answers);
    expect((await decide(http(undefined, DENIED, 8080), ctx)).decision.allowed).toBe(true);
    expect((await decide(http(undefined, DENIED, 443), ctx)).decision).toMatchObject({
      allowed: false,
      rule: 'blocked.test:443',
    });
  });

  it('an unresolvable denied name denies no address, and is asked once per TTL', async () => {
    const { ctx, asked } = context('open', [], ['gone.test'], answers);
    for (let i = 0; i < 3; i += 1)
      expect((await decide(http(undefined, DENIED), ctx)).decision.allowed).toBe(true);
    expect(asked).toEqual(['gone.test']);
  });
});

describe('DeniedNameAddresses', () => {
  it('asks again once the answer is older than its TTL (addresses move)', async () => {
    let now = 0;
    let answer = [DENIED];
    const asked: string[] = [];
    const denied = new DeniedNameAddresses(
      (name) => {
        asked.push(name);
        return Promise.resolve(answer);
      },
      { ttlMs: 1000, now: () => now },
    );
    const policy = new EgressPolicy({
      mode: 'open',
      allow: [],
      deny: parseDestinations('deny', ['blocked.test', '*.wild.test']),
      hostAddresses: [],
    });
    expect(await denied.denying(policy, DENIED, 80)).toBe('blocked.test');
    answer = [ELSEWHERE];
    now = 999;
    expect(await denied.denying(policy, ELSEWHERE, 80)).toBeUndefined();
    now = 1000;
    expect(await denied.denying(policy, ELSEWHERE, 80)).toBe('blocked.test');
    expect(await denied.denying(policy, `::ffff:${ELSEWHERE}`, 80)).toBe('blocked.test');
    // A `*.domain` deny is never resolved: it holds for names only.
    expect(asked).toEqual(['blocked.test', 'blocked.test']);
  });
});

describe('a name deny under allowlist', () => {
  it('an address entry (a cidr holding the address) is the operator listing it: it passes', async () => {
    const { ctx } = context('allowlist', ['192.0.2.0/24'], ['blocked.test'], {
      'blocked.test': [DENIED],
    });
    expect((await decide(http(undefined, DENIED), ctx)).decision.allowed).toBe(true);
  });
});
