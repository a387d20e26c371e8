// A CA bundle for a proxy that re-signs TLS (`--ca-bundle FILE`, profile `network.caBundle`;
// AH-CONT-4). The upstream here stands in for such a proxy: an HTTPS server this test starts
// on the host, its certificate signed by a throwaway CA the test makes with openssl, reached
// by an allowlisted name through the egress gateway. Without the bundle the sandbox's
// clients refuse it; with it, curl and Python trust it. Only certificates cross: text in
// the named file never reaches the sandbox, and a wrong file is refused before any engine
// object exists.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { X509Certificate, createHash, generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cfh, objectsOwnedBy, onlyRunDir, readJson, removeDir, tempDir } from './helpers.js';
import { dockerBridgeAddress, startDnsServer, type DnsServer } from './local-servers.js';
import { useNetHarness } from './network-harness.js';

const NAME = 'tls.cfh.test';
const BODY = 'cfh-ca-bundle-ok';
const SECRET = 'cfh-secret-canary-7781';

let scratch: string;
let caPem: string;
let hostIp: string;
let dns: DnsServer;
let https: Server;
let port: number;
const served: string[] = [];

const net = useNetHarness('ca', () => ({ CFH_EGRESS_RESOLVER: `${dns.address}:${dns.port}` }));

async function openssl(...args: string[]): Promise<void> {
  await execa('openssl', args, { cwd: scratch });
}

// What the sandbox does: curl, then Python's default TLS context, then it reports what it
// sees of the trust path (read-only, the env that names it).
const SCRIPT = (url: string): string =>
  [
    `curl -sS --max-time 20 ${url} > /tmp/c 2>/tmp/e; echo "@@ curl rc=$? body=$(cat /tmp/c) err=$(head -c 120 /tmp/e | tr ' \\n' '__')"`,
    `python3 -c "import urllib.request as u; print('@@ python body=' + u.urlopen('${url}', timeout=20).read().decode())" 2>/dev/null || echo "@@ python failed"`,
    'echo x 2>/dev/null > /etc/ssl/certs/ca-certificates.crt && echo "@@ trust writable" || echo "@@ trust read-only"',
    'echo "@@ env ssl=$SSL_CERT_FILE requests=$REQUESTS_CA_BUNDLE node=$NODE_EXTRA_CA_CERTS"',
    `grep -c ${SECRET} /etc/ssl/certs/ca-certificates.crt; echo "@@ certs $(grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt)"`,
  ].join('\n');

async function run(extra: string[], runtime?: string) {
  const root = net.newRoot();
  const args = [
    ...net.baseArgs(root, {
      mode: 'allowlist',
      runtime,
      allow: [`${NAME}:${port}`, `${hostIp}:${port}`],
    }),
    ...extra,
    '--',
    'sh',
    '-c',
    SCRIPT(`https://${NAME}:${port}/`),
  ];
  const result = await cfh(args, { env: { CFH_EGRESS_RESOLVER: `${dns.address}:${dns.port}` } });
  const lines = result.stdout.split('\n').filter((l) => l.startsWith('@@ '));
  const line = (label: string): string => lines.find((l) => l.startsWith(`@@ ${label}`)) ?? '';
  const dir = await onlyRunDir(root);
  return { result, line, dir, snapshot: await readJson(path.join(dir, 'snapshot.json')) };
}

beforeAll(async () => {
  scratch = await tempDir('ca-bundle');
  hostIp = dockerBridgeAddress();
  await openssl(
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=cfh throwaway proxy CA',
  ); // prettier-ignore
  await openssl(
    'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', 'server.key', '-out', 'server.csr', '-subj', `/CN=${NAME}`,
  ); // prettier-ignore
  await writeFile(path.join(scratch, 'ext.cnf'), `subjectAltName=DNS:${NAME}\n`);
  await openssl(
    'x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'server.pem', '-days', '2', '-extfile', 'ext.cnf',
  ); // prettier-ignore
  caPem = await readFile(path.join(scratch, 'ca.pem'), 'utf8');
  https = createServer(
    {
      key: await readFile(path.join(scratch, 'server.key')),
      cert: await readFile(path.join(scratch, 'server.pem')),
    },
    (req, res) => {
      served.push(req.headers.host ?? '');
      res.end(BODY);
    },
  );
  await new Promise<void>((resolve) => https.listen(0, '0.0.0.0', resolve));
  const address = https.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  port = address.port;
  dns = await startDnsServer({ [NAME]: hostIp });
});

afterAll(async () => {
  await new Promise<void>((resolve) => {
    https.close(() => {
      resolve();
    });
  });
  await dns.close();
  await removeDir(scratch);
});

describe('a CA bundle lets the sandbox trust a TLS-re-signing upstream', () => {
  it('without a bundle, curl and Python refuse the upstream (the control)', async () => {
    const before = served.length;
    const r = await run([]);
    expect(r.result.exitCode, r.result.stderr).toBe(0);
    // curl 60: the peer's certificate cannot be verified; it reached the upstream, though.
    expect(r.line('curl')).toMatch(/^@@ curl rc=60 /);
    expect(r.line('python')).toBe('@@ python failed');
    expect(served.length).toBe(before);
    expect((r.snapshot.network as Record<string, unknown>).caBundle).toBeUndefined();
  });

  it.for(['runc', 'runsc'] as const)(
    '--ca-bundle FILE under %s: trusted, read-only, named in the env, recorded by digest',
    async (runtime) => {
      const bundle = path.join(scratch, 'flag-bundle.pem');
      await writeFile(bundle, caPem);
      const r = await run(['--ca-bundle', bundle], runtime);
      expect(r.result.exitCode, r.result.stderr).toBe(0);
      expect(r.line('curl')).toBe(`@@ curl rc=0 body=${BODY} err=`);
      expect(r.line('python')).toBe(`@@ python body=${BODY}`);
      expect(r.line('trust')).toBe('@@ trust read-only');
      const target = '/etc/ssl/certs/ca-certificates.crt';
      expect(r.line('env')).toBe(`@@ env ssl=${target} requests=${target} node=${target}`);
      expect(r.line('certs')).toBe('@@ certs 1');
      const record = (r.snapshot.network as { caBundle: Record<string, unknown> }).caBundle;
      const written = await readFile(path.join(r.dir, 'ca-bundle.pem'));
      expect(record).toMatchObject({
        source: bundle,
        target,
        certificates: 1,
        sha256: createHash('sha256').update(written).digest('hex'),
        sourceSha256: createHash('sha256').update(caPem).digest('hex'),
        fingerprints: [new X509Certificate(caPem).fingerprint256.replaceAll(':', '').toLowerCase()],
      });
      const resolved = r.snapshot.profile as { overrides: Record<string, string> };
      expect(resolved.overrides['ca-bundle']).toBe(bundle);
    },
  );

  it('profile network.caBundle, relative to the profile file: only the certificates cross', async () => {
    // The named file also holds text (a secret, say): none of it is mounted.
    const dir = path.join(scratch, 'prof');
    await mkdir(dir);
    await writeFile(path.join(dir, 'proxy.pem'), `# ${SECRET}\n${caPem}${SECRET}\n`);
    const profile = path.join(dir, 'p.yaml');
    await writeFile(
      profile,
      'extends: default\nname: ca-profile\nnetwork:\n  mode: allowlist\n  caBundle: proxy.pem\n',
    );
    const r = await run(['--profile', profile]);
    expect(r.result.exitCode, r.result.stderr).toBe(0);
    expect(r.line('curl')).toBe(`@@ curl rc=0 body=${BODY} err=`);
    // grep -c printed 0 matches of the secret in the mounted bundle.
    expect(r.result.stdout).toMatch(/^0$/m);
    expect(await readFile(path.join(r.dir, 'ca-bundle.pem'), 'utf8')).not.toContain(SECRET);
    const record = (r.snapshot.network as { caBundle: { source: string } }).caBundle;
    expect(record.source).toBe(path.join(dir, 'proxy.pem'));
  });

  it.each([
    [
      'a missing file',
      () => Promise.resolve(path.join(scratch, 'nope.pem')),
      'ca_bundle_missing',
      /does not exist/,
    ],
    [
      'a private key',
      async () => {
        const key = path.join(scratch, 'key.pem');
        const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
          type: 'pkcs8',
          format: 'pem',
        });
        await writeFile(key, `${caPem}${pem.toString()}`);
        return key;
      },
      'ca_bundle_invalid',
      /PRIVATE KEY, not only certificates/,
    ],
    [
      'a host file that is no bundle (/etc/hostname)',
      () => Promise.resolve('/etc/hostname'),
      'ca_bundle_invalid',
      /holds no PEM certificate/,
    ],
    ['a directory', () => Promise.resolve(scratch), 'ca_bundle_invalid', /not a regular file/],
  ])('refuses %s with 125 before any engine object exists', async (_name, make, _code, why) => {
    const file = await make();
    const root = net.newRoot();
    const r = await cfh([
      ...net.baseArgs(root, { mode: 'allowlist', allow: [`${NAME}:${port}`] }),
      '--ca-bundle', file, '--', 'true',
    ]); // prettier-ignore
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/^cfh: --ca-bundle: /);
    expect(r.stderr).toMatch(why);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(await objectsOwnedBy(r.pid)).toEqual([]);
  });
});
