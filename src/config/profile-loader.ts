// Loads a profile by built-in name or file path, follows `extends`, and validates the
// merged result. Pure apart from reading the files; no engine, no side effects (AH-INV-4).
import { readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError, errorMessage } from '../errors.js';
import { BUILTIN_PROFILES_DIR } from '../paths.js';
import { Profile, ProfileFile } from './profile-schema.js';
import { describeIssues } from './zod-issues.js';
import { INPUT_FILE_LIMITS, readInputFileSync } from './input-file.js';

const BUILTIN_NAME = /^[a-z0-9][a-z0-9._-]*$/;
const MAX_EXTENDS_DEPTH = 8;

export interface LoadedProfile {
  readonly profile: Profile;
  /** Where each layer came from, base first: `builtin:default`, a file path. */
  readonly sources: readonly string[];
}

export function isBuiltinReference(ref: string): boolean {
  return BUILTIN_NAME.test(ref) && !ref.endsWith('.yaml') && !ref.endsWith('.yml');
}

export function listBuiltinProfiles(dir = BUILTIN_PROFILES_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}

export function loadProfile(ref: string, dir = BUILTIN_PROFILES_DIR): LoadedProfile {
  const layers: { file: ProfileFile; source: string }[] = [];
  let next: { ref: string; relativeTo: string } | undefined = { ref, relativeTo: process.cwd() };
  while (next) {
    if (layers.length >= MAX_EXTENDS_DEPTH) {
      throw new ConfigError(
        'profile_extends_too_deep',
        `profile ${ref}: 'extends' chain is deeper than ${MAX_EXTENDS_DEPTH} (cycle?)`,
        { profile: ref },
      );
    }
    const { source, file, baseDir } = readLayer(next.ref, next.relativeTo, dir);
    if (layers.some((l) => l.source === source)) {
      throw new ConfigError(
        'profile_extends_cycle',
        `profile ${ref}: 'extends' cycle through ${source}`,
        { profile: ref },
      );
    }
    layers.unshift({ file, source });
    next = file.extends === undefined ? undefined : { ref: file.extends, relativeTo: baseDir };
  }
  const merged = layers.reduce<Record<string, unknown>>(
    (acc, layer) => mergeLayer(acc, stripExtends(layer.file)),
    {},
  );
  const result = Profile.safeParse(merged);
  if (!result.success) {
    throw new ConfigError(
      'invalid_profile',
      `profile ${ref}: ${describeIssues(result.error, merged)}`,
      { profile: ref },
    );
  }
  return { profile: result.data, sources: layers.map((l) => l.source) };
}

function readLayer(
  ref: string,
  relativeTo: string,
  dir: string,
): { source: string; file: ProfileFile; baseDir: string } {
  const builtin = isBuiltinReference(ref);
  const filePath = builtin ? path.join(dir, `${ref}.yaml`) : path.resolve(relativeTo, ref);
  if (!existsSync(filePath)) {
    const known = builtin ? ` (built-in profiles: ${listBuiltinProfiles(dir).join(', ')})` : '';
    throw new ConfigError('unknown_profile', `profile: '${ref}' not found${known}`, {
      profile: ref,
    });
  }
  // Every layer of the chain is bounded alike: a regular file of at most
  // INPUT_FILE_LIMITS.profileBytes (a FIFO or a 30 MB file is refused before it is parsed).
  const text = readInputFileSync({
    label: `profile ${ref}`,
    file: filePath,
    maxBytes: INPUT_FILE_LIMITS.profileBytes,
  });
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError(
      'invalid_profile',
      `profile ${ref}: cannot parse ${filePath}: ${errorMessage(error)}`,
      { profile: ref },
    );
  }
  const parsed = ProfileFile.safeParse(raw ?? {});
  if (!parsed.success) {
    throw new ConfigError(
      'invalid_profile',
      `profile ${ref}: ${describeIssues(parsed.error, raw)}`,
      { profile: ref },
    );
  }
  const baseDir = path.dirname(filePath);
  // Mount sources in a file are relative to that file, not to wherever cfh was started;
  // so is a host tool's working directory, which is the file's directory when not given.
  const file: ProfileFile = {
    ...parsed.data,
    ...(parsed.data.mounts === undefined
      ? {}
      : {
          mounts: parsed.data.mounts.map((m) => ({
            ...m,
            source: path.resolve(baseDir, m.source),
          })),
        }),
    ...(parsed.data.hostTools === undefined
      ? {}
      : {
          hostTools: parsed.data.hostTools.map((t) => ({
            ...t,
            cwd: path.resolve(baseDir, t.cwd ?? '.'),
          })),
        }),
  };
  return { source: builtin ? `builtin:${ref}` : filePath, file, baseDir };
}

function stripExtends(file: ProfileFile): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...file };
  delete rest.extends;
  return rest;
}

/** Objects merge key by key; arrays and scalars replace. */
export function mergeLayer(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    const prev = out[key];
    out[key] = isPlainObject(prev) && isPlainObject(value) ? mergeLayer(prev, value) : value;
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
