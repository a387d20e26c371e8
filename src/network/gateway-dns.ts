// The filtering resolver: every DNS query from the sandbox lands here (the guard
// redirects UDP port 53, and everything sent to the engine's embedded resolver, to it), and
// every query gets one `egress` event with its decision: malformed ones, types other than
// A/AAAA (answered empty, never forwarded) and names past their bounds included.
import {
  buildResponse,
  DNS_TYPE_A,
  DNS_TYPE_AAAA,
  parseQuery,
  RCODE_NOERROR,
  RCODE_NXDOMAIN,
  RCODE_SERVFAIL,
  typeName,
} from './dns-wire.js';
import { egressEvent } from './egress-event.js';
import { lookUp, type GatewayContext } from './gateway-context.js';

export async function answerDns(msg: Buffer, ctx: GatewayContext): Promise<Buffer | undefined> {
  const started = Date.now();
  const q = parseQuery(msg);
  if (q === undefined) {
    // Nothing to answer (no single question to echo), but the attempt is on record.
    ctx.onEvent(
      egressEvent(
        'dns',
        'resolver',
        { port: 53 },
        { allowed: false, reason: 'bad-request' },
        started,
      ),
    );
    return undefined;
  }
  const where = { name: q.name, port: 53, queryType: typeName(q.type) };
  const decision = ctx.policy.decideName(q.name);
  if (!decision.allowed) {
    ctx.onEvent(egressEvent('dns', 'resolver', where, decision, started));
    return buildResponse(q, RCODE_NXDOMAIN);
  }
  if (q.type !== DNS_TYPE_A && q.type !== DNS_TYPE_AAAA) {
    // TXT, ANY, HTTPS...: answering them would carry data a record of A/AAAA cannot.
    ctx.onEvent(
      egressEvent(
        'dns',
        'resolver',
        where,
        { allowed: false, reason: 'query-type-refused', rule: decision.rule },
        started,
      ),
    );
    return buildResponse(q, RCODE_NOERROR);
  }
  const found = await lookUp(q.name, decision, ctx);
  if ('refusal' in found) {
    ctx.onEvent(
      egressEvent(
        'dns',
        'resolver',
        where,
        { allowed: false, reason: found.refusal, rule: decision.rule },
        started,
      ),
    );
    return buildResponse(q, found.refusal === 'resolve-failed' ? RCODE_SERVFAIL : RCODE_NXDOMAIN);
  }
  ctx.onEvent(
    egressEvent(
      'dns',
      'resolver',
      { ...where, address: found.addresses.join(',') },
      decision,
      started,
    ),
  );
  return buildResponse(
    q,
    found.addresses.length === 0 ? RCODE_NXDOMAIN : RCODE_NOERROR,
    found.addresses,
  );
}
