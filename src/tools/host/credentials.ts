// A host tool's environment, resolved once before the run (AH-INV-4, AH-TOOL-7): literals
// as written, credentials from their reference (`fromEnv` in cfh's own environment,
// `fromFile` on the host). The value goes only into that tool's process environment and the
// run's scrubber; the evidence keeps the reference and a keyed digest. The digest is for one
// thing: whoever holds this machine's digest key (`credential-digest.key` beside the
// operator's signing key, 0600, never in the evidence) can tell that two runs used the same
// credential, or check a suspected value. Keyed with anything the evidence holds (the run
// id, as before), it would let anyone with the evidence test guesses offline: a short token
// or a dictionary password would be recovered.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readInputFileSync } from '../../config/input-file.js';
import { DIGEST_KEY_FILE } from '../../evidence/signing.js';
import path from 'node:path';
import { readEnvironment } from '../../config/env.js';
import { ConfigError } from '../../errors.js';
import type { HostEnvValue, HostToolEntry } from '../../config/host-tools-schema.js';
import { MIN_CREDENTIAL_CHARS, type HeldCredential } from './scrub.js';

const MAX_CREDENTIAL_FILE_BYTES = 64 * 1024;

export type EnvRecord =
  | { readonly value: 'literal' }
  | { readonly fromEnv: string; readonly digest: string }
  | { readonly fromFile: string; readonly digest: string };

export interface ResolvedEnv {
  /** What the tool's process receives (with cfh's fixed base, host-process.ts). */
  readonly env: Readonly<Record<string, string>>;
  /** The credential values, for scrubbing. */
  readonly credentials: readonly HeldCredential[];
  /** For the snapshot: references and digests, never values. */
  readonly record: Readonly<Record<string, EnvRecord>>;
}

/** The machine's digest key file, in the operator's key directory (CFH_KEY_DIR). */
export { DIGEST_KEY_FILE };

export interface DigestKey {
  /** Names the key (a digest of it): digests under different keys are not comparable. */
  readonly id: string;
  readonly key: Buffer;
}

/**
 * This machine's digest key, created (32 random bytes, 0600 in a 0700 directory) on first
 * use; undefined when it can be neither read nor created: the digest is then left out.
 */
export function digestKey(hostEnv: NodeJS.ProcessEnv): DigestKey | undefined {
  const dir = readEnvironment(hostEnv).keyDir;
  const file = path.join(dir, DIGEST_KEY_FILE);
  const read = (): DigestKey => {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
    if (key.length < 32) throw new Error(`${file} holds fewer than 32 bytes`);
    return { id: createHash('sha256').update(key).digest('hex').slice(0, 16), key };
  };
  try {
    return read();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
  }
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    // Another cfh made it meanwhile: that one is the key.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** `hmac-sha256:<key id>:<hex>`, or `unavailable` when the machine has no digest key. */
export function credentialDigest(key: DigestKey | undefined, value: string): string {
  if (key === undefined) return 'unavailable';
  return `hmac-sha256:${key.id}:${createHmac('sha256', key.key).update(value, 'utf8').digest('hex')}`;
}

function fail(tool: string, name: string, what: string): never {
  throw new ConfigError('credential_missing', `hostTools ${tool}: env ${name}: ${what}`, {
    field: `hostTools.${tool}.env.${name}`,
  });
}

/**
 * A credential file through the bounded reader every input file uses (config/input-file.ts):
 * a regular file only, opened O_NONBLOCK and read to a bound, so a FIFO, a device such as
 * /dev/zero or a pseudo file system cannot hang or exhaust cfh before the run.
 */
function readCredentialFile(tool: string, name: string, file: string): string {
  const text = readInputFileSync({
    label: `hostTools ${tool}: env ${name} fromFile`,
    file,
    maxBytes: MAX_CREDENTIAL_FILE_BYTES,
  });
  // One trailing newline is the file's, not the credential's.
  return text.replace(/\r?\n$/, '');
}

function resolveOne(
  tool: string,
  name: string,
  spec: HostEnvValue,
  hostEnv: NodeJS.ProcessEnv,
  key: () => DigestKey | undefined,
): { value: string; credential: boolean; record: EnvRecord } {
  // A literal is in the profile already: nothing to recognise it by.
  if ('value' in spec)
    return { value: spec.value, credential: false, record: { value: 'literal' } };
  const value =
    'fromEnv' in spec
      ? (hostEnv[spec.fromEnv] ?? fail(tool, name, `fromEnv ${spec.fromEnv} is not set`))
      : readCredentialFile(tool, name, spec.fromFile);
  if (value === '') fail(tool, name, 'the credential is empty');
  if (value.length < MIN_CREDENTIAL_CHARS)
    fail(
      tool,
      name,
      `the credential is shorter than ${MIN_CREDENTIAL_CHARS} characters: too short to scrub reliably`,
    );
  if (value.includes('\0')) fail(tool, name, 'the credential contains a NUL byte');
  const digest = credentialDigest(key(), value);
  const record: EnvRecord =
    'fromEnv' in spec ? { fromEnv: spec.fromEnv, digest } : { fromFile: spec.fromFile, digest };
  return { value, credential: true, record };
}

/** `_runId` is not a key: the digest key is the machine's (see the header). */
export function resolveHostEnv(
  entry: HostToolEntry,
  _runId: string,
  hostEnv: NodeJS.ProcessEnv,
): ResolvedEnv {
  const entries = Object.entries(entry.env);
  // Made or read only once there is a credential to digest.
  let key: { value: DigestKey | undefined } | undefined;
  const keyOf = (): DigestKey | undefined => (key ??= { value: digestKey(hostEnv) }).value;
  const env: Record<string, string> = {};
  const credentials: HeldCredential[] = [];
  const record: Record<string, EnvRecord> = {};
  for (const [name, spec] of entries) {
    const resolved = resolveOne(entry.name, name, spec, hostEnv, keyOf);
    env[name] = resolved.value;
    if (resolved.credential) credentials.push({ name, value: resolved.value });
    record[name] = resolved.record;
  }
  return { env, credentials, record };
}
