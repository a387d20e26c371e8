// The operator's CA bundle (`--ca-bundle FILE`, profile `network.caBundle`): the trust store a
// sandbox gets so that a proxy that re-signs TLS is trusted. The file is resolved like a
// mount source (one resolution, no planted link, no pseudo file system), read once from the
// object resolved, and only the certificates in it cross into the sandbox: each PEM block
// must be a CERTIFICATE that parses as X.509, and the bundle mounted is their canonical
// re-encoding, written by cfh into the run directory. So a path under /etc is allowed here
// (the proxy CA lives there) while nothing but public certificates can leave by
// it: no comment line, no private key, no other file a wrong or planted name points at.
import { X509Certificate, createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { ConfigError, ContainmentError, errorMessage } from '../errors.js';
import { firstPlantableLink, plantedLinkText } from '../path-trust.js';
import { ResolutionError, resolveObject } from './source-resolution.js';

/** Where the bundle is mounted: the Debian/Ubuntu (and Alpine) system trust store. */
export const CA_BUNDLE_TARGET = '/etc/ssl/certs/ca-certificates.crt';
/** Its name in the run directory (the mount's source, and evidence). */
export const CA_BUNDLE_FILE = 'ca-bundle.pem';
/**
 * Pointed at the bundle as well: each names the trust store of a client that does not read
 * the system one (requests and pip use certifi's; Node its built-in roots, to which
 * NODE_EXTRA_CA_CERTS adds) or reads it from elsewhere on another distribution.
 */
export const CA_BUNDLE_ENV: readonly string[] = [
  'SSL_CERT_FILE',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'NODE_EXTRA_CA_CERTS',
];
/** A system bundle is about 220 KiB (about 150 roots); a proxy's is one certificate. */
export const CA_BUNDLE_MAX_BYTES = 4 * 1024 * 1024;
const MAX_CERTIFICATES = 5000;

export interface CaBundle {
  /** The path as the operator spelled it, and what it resolved to. */
  readonly source: string;
  readonly real: string;
  /** The canonical bundle: the certificates alone, re-encoded; what the sandbox reads. */
  readonly pem: string;
  readonly sha256: string;
  /** sha256 of the file as read, before only its certificates were kept. */
  readonly sourceSha256: string;
  readonly certificates: number;
  /** sha256 fingerprints of the certificates, in file order. */
  readonly fingerprints: readonly string[];
}

function invalid(origin: string, source: string, why: string): ConfigError {
  return new ConfigError(
    'ca_bundle_invalid',
    `${origin}: '${source}' ${why}; give a PEM file of CA certificates (-----BEGIN CERTIFICATE-----)`,
    { field: origin, value: source },
  );
}

export function loadCaBundle(source: string, origin: string): CaBundle {
  let object;
  try {
    object = resolveObject(source);
  } catch (error) {
    if (error instanceof ResolutionError && error.reason === 'changed')
      throw new ContainmentError(
        'mount_source_changed',
        `${origin}: '${source}' ${error.message}`,
        {
          source,
        },
      );
    throw new ConfigError(
      'ca_bundle_missing',
      `${origin}: '${source}' does not exist; name the PEM file of the CA certificates to trust`,
      { field: origin, value: source },
    );
  }
  if (object.kind !== 'file') throw invalid(origin, source, 'is not a regular file');
  if (object.pseudoFileSystem !== undefined)
    throw invalid(origin, source, `lies on the kernel's ${object.pseudoFileSystem} file system`);
  const planted = firstPlantableLink(object.links, object.entries);
  if (planted !== undefined) {
    const { link, maker } = planted;
    throw new ConfigError(
      'mount_source_link',
      `${origin}: '${source}' goes through ${plantedLinkText(link, maker, object.targets.get(link))}; cfh follows no such link; name the file itself`,
      { field: origin, value: source, link },
    );
  }
  const bytes = readResolved(object.real, object.identity, origin, source);
  const text = bytes.toString('latin1');
  const certificates = parseCertificates(text, origin, source);
  const pem = certificates.map((c) => c.toString()).join('');
  return {
    source,
    real: object.real,
    pem,
    sha256: createHash('sha256').update(pem).digest('hex'),
    sourceSha256: createHash('sha256').update(bytes).digest('hex'),
    certificates: certificates.length,
    fingerprints: certificates.map((c) => c.fingerprint256.replaceAll(':', '').toLowerCase()),
  };
}

/** The file's bytes, from the object resolved (not whatever the name holds by now), bounded. */
function readResolved(
  real: string,
  identity: { readonly dev: string; readonly ino: string },
  origin: string,
  source: string,
): Buffer {
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw invalid(origin, source, `cannot be read (${errorMessage(error)})`);
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (String(st.dev) !== identity.dev || String(st.ino) !== identity.ino || !st.isFile())
      throw new ContainmentError(
        'mount_source_changed',
        `${origin}: '${source}' changed while cfh read it; refusing it`,
        { source },
      );
    if (st.size > BigInt(CA_BUNDLE_MAX_BYTES))
      throw invalid(origin, source, `is larger than ${CA_BUNDLE_MAX_BYTES} bytes`);
    // One byte past the bound tells a file that grew since fstat from one that did not.
    const buffer = Buffer.alloc(CA_BUNDLE_MAX_BYTES + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > CA_BUNDLE_MAX_BYTES)
        throw invalid(origin, source, `is larger than ${CA_BUNDLE_MAX_BYTES} bytes`);
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

const BLOCK =
  /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([A-Za-z0-9+/=\r\n\t ]*?)-----END ([A-Z0-9 ]+)-----/g;

/**
 * Every PEM block of the text, each a CERTIFICATE that parses as X.509; anything else in a
 * block (a key, a request, a TRUSTED CERTIFICATE) is refused rather than dropped, so an
 * operator who named the wrong file learns it. Text outside the blocks (a bundle's comment
 * headers) is read past and never copied. A BEGIN line that starts no well-formed block is
 * refused too: it could be a certificate the sandbox was meant to trust.
 */
export function parseCertificates(text: string, origin: string, source: string): X509Certificate[] {
  const certificates: X509Certificate[] = [];
  let covered = 0;
  for (const match of text.matchAll(BLOCK)) {
    const [, begin = '', body = '', end = ''] = match;
    if (begin !== end) throw invalid(origin, source, `has a PEM block BEGIN ${begin} / END ${end}`);
    if (begin !== 'CERTIFICATE')
      throw invalid(origin, source, `holds a PEM block of ${begin}, not only certificates`);
    if (text.slice(covered, match.index).includes('-----BEGIN '))
      throw invalid(origin, source, 'has a PEM block that does not end');
    covered = match.index + match[0].length;
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(Buffer.from(body.replace(/\s+/g, ''), 'base64'));
    } catch {
      throw invalid(
        origin,
        source,
        `has a CERTIFICATE block (${certificates.length + 1}) that is not X.509`,
      );
    }
    certificates.push(certificate);
    if (certificates.length > MAX_CERTIFICATES)
      throw invalid(origin, source, `holds more than ${MAX_CERTIFICATES} certificates`);
  }
  if (text.slice(covered).includes('-----BEGIN '))
    throw invalid(origin, source, 'has a PEM block that does not end');
  if (certificates.length === 0) throw invalid(origin, source, 'holds no PEM certificate');
  return certificates;
}

/** What the snapshot records of the bundle (AH-INV-2: by digest, never its bytes). */
export function caBundleRecord(bundle: CaBundle): Record<string, unknown> {
  return {
    source: bundle.source,
    real: bundle.real,
    file: CA_BUNDLE_FILE,
    target: CA_BUNDLE_TARGET,
    env: [...CA_BUNDLE_ENV],
    sha256: bundle.sha256,
    sourceSha256: bundle.sourceSha256,
    certificates: bundle.certificates,
    fingerprints: [...bundle.fingerprints],
  };
}
