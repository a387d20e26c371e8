// Fail closed with the overlapped set-up: the workload is created while the guard starts
// and installs its rules, and started only once they are in force (egress_ready). A
// workload whose very first instruction is a connection is still decided by the gateway:
// the listed server is reached through it and recorded allowed, the unlisted one is never
// reached and is recorded refused. Every server is one this file started on this machine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cfh, onlyRunDir, readEvents } from './helpers.js';
import {
  dockerBridgeAddress,
  startHttpTarget,
  startTcpTarget,
  type HttpTarget,
  type TcpTarget,
} from './local-servers.js';
import { egressOf, useNetHarness } from './network-harness.js';

let hostIp: string;
let web: HttpTarget;
let unlisted: TcpTarget;
const net = useNetHarness('posture-start', () => ({}));

beforeAll(async () => {
  hostIp = dockerBridgeAddress();
  web = await startHttpTarget('web');
  unlisted = await startTcpTarget();
});

afterAll(async () => {
  await web.close();
  await unlisted.close();
});

// The command itself is the first connection: no shell, no prelude before it.
const FIRST = String.raw`
import socket, sys
def attempt(port, payload):
    try:
        s = socket.create_connection((sys.argv[1], int(port)), timeout=5)
        s.sendall(payload)
        got = s.recv(200)
        return 'got:%d' % len(got)
    except OSError as e:
        return 'err:' + type(e).__name__
print('@@ unlisted', attempt(sys.argv[3], b'cfh-first-ping\n'), flush=True)
print('@@ listed', attempt(sys.argv[2], ('GET / HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' % (sys.argv[1], sys.argv[2])).encode()), flush=True)
`;

describe('the workload starts only once the guard is ready', () => {
  for (const mode of ['allowlist', 'open'] as const) {
    it(`${mode}: a connection at the first instruction is decided by the gateway`, async () => {
      const root = net.newRoot();
      const result = await cfh(
        [
          ...net.baseArgs(root, { mode, allow: [`${hostIp}:${web.port}`] }),
          '--',
          'python3',
          '-c',
          FIRST,
          hostIp,
          String(web.port),
          String(unlisted.port),
        ],
        { env: {} },
      );
      expect(result.exitCode, result.stderr).toBe(0);
      const events = await readEvents(await onlyRunDir(root));
      const types = events.map((e) => e.type);
      expect(types.indexOf('egress_ready')).toBeGreaterThan(-1);
      expect(types.indexOf('egress_ready')).toBeLessThan(types.indexOf('container_started'));
      // The unlisted host address is refused in both modes (a host address is never open).
      expect(result.stdout).toMatch(/@@ unlisted (err:|got:0)/);
      expect(unlisted.connections).toHaveLength(0);
      expect(result.stdout).toMatch(/@@ listed got:\d+/);
      expect(web.requests.some((r) => r.host === `${hostIp}:${web.port}`)).toBe(true);
      const egress = egressOf(events);
      expect(egress).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ port: unlisted.port, allowed: false }),
          expect.objectContaining({ port: web.port, allowed: true }),
        ]),
      );
    });
  }
});
