// The CA bundle (`--ca-bundle`, `network.caBundle`; AH-CONT-4). The class: a file the
// operator names may be any host file, under /etc among them, so only certificates may
// cross into the sandbox: every PEM block a CERTIFICATE that parses, nothing else of the
// file copied (comments, keys, trailing text), a wrong file refused with a clear error,
// and the bundle named through a planted link refused like a mount source.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { X509Certificate, createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CA_BUNDLE_MAX_BYTES,
  loadCaBundle,
  parseCertificates,
} from '../../src/sandbox/ca-bundle.js';
import { CfhError } from '../../src/errors.js';
import { deriveContainerSpec } from '../../src/sandbox/derive-spec.js';
import { Profile } from '../../src/config/profile-schema.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/ca/', import.meta.url));
const ONE = readFileSync(path.join(FIXTURES, 'ca-one.pem'), 'utf8');
const TWO = readFileSync(path.join(FIXTURES, 'ca-two.pem'), 'utf8');
const KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const SECRET = 'cfh-secret-canary-0451';

let dir: string;
function file(name: string, body: string | Buffer): string {
  const p = path.join(dir, name);
  writeFileSync(p, body);
  return p;
}
function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (error) {
    if (error instanceof CfhError) return `${error.code}: ${error.message}`;
    throw error;
  }
  return 'accepted';
}

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'cfh-unit-ca-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('CA bundle: only certificates cross', () => {
  it('keeps the certificates, re-encoded, and drops every other byte of the file', () => {
    const spelled = file(
      'bundle.pem',
      `# ${SECRET} a comment header\n${ONE}\nsome text ${SECRET}\n${TWO.replace(/\n/g, '\r\n')}trailing ${SECRET}\n`,
    );
    const b = loadCaBundle(spelled, '--ca-bundle');
    expect(b.certificates).toBe(2);
    expect(b.pem).not.toContain(SECRET);
    expect(b.pem).not.toContain('\r');
    expect(b.pem).toBe(new X509Certificate(ONE).toString() + new X509Certificate(TWO).toString());
    expect(b.sha256).toBe(createHash('sha256').update(b.pem).digest('hex'));
    expect(b.sourceSha256).toBe(createHash('sha256').update(readFileSync(spelled)).digest('hex'));
    expect(b.fingerprints[0]).toBe(
      new X509Certificate(ONE).fingerprint256.replaceAll(':', '').toLowerCase(),
    );
  });

  it.each([
    ['a private key alone', () => KEY, /PRIVATE KEY, not only certificates/],
    ['a certificate and its private key', () => ONE + KEY, /PRIVATE KEY/],
    [
      'an RSA key in the old spelling',
      () => KEY.replace(/PRIVATE KEY/g, 'RSA PRIVATE KEY'),
      /RSA PRIVATE KEY/,
    ],
    ['a text file', () => `${SECRET}\nroot:x:0:0::/root:/bin/sh\n`, /holds no PEM certificate/],
    ['an empty file', () => '', /holds no PEM certificate/],
    [
      'a certificate block that is not X.509',
      () => '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
      /not X\.509/,
    ],
    [
      'mismatched BEGIN and END',
      () => ONE.replace('END CERTIFICATE', 'END X509 CRL'),
      /BEGIN CERTIFICATE \/ END X509 CRL|does not end/,
    ],
    [
      'a block that never ends, after a good one',
      () => `${ONE}-----BEGIN CERTIFICATE-----\nMIIB\n`,
      /does not end/,
    ],
    [
      'a TRUSTED CERTIFICATE (OpenSSL aux format)',
      () => ONE.replace(/CERTIFICATE/g, 'TRUSTED CERTIFICATE'),
      /TRUSTED CERTIFICATE/,
    ],
    ['binary DER', () => new X509Certificate(ONE).raw, /holds no PEM certificate/],
  ])('refuses %s (ca_bundle_invalid), never quoting the file', (name, body, why) => {
    const p = file(`bad-${name.replace(/\W+/g, '-')}.pem`, body());
    const got = codeOf(() => loadCaBundle(p, 'profile network.caBundle'));
    expect(got).toMatch(/^ca_bundle_invalid: profile network\.caBundle: /);
    expect(got).toMatch(why);
    expect(got).not.toContain(SECRET);
  });

  it('refuses a missing file, a directory, a device, and a file past the bound', () => {
    expect(codeOf(() => loadCaBundle(path.join(dir, 'nope.pem'), '--ca-bundle'))).toMatch(
      /^ca_bundle_missing: --ca-bundle: '.*nope\.pem' does not exist/,
    );
    expect(codeOf(() => loadCaBundle(dir, '--ca-bundle'))).toMatch(
      /^ca_bundle_invalid: .* is not a regular file/,
    );
    expect(codeOf(() => loadCaBundle('/dev/zero', '--ca-bundle'))).toMatch(/^ca_bundle_invalid/);
    const big = file('big.pem', ONE.repeat(Math.ceil(CA_BUNDLE_MAX_BYTES / ONE.length) + 1));
    expect(codeOf(() => loadCaBundle(big, '--ca-bundle'))).toMatch(/larger than 4194304 bytes/);
  });

  it('refuses a bundle named through a link someone other than root could have made', () => {
    // The scratch directory is under the world-writable temporary directory.
    const real = file('real.pem', ONE);
    const link = path.join(dir, 'link.pem');
    symlinkSync(real, link);
    expect(codeOf(() => loadCaBundle(link, '--ca-bundle'))).toMatch(/^mount_source_link: /);
    mkdirSync(path.join(dir, 'sub'));
    symlinkSync(dir, path.join(dir, 'sub', 'up'));
    expect(codeOf(() => loadCaBundle(path.join(dir, 'sub', 'up', 'real.pem'), 'x'))).toMatch(
      /^mount_source_link: /,
    );
  });

  it('a file under /etc is not refused for where it lies, only for what it holds', () => {
    // /etc/hostname exists on every machine of this kind and holds no certificate.
    expect(codeOf(() => loadCaBundle('/etc/hostname', '--ca-bundle'))).toMatch(
      /^ca_bundle_invalid: .*holds no PEM certificate/,
    );
    expect(codeOf(() => loadCaBundle('/proc/self/environ', '--ca-bundle'))).toMatch(
      /^ca_bundle_invalid: .*(proc|not a regular file)/,
    );
  });

  it('parseCertificates needs at least one certificate', () => {
    expect(parseCertificates(ONE, 'x', 'y')).toHaveLength(1);
    expect(() => parseCertificates('', 'x', 'y')).toThrow(/no PEM certificate/);
  });
});

describe('CA bundle in the container spec', () => {
  const profile = Profile.parse({
    name: 't',
    description: '',
    image: 'cfh-sandbox',
    runtime: 'runc',
    user: 'auto',
    workspace: { mode: 'ro' },
    mounts: [],
    network: { mode: 'disabled' },
    limits: {
      memory: '1g',
      cpus: 1,
      pids: 64,
      wallTimeSeconds: 10,
      outputBytes: 1000,
      tmpfs: '1m',
    },
    env: { CURL_CA_BUNDLE: '/elsewhere.pem' },
  });
  const inputs = {
    profile,
    imageRef: 'cfh-sandbox',
    user: '1000:1000',
    mounts: [],
    command: ['true'],
    containerName: 'c',
    labels: {},
  };

  it('mounts the written bundle read-only at the trust path and names it in the env', () => {
    const spec = deriveContainerSpec({ ...inputs, caBundle: '/runs/r/ca-bundle.pem' });
    expect(spec.mounts).toEqual([
      { source: '/runs/r/ca-bundle.pem', target: '/etc/ssl/certs/ca-certificates.crt', mode: 'ro' },
    ]);
    expect(spec.env).toMatchObject({
      SSL_CERT_FILE: '/etc/ssl/certs/ca-certificates.crt',
      REQUESTS_CA_BUNDLE: '/etc/ssl/certs/ca-certificates.crt',
      NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt',
      // The profile's own value wins.
      CURL_CA_BUNDLE: '/elsewhere.pem',
    });
  });

  it('without one, neither the mount nor the env names', () => {
    const spec = deriveContainerSpec(inputs);
    expect(spec.mounts).toEqual([]);
    expect(Object.keys(spec.env)).not.toContain('SSL_CERT_FILE');
  });
});
