// The command's own environment from the command line: `--env K=V`, `--env K` (the value
// cfh itself was started with) and `--env-file FILE` (docker's env-file syntax). Resolved
// once at planning, before anything exists (AH-INV-4). The values reach only the sandbox's
// environment; what the evidence keeps of them is their names, where each came from and a
// keyed digest (engine/run/run-plan.ts), never a value (AH-INV-2: values may be secrets).
import { ConfigError } from '../errors.js';
import { readInputFileSync } from './input-file.js';

/** The most one --env-file may hold (docs/operators.md, "Input files"). */
export const ENV_FILE_MAX_BYTES = 256 * 1024;
/**
 * The most one value may hold. Under runc the start gate hands the workload its env as
 * arguments (substrate/mount-gate.ts), and the kernel refuses one longer than 128 KiB.
 */
export const ENV_VALUE_MAX_BYTES = 64 * 1024;

/**
 * A portable name (POSIX): the profile's `env` takes the same. A name that starts with `-`
 * would be read by the gate's `env -i` as an option, one with `=` or NUL cannot be a name.
 */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export type CommandEnvSource =
  | { readonly from: 'flag' }
  | { readonly from: 'host' }
  | { readonly from: 'file'; readonly file: string; readonly line: number };

export interface CommandEnv {
  /** What the sandbox's environment gets, over the profile's (later wins: files, then flags). */
  readonly values: Readonly<Record<string, string>>;
  /** Where the value that won came from, per name. */
  readonly sources: Readonly<Record<string, CommandEnvSource>>;
}

export interface CommandEnvRequest {
  readonly env?: readonly string[] | undefined;
  readonly envFiles?: readonly string[] | undefined;
}

function invalid(field: string, what: string, value?: string): ConfigError {
  return new ConfigError('env_invalid', `${field}: ${what}`, {
    field,
    ...(value === undefined ? {} : { value }),
  });
}

/** One `K=V` or `K`; `where` names it in errors, never its value. */
function entry(
  text: string,
  field: string,
  hostEnv: NodeJS.ProcessEnv,
): { name: string; value: string; fromHost: boolean } {
  const eq = text.indexOf('=');
  const name = eq < 0 ? text : text.slice(0, eq);
  if (!NAME.test(name)) {
    // The name only: what follows `=` may be the secret.
    throw invalid(
      field,
      `'${name}' is not a valid environment name (letters, digits and _, not starting with a digit)`,
      name,
    );
  }
  let value: string;
  if (eq >= 0) value = text.slice(eq + 1);
  else {
    const host = hostEnv[name];
    if (host === undefined)
      throw new ConfigError(
        'env_unset',
        `${field}: ${name} is not set in cfh's environment; give ${name}=VALUE`,
        { field, value: name },
      );
    value = host;
  }
  if (value.includes('\0')) throw invalid(field, `the value of ${name} contains a NUL byte`, name);
  if (Buffer.byteLength(value) > ENV_VALUE_MAX_BYTES)
    throw invalid(field, `the value of ${name} is longer than ${ENV_VALUE_MAX_BYTES} bytes`, name);
  return { name, value, fromHost: eq < 0 };
}

/**
 * docker's env-file syntax: one `K=V` or `K` a line, leading whitespace ignored, `#` lines
 * and blank lines skipped, the value taken as it is (no quotes, no escapes, no expansion),
 * a trailing CR dropped with the line's LF.
 */
export function parseEnvFile(
  text: string,
  file: string,
  hostEnv: NodeJS.ProcessEnv,
): { name: string; value: string; line: number }[] {
  const out: { name: string; value: string; line: number }[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '').replace(/^[ \t\v\f]+/, '');
    if (line === '' || line.startsWith('#')) return;
    const e = entry(line, `--env-file ${file}:${i + 1}`, hostEnv);
    out.push({ name: e.name, value: e.value, line: i + 1 });
  });
  return out;
}

export function resolveCommandEnv(
  request: CommandEnvRequest,
  hostEnv: NodeJS.ProcessEnv,
  cwd: string,
): CommandEnv {
  const values: Record<string, string> = {};
  const sources: Record<string, CommandEnvSource> = {};
  for (const file of request.envFiles ?? []) {
    // A regular file, bounded, read without blocking (a FIFO or /dev/zero cannot hang cfh).
    const text = readInputFileSync({
      label: '--env-file',
      file,
      maxBytes: ENV_FILE_MAX_BYTES,
      cwd,
    });
    for (const e of parseEnvFile(text, file, hostEnv)) {
      values[e.name] = e.value;
      sources[e.name] = { from: 'file', file, line: e.line };
    }
  }
  for (const text of request.env ?? []) {
    const e = entry(text, '--env', hostEnv);
    values[e.name] = e.value;
    sources[e.name] = { from: e.fromHost ? 'host' : 'flag' };
  }
  return { values, sources };
}
