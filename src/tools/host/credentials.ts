// A host tool's environment, resolved once before the run (AH-INV-4, AH-TOOL-7): literals
// as written, credentials from their reference (`fromEnv` in cfh's own environment,
// `fromFile` on the host). The value goes only into that tool's process environment and the
// run's scrubber; the evidence keeps the reference and a keyed digest (HMAC-SHA256 with the
// run id as key: it tells which credential was used without being a dictionary key for it).
import { createHmac } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ConfigError, errorMessage } from '../../errors.js';
import type { HostEnvValue, HostToolEntry } from '../../config/host-tools-schema.js';
import { MIN_CREDENTIAL_CHARS, type HeldCredential } from './scrub.js';

const MAX_CREDENTIAL_FILE_BYTES = 64 * 1024;

export type EnvRecord =
  | { readonly value: 'literal'; readonly digest: string }
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

export function credentialDigest(runId: string, value: string): string {
  return `hmac-sha256:${createHmac('sha256', runId).update(value, 'utf8').digest('hex')}`;
}

function fail(tool: string, name: string, what: string): never {
  throw new ConfigError('credential_missing', `hostTools ${tool}: env ${name}: ${what}`, {
    field: `hostTools.${tool}.env.${name}`,
  });
}

function readCredentialFile(tool: string, name: string, file: string): string {
  try {
    const size = statSync(file).size;
    if (size > MAX_CREDENTIAL_FILE_BYTES)
      fail(tool, name, `fromFile ${file} is larger than ${MAX_CREDENTIAL_FILE_BYTES} bytes`);
    // One trailing newline is the file's, not the credential's.
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    // errorMessage of a read failure names the path and the errno, never the content.
    return fail(tool, name, `fromFile cannot be read: ${errorMessage(error)}`);
  }
}

function resolveOne(
  tool: string,
  name: string,
  spec: HostEnvValue,
  hostEnv: NodeJS.ProcessEnv,
  runId: string,
): { value: string; credential: boolean; record: EnvRecord } {
  if ('value' in spec) {
    const digest = credentialDigest(runId, spec.value);
    return { value: spec.value, credential: false, record: { value: 'literal', digest } };
  }
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
  const digest = credentialDigest(runId, value);
  const record: EnvRecord =
    'fromEnv' in spec ? { fromEnv: spec.fromEnv, digest } : { fromFile: spec.fromFile, digest };
  return { value, credential: true, record };
}

export function resolveHostEnv(
  entry: HostToolEntry,
  runId: string,
  hostEnv: NodeJS.ProcessEnv,
): ResolvedEnv {
  const env: Record<string, string> = {};
  const credentials: HeldCredential[] = [];
  const record: Record<string, EnvRecord> = {};
  for (const [name, spec] of Object.entries(entry.env)) {
    const resolved = resolveOne(entry.name, name, spec, hostEnv, runId);
    env[name] = resolved.value;
    if (resolved.credential) credentials.push({ name, value: resolved.value });
    record[name] = resolved.record;
  }
  return { env, credentials, record };
}
