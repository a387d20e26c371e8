// Real run directories of each kind for the audit and report tests, made through the built
// CLI against the real engine: a command run whose output is HTML and script, the same
// signed with an operator key, a scripted agent run with a rejected, an invalid and a
// hostile call, and an allowlist run whose DNS names carry markup. Every destination is a
// server the test starts on this machine; names are under `.test`.
import path from 'node:path';
import { expect } from 'vitest';
import { cfh, onlyRunDir, REPO_ROOT, type Scratch } from './helpers.js';
import { ASKING_PROFILE, execScript } from './approval-support.js';
import {
  dockerBridgeAddress,
  startDnsServer,
  startHttpTarget,
  type Closable,
} from './local-servers.js';

export interface AuditFixtures {
  readonly command: string;
  readonly signedCommand: string;
  readonly agent: string;
  readonly network: string;
  /** An agent run whose profile asks: one call approved by --approve, one left unanswered. */
  readonly approval: string;
  /** The operator key directory the signed run used (CFH_KEY_DIR). */
  readonly keyDir: string;
  readonly servers: Closable[];
}

/** What the hostile command prints: markup, a script, an event handler, a terminal escape. */
export const HOSTILE_OUTPUT =
  '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"><a href="javascript:window.__pwned=4">x</a>\x1b[31m';

const HOSTILE_NAME = '<img src=x onerror=window.__pwned=5>.audit.test';

export async function makeAuditFixtures(scratch: Scratch): Promise<AuditFixtures> {
  const ws = await scratch.sampleRepo();
  const servers: Closable[] = [];
  const command = async (root: string, env: Record<string, string> = {}): Promise<string> => {
    const r = await cfh(
      [
        'sandbox',
        'run',
        '--workspace',
        ws,
        '--artifact-root',
        root,
        '--',
        'sh',
        '-c',
        `printf '%s\\n' '${HOSTILE_OUTPUT}'; echo to-stderr >&2`,
      ],
      { env },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    return onlyRunDir(root);
  };
  const keyDir = scratch.path('keys');
  const keys = await cfh(['keys', 'init'], { env: { CFH_KEY_DIR: keyDir } });
  expect(keys.exitCode, keys.stderr).toBe(0);
  const agentRoot = scratch.path('art-agent');
  const a = await cfh([
    'sandbox',
    'run',
    '--profile',
    'untrusted-repo',
    '--workspace',
    ws,
    '--artifact-root',
    agentRoot,
    '--prompt',
    'Audit <b>me</b>',
    '--script',
    path.join(REPO_ROOT, 'test', 'fixtures', 'audit', 'hostile-agent.yaml'),
  ]);
  expect(a.exitCode, a.stderr).toBe(0);

  const approvalRoot = scratch.path('art-approval');
  const profile = await scratch.file('asking-profile.yaml', ASKING_PROFILE);
  const approvalScript = await scratch.file(
    'approval.yaml',
    execScript([
      ['rm', 'calc.py'],
      ['touch', 'new.txt'],
    ]),
  );
  const ap = await cfh([
    'sandbox',
    'run',
    '--profile',
    profile,
    '--workspace',
    await scratch.sampleRepo(),
    '--artifact-root',
    approvalRoot,
    '--prompt',
    'clean up',
    '--script',
    approvalScript,
    '--approve',
    'rm-needs-approval',
    '--non-interactive',
  ]);
  expect(ap.exitCode, ap.stderr).toBe(0);

  const hostIp = dockerBridgeAddress();
  const web = await startHttpTarget('web');
  const dns = await startDnsServer({ 'api.audit.test': hostIp });
  servers.push(web, dns);
  const netRoot = scratch.path('art-network');
  const script = [
    `curl -s --max-time 8 http://api.audit.test:${web.port}/ || true`,
    `curl -s --max-time 8 http://denied.audit.test:${web.port}/ || true`,
    // A query whose name carries markup: the resolver refuses it and records the name.
    `python3 -c "import socket,struct;n='${HOSTILE_NAME}';q=struct.pack('>HHHHHH',7,256,1,0,0,0)+b''.join(bytes([len(p)])+p.encode() for p in n.split('.'))+b'\\0'+struct.pack('>HH',1,1);s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.settimeout(3);s.sendto(q,(open('/etc/resolv.conf').read().split('nameserver')[1].split()[0],53));print(len(s.recv(512)))" || true`,
  ].join('\n');
  const n = await cfh(
    [
      'sandbox',
      'run',
      '--workspace',
      ws,
      '--artifact-root',
      netRoot,
      '--network',
      'allowlist',
      '--allow',
      `api.audit.test:${web.port}`,
      '--deny',
      'denied.audit.test',
      '--',
      'sh',
      '-c',
      script,
    ],
    { env: { CFH_EGRESS_RESOLVER: `${dns.address}:${dns.port}` } },
  );
  expect(n.exitCode, n.stderr).toBe(0);
  return {
    command: await command(scratch.path('art-command')),
    signedCommand: await command(scratch.path('art-signed'), { CFH_KEY_DIR: keyDir }),
    agent: await onlyRunDir(agentRoot),
    network: await onlyRunDir(netRoot),
    approval: await onlyRunDir(approvalRoot),
    keyDir,
    servers,
  };
}
