// The workload cannot loosen its own network posture: it holds no NET_ADMIN, so
// flushing the guard's rules or changing the policy fails, and the destination it tried to
// free stays unreachable. Local listener only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { cfh, onlyRunDir, readEvents, removeDir, tempDir } from './helpers.js';
import { dockerBridgeAddress } from './local-servers.js';

let scratch: string;
let server: Server;
let port = 0;
let connections = 0;
let hostIp = '';

beforeAll(async () => {
  scratch = await tempDir('tamper');
  await mkdir(path.join(scratch, 'ws'));
  hostIp = dockerBridgeAddress();
  server = createServer((s) => {
    connections += 1;
    s.end('HTTP/1.0 200 OK\r\n\r\nreached');
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const address = server.address();
  if (address !== null && typeof address === 'object') port = address.port;
});
afterAll(async () => {
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
  await removeDir(scratch);
});

describe('network tampering from inside the sandbox', () => {
  it('cannot flush or replace the netfilter rules, and stays contained', async () => {
    const root = path.join(scratch, 'art');
    const script = [
      'iptables -F OUTPUT >/dev/null 2>&1; echo "flush=$?"',
      'iptables -t nat -F CFH_EGRESS >/dev/null 2>&1; echo "natflush=$?"',
      'iptables -P OUTPUT ACCEPT >/dev/null 2>&1; echo "policy=$?"',
      'ip link set lo down >/dev/null 2>&1; echo "link=$?"',
      `curl -s -m 5 -o /dev/null http://${hostIp}:${port}/; echo "curl=$?"`,
    ].join('; ');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      path.join(scratch, 'ws'),
      '--artifact-root',
      root,
      '--network',
      'allowlist',
      '--allow',
      'api.cfh.test',
      '--',
      'sh',
      '-c',
      script,
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    for (const step of ['flush', 'natflush', 'policy', 'link', 'curl']) {
      expect(r.stdout, step).toMatch(new RegExp(`^${step}=[1-9]\\d*$`, 'm'));
    }
    expect(connections).toBe(0);
    const denied = (await readEvents(await onlyRunDir(root))).filter(
      (e) => e.type === 'egress' && e.data.allowed === false,
    );
    expect(denied).toContainEqual(
      expect.objectContaining({
        data: expect.objectContaining({ address: hostIp, port, reason: 'host-address' }),
      }),
    );
  });
});
