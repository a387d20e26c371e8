// Operator signatures over the terminal record (Ed25519, node:crypto). The chain and the
// digests catch an edit of any one file; only a key the writer of the evidence does not
// hold catches a log rewritten whole and re-anchored: the terminal record is signed with
// the operator's private key, which lives outside every mount and artifact root, and
// `cfh audit` verifies it with the public key the operator trusts.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import { chmod, mkdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, errorMessage } from '../errors.js';
import { writeFileAtomic } from './atomic-file.js';
import { canonicalJson } from './canonical-json.js';
import {
  RunSignature,
  SIGNATURE_SCHEMA,
  type RunSignature as RunSignatureT,
  type SignedTerminal,
} from './schema/signature.js';

export const PRIVATE_KEY_FILE = 'operator.ed25519.pem';
export const PUBLIC_KEY_FILE = 'operator.ed25519.pub.pem';
/** Beside the public key: when the key was made, so older unsigned runs can be told apart. */
export const KEY_RECORD_FILE = 'operator.ed25519.json';
export const KEY_RECORD_SCHEMA = 'cfh.key/1';

const KeyRecord = z.strictObject({
  schema: z.literal(KEY_RECORD_SCHEMA),
  algorithm: z.literal('ed25519'),
  fingerprint: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.iso.datetime(),
});

/**
 * The public key `cfh audit` trusts, with its fingerprint and, when its record is beside
 * it, its creation time: a run that started before it could not have been signed by it.
 */
export interface TrustedKey {
  readonly key: KeyObject;
  readonly fingerprint: string;
  readonly createdAt?: string | undefined;
}

/** How a fingerprint is shown to an operator (as ssh-keygen names a SHA-256 one). */
export function shownFingerprint(hex: string): string {
  return `SHA256:${hex}`;
}

/** Signs the terminal record of a run; RunDirectory.finish calls it. */
export interface TerminalSigner {
  readonly keyFingerprint: string;
  sign(signed: SignedTerminal): RunSignatureT;
}

export function fingerprintOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

export function signerFrom(privateKey: KeyObject): TerminalSigner {
  const keyFingerprint = fingerprintOf(createPublicKey(privateKey));
  return {
    keyFingerprint,
    sign: (signed) => ({
      schema: SIGNATURE_SCHEMA,
      algorithm: 'ed25519',
      keyFingerprint,
      signed,
      signature: sign(null, Buffer.from(canonicalJson(signed)), privateKey).toString('base64'),
    }),
  };
}

export type SignatureCheck =
  | { readonly ok: true; readonly signature: RunSignatureT }
  | { readonly ok: false; readonly problem: string };

/** Checks a parsed signature.json against the trusted public key. */
export function verifyRunSignature(raw: unknown, trusted: TrustedKey): SignatureCheck {
  const publicKey = trusted.key;
  const parsed = RunSignature.safeParse(raw);
  if (!parsed.success) return { ok: false, problem: 'signature.json does not match its schema' };
  const s = parsed.data;
  const want = fingerprintOf(publicKey);
  if (s.keyFingerprint !== want)
    return {
      ok: false,
      problem: `signed by key ${s.keyFingerprint.slice(0, 16)}…, not the trusted key ${want.slice(0, 16)}…`,
    };
  const good = verify(
    null,
    Buffer.from(canonicalJson(s.signed)),
    publicKey,
    Buffer.from(s.signature, 'base64'),
  );
  return good
    ? { ok: true, signature: s }
    : { ok: false, problem: 'the signature does not verify' };
}

/** The machine's credential-digest key (tools/host/credentials.ts), beside the key pair. */
export const DIGEST_KEY_FILE = 'credential-digest.key';

/** The key files in `dir`; `dir` is `CFH_KEY_DIR` or `~/.config/cfh/keys`. */
export function keyPaths(dir: string): {
  privateKey: string;
  publicKey: string;
  digestKey: string;
  record: string;
} {
  return {
    privateKey: path.join(dir, PRIVATE_KEY_FILE),
    publicKey: path.join(dir, PUBLIC_KEY_FILE),
    digestKey: path.join(dir, DIGEST_KEY_FILE),
    record: path.join(dir, KEY_RECORD_FILE),
  };
}

/** Creates the operator key pair (private 0600 in a 0700 directory); refuses to overwrite. */
export async function createOperatorKey(
  dir: string,
  now: () => Date = () => new Date(),
): Promise<{ fingerprint: string; createdAt: string }> {
  const files = keyPaths(dir);
  if (await exists(files.privateKey))
    throw new ConfigError('key_exists', `an operator key already exists: ${files.privateKey}`, {
      field: 'keyDir',
      value: dir,
    });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  await writeFileAtomic(
    files.privateKey,
    privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    0o600,
  );
  await writeFileAtomic(
    files.publicKey,
    publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    0o644,
  );
  const fingerprint = fingerprintOf(publicKey);
  // Taken after the private key is in place: no run signed by it can have started earlier.
  const createdAt = now().toISOString();
  const record: z.infer<typeof KeyRecord> = {
    schema: KEY_RECORD_SCHEMA,
    algorithm: 'ed25519',
    fingerprint,
    createdAt,
  };
  await writeFileAtomic(files.record, `${JSON.stringify(record, null, 2)}\n`, 0o644);
  return { fingerprint, createdAt };
}

/** The operator's signer when a private key is configured in `dir`, else undefined. */
export async function loadOperatorSigner(dir: string): Promise<TerminalSigner | undefined> {
  const file = keyPaths(dir).privateKey;
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError('key_unreadable', `operator key ${file}: ${errorMessage(error)}`, {
      field: 'keyDir',
      value: dir,
    });
  }
  try {
    return signerFrom(createPrivateKey(pem));
  } catch (error) {
    throw new ConfigError('key_invalid', `operator key ${file}: ${errorMessage(error)}`, {
      field: 'keyDir',
      value: dir,
    });
  }
}

/**
 * The trusted public key, when one is configured, with the creation time its record beside
 * it (KEY_RECORD_FILE in the same directory) gives, when that record names this key.
 */
export async function loadTrustedKey(file: string): Promise<TrustedKey | undefined> {
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError('key_unreadable', `public key ${file}: ${errorMessage(error)}`, {
      field: 'publicKey',
      value: file,
    });
  }
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new ConfigError('key_invalid', `public key ${file}: ${errorMessage(error)}`, {
      field: 'publicKey',
      value: file,
    });
  }
  const fingerprint = fingerprintOf(key);
  const createdAt = await keyCreatedAt(path.join(path.dirname(file), KEY_RECORD_FILE), fingerprint);
  return { key, fingerprint, ...(createdAt === undefined ? {} : { createdAt }) };
}

/**
 * The creation time a key record gives for the key with `fingerprint`. No record, or one
 * that names another key or is not a record: none, and every unsigned run fails as before.
 */
async function keyCreatedAt(file: string, fingerprint: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = KeyRecord.safeParse(raw);
  return parsed.success && parsed.data.fingerprint === fingerprint
    ? parsed.data.createdAt
    : undefined;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}
