// The class: evidence a sandbox can make cfh write without a bound (AH-CONT-4, AH-ART-1).
// A DNS loop (one name again and again, then a new name each query) and a connection loop
// from the sandbox for a few seconds: events.jsonl stays under the bound (EGRESS_EVIDENCE_BOUND:
// repeats counted, a rate, a run cap), the summaries' and repeats' counts agree with what
// the sandbox attempted, and `cfh audit` accepts the run.
//
// Local only: every query and connection goes to the run's own gateway ($GW); the names
// are refused (allowlist with no entry), so nothing is forwarded to any resolver.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { EGRESS_EVIDENCE_BOUND } from '../../src/network/egress-evidence.js';
import { cfh } from './helpers.js';
import { marker, useNetHarness, type NetRun } from './network-harness.js';

const net = useNetHarness('net-flood', () => ({}));

/** For SECONDS each: the same query, a new name each query, a refused HTTP connection. */
const FLOOD_PY = String.raw`
import socket, struct, sys, time
gw, seconds = sys.argv[1], float(sys.argv[2])
def q(name, qid):
    m = struct.pack('>HHHHHH', qid & 0xffff, 0x0100, 1, 0, 0, 0)
    for part in name.split('.'):
        m += bytes([len(part)]) + part.encode()
    return m + b'\x00\x00\x01\x00\x01'
def dns(label, name_of):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    sent = got = 0; end = time.time() + seconds
    while time.time() < end:
        s.sendto(q(name_of(sent), sent), (gw, 53)); sent += 1
        try:
            s.recvfrom(512); got += 1
        except OSError:
            pass
    print('@@ %s sent=%d got=%d' % (label, sent, got), flush=True)
dns('same', lambda i: 'loop.flood.test')
dns('distinct', lambda i: 'n%d.flood.test' % i)
sent = 0; end = time.time() + seconds
while time.time() < end:
    try:
        c = socket.create_connection((gw, 80), timeout=2)
        c.sendall(b'GET / HTTP/1.1\r\nHost: refused.flood.test\r\n\r\n')
        c.recv(100)
        c.close()
    except OSError:
        pass
    sent += 1
print('@@ connect sent=%d' % sent, flush=True)
`;

describe('a DNS and connection loop from the sandbox', () => {
  let run: NetRun;
  let started = 0;
  let took = 0;

  beforeAll(async () => {
    const flood = await net.payload('flood.py', FLOOD_PY);
    started = Date.now();
    run = await net.run({
      mode: 'allowlist',
      allow: [],
      script: `python3 ${flood} $GW 3\necho "@@ done"`,
    });
    took = (Date.now() - started) / 1000;
  }, 120_000);

  it('keeps events.jsonl under the bound, with counts that add up to what was attempted', async () => {
    expect(run.result.exitCode, run.result.stderr).toBe(0);
    const sent =
      Number(marker(run, 'same').sent) +
      Number(marker(run, 'distinct').sent) +
      Number(marker(run, 'connect').sent);
    const b = EGRESS_EVIDENCE_BOUND;
    // The loop was big enough that one event per attempt would exceed the bound.
    const allowedEvents = b.burst + b.perSecond * took;
    expect(sent).toBeGreaterThan(allowedEvents);
    expect(run.egress.length).toBeLessThanOrEqual(allowedEvents);
    const summaries = run.events.filter((e) => e.type === 'egress_summarised');
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries.length).toBeLessThanOrEqual((took * 1000) / b.summaryIntervalMs + 2);
    const inEvents = run.egress.reduce(
      (n, e) => n + (typeof e.count === 'number' ? e.count : 1),
      0,
    );
    const inSummaries = summaries.reduce((n, e) => n + Number(e.data.attempts), 0);
    const recorded = inEvents + inSummaries;
    // Order of magnitude: a datagram can be lost on the way, nothing is invented.
    expect(recorded).toBeLessThanOrEqual(sent + 10);
    expect(recorded).toBeGreaterThanOrEqual(sent / 2);
    const reasons = new Set(
      summaries.flatMap((e) => (e.data.outcomes as { reason: string }[]).map((o) => o.reason)),
    );
    expect(reasons.has('dns-refused') || reasons.has('not-allowlisted')).toBe(true);
    const ready = run.events.find((e) => e.type === 'egress_ready');
    expect(ready?.data.evidenceBound).toEqual({ ...b });
    const size = (await stat(path.join(run.dir, 'events.jsonl'))).size;
    expect(size).toBeLessThan((allowedEvents + 200) * 1024);
    const audit = await cfh(['audit', run.dir]);
    expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
  });
});
